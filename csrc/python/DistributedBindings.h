#pragma once
// Bindings of csrc/distributed (the c10d "neuron" backend's C++ half) into torchneuron._C.
#include <pybind11/pybind11.h>

namespace torchneuron::python {

void initDistributedBindings(pybind11::module_& m);

} // namespace torchneuron::python
