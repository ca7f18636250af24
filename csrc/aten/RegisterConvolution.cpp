// Registration only: the convolution entry points ATen reserves for out-of-tree backends.
#include <torch/library.h>

#include "aten/native/Convolution.h"

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(torchneuron::native::convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(torchneuron::native::convolution_backward_overrideable));
}
