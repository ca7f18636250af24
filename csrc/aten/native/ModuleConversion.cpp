#include "aten/native/ModuleConversion.h"

#include <c10/core/TensorImpl.h>

#include <typeinfo>

namespace torchneuron::native {

namespace {
// A plain strided tensor of the CPU or of neuron: no wrapper subclass (functional, fake, nested, sparse).
bool denseHostOrNeuron(const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  return typeid(*impl) == typeid(c10::TensorImpl) && t.layout() == c10::kStrided &&
      (t.device().is_cpu() || t.device().is_privateuseone());
}
} // namespace

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (denseHostOrNeuron(self) && denseHostOrNeuron(from)) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

} // namespace torchneuron::native
