#pragma once
// DLPack capsules for handing host tensors to XLA:CPU (the simulator's compiled programs).
#include <pybind11/pybind11.h>

namespace torchneuron {

void bindDlpack(pybind11::module& m);

} // namespace torchneuron
