#include "device/Generator.h"

#include <c10/util/Exception.h>

#include <array>
#include <mutex>

#include "device/Streams.h"
#include "runtime/Runtime.h"

namespace torchneuron {

NeuronGenerator::NeuronGenerator(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      engine_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

void NeuronGenerator::set_current_seed(uint64_t seed) { engine_.set_current_seed(seed); }

void NeuronGenerator::set_offset(uint64_t) {
  TORCH_CHECK(false, "neuron: generator offsets (Philox) are not supported; the neuron generator is a "
                     "Mersenne-Twister stream: use manual_seed() or set_state()/get_state() instead");
}

uint64_t NeuronGenerator::get_offset() const {
  TORCH_CHECK(false, "neuron: generator offsets (Philox) are not supported; use get_state() instead");
}

uint64_t NeuronGenerator::current_seed() const { return engine_.current_seed(); }

uint64_t NeuronGenerator::seed() { return engine_.seed(); }

void NeuronGenerator::set_state(const c10::TensorImpl& new_state) {
  engine_.unsafeGetGeneratorImpl()->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> NeuronGenerator::get_state() const {
  return engine_.unsafeGetGeneratorImpl()->get_state();
}

NeuronGenerator* NeuronGenerator::clone_impl() const {
  auto* copy = new NeuronGenerator(device().index());
  auto state = get_state();
  copy->set_state(*state);
  return copy;
}

const at::Generator& defaultGenerator(c10::DeviceIndex device) {
  static std::array<at::Generator, kMaxDevices> generators;
  static std::array<std::once_flag, kMaxDevices> once;
  if (device < 0) device = currentDevice();
  checkDeviceIndex(device);
  std::call_once(once[device], [device] { generators[device] = at::make_generator<NeuronGenerator>(device); });
  return generators[device];
}

at::Generator newGenerator(c10::DeviceIndex device) {
  if (device < 0) device = currentDevice();
  checkDeviceIndex(device);
  return at::make_generator<NeuronGenerator>(device);
}

} // namespace torchneuron
