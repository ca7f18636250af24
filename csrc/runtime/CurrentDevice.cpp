#include "runtime/CurrentDevice.h"

#include <c10/util/Exception.h>

#include <array>
#include <cstdint>

#include "runtime/Runtime.h"

namespace torchneuron {

namespace {
thread_local int8_t t_current_device = 0;
// Per thread and device: the current stream index (default stream when never set).
thread_local std::array<int8_t, kMaxDevices> t_current_stream{};
} // namespace

int currentDeviceIndex() { return t_current_device; }

void setCurrentDeviceIndex(int device) { t_current_device = static_cast<int8_t>(device); }

int currentStreamIndex(int device) { return t_current_stream[device]; }

void setCurrentStreamIndex(int device, int stream_index) {
  t_current_stream[device] = static_cast<int8_t>(stream_index);
}

void checkDeviceIndex(int device) {
  Runtime& rt = runtime();
  int count = rt.deviceCount();
  TORCH_CHECK(device >= 0 && device < count, "neuron: invalid device index ", device, "; there are ", count,
              " neuron device(s) (indices 0..", count - 1, "). ",
              rt.hostAddressable() ? "Set TORCHNEURON_SIM_DEVICES to simulate more."
                                   : "libnrt gives this process the NeuronCores NEURON_RT_VISIBLE_CORES / "
                                     "NEURON_RT_NUM_CORES select.");
}

} // namespace torchneuron
