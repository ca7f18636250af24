// Registration only. aten::convolution and aten::convolution_backward go through the generic host path, so
// they are counted, policed by the lowering coverage table and lowered whole in strict eager mode. The
// *_overrideable entry points (reached only through a direct aten::_convolution call) have their own kernels.
#include <torch/library.h>

#include "aten/native/BoxedHostKernel.h"
#include "aten/native/Convolution.h"

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution", torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
  m.impl("convolution_backward", torch::CppFunction::makeFromBoxedFunction<&torchneuron::boxedOpKernel>());
  m.impl("convolution_overrideable", TORCH_FN(torchneuron::native::convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(torchneuron::native::convolution_backward_overrideable));
}
