#pragma once
// The nrt runtime's bindings: libnrt's probe, and loading / executing NEFFs on neuron tensors.
#include <pybind11/pybind11.h>

namespace torchneuron {

void bindNrt(pybind11::module& m);

} // namespace torchneuron
