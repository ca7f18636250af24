// Registration only: every other ATen op on neuron goes through the boxed host-execution fallback.
#include <torch/library.h>

#include "aten/native/HostFallback.h"

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&torchneuron::neuronFallback>());
}
