// Registration only: random ops whose CPU kernels would draw from the CPU's generator (csrc/aten/native/Dropout.cpp).
#include <torch/library.h>

#include "aten/native/Dropout.h"

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", &torchneuron::nativeDropout);
}
