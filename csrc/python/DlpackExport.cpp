// XLA:CPU runs programs on its own thread pool and drops its imported input buffers there, possibly after the
// Python call returned. torch.utils.dlpack.to_dlpack exports the caller's tensor itself, and since torch 2.13 a
// C++ reference to a tensor Python has seen keeps its PyObject: the DLPack deleter then takes the GIL on XLA's
// thread, and if the interpreter is finalizing by then, CPython ends that thread inside a noexcept destructor
// and the process aborts ("terminate called without an active exception"). The capsule made here exports a
// detached alias of the tensor instead (same storage, a TensorImpl Python never saw), whose release needs no GIL.
#include "python/DlpackExport.h"

#include <ATen/ATen.h>
#include <ATen/DLConvertor.h>
#include <torch/extension.h>

namespace torchneuron {

namespace {
constexpr const char* kCapsuleName = "dltensor";  // renamed "used_dltensor" by the consumer that takes it

void releaseUnconsumed(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // consumed: the consumer owns the tensor now
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}
} // namespace

void bindDlpack(pybind11::module& m) {
  m.def("_to_dlpack_unshared", [](const at::Tensor& t) {
    // t's storage through a TensorImpl of its own, which Python never sees (detach: no autograd either)
    DLManagedTensor* managed = at::toDLPack(t.detach());
    return pybind11::reinterpret_steal<pybind11::object>(PyCapsule_New(managed, kCapsuleName, releaseUnconsumed));
  }, "A DLPack capsule of t's memory whose release never takes the GIL (for consumers that drop it on their "
     "own threads)");
}

} // namespace torchneuron
