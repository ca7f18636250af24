#pragma once
// Adapters that let Python implement the op policy and the eager executor (see aten/native/OpRegistry.h).
#include <pybind11/pybind11.h>

namespace torchneuron::python {

void setOpPolicy(pybind11::object fn);
void setEagerExecutor(pybind11::object fn);
void setNrtExecutor(pybind11::object fn);

} // namespace torchneuron::python
