// Registration only: lets nn.Module.to/.cpu()/.neuron() move parameters in place (ModuleConversion.h). The
// kernel is reached only when one of the two tensors is a neuron tensor; CPU-only programs never see it.
#include <torch/library.h>

#include "aten/native/ModuleConversion.h"

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(torchneuron::native::has_compatible_shallow_copy_type));
}
