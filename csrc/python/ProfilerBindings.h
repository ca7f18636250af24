#pragma once
// The neuron profiler's part of torchneuron._C (see ProfilerBindings.cpp).
#include <pybind11/pybind11.h>

namespace torchneuron::python {

void bindProfiler(pybind11::module_& m);

} // namespace torchneuron::python
