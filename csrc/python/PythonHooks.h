#pragma once
// Adapters that let Python implement the op policy and the eager executor (see aten/native/OpRegistry.h).
#include <pybind11/pybind11.h>

namespace torchneuron::python {

void setOpPolicy(pybind11::object fn);
void setEagerExecutor(pybind11::object fn);
void setNrtExecutor(pybind11::object fn);
// Whether the innermost Python code calling into the dispatcher is PyTorch's tensor formatting
// (torch/_tensor_str.py, possibly through torch's own operator wrappers). For Fp64Emulation's notice.
bool calledFromTensorFormatting();

} // namespace torchneuron::python
