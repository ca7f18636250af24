#pragma once
// The per-device default generator. Host kernels on the simulator draw from a Mersenne-Twister engine
// (the CPU generator's), so the generator owns one and hands it to those kernels; its seed and state are
// the neuron device's own, independent of torch.cpu's.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

namespace torchneuron {

class NeuronGenerator final : public c10::GeneratorImpl {
 public:
  explicit NeuronGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // The engine host kernels run with (shares state with this generator).
  at::Generator engine() const { return engine_; }

 private:
  NeuronGenerator* clone_impl() const override;
  at::Generator engine_;
};

const at::Generator& defaultGenerator(c10::DeviceIndex device);
at::Generator newGenerator(c10::DeviceIndex device);

} // namespace torchneuron
