#pragma once
// What each NRT_STATUS means for a PyTorch user: a clear exception naming the call, the device, what ran,
// and what to change. NRT_RESOURCE becomes torch.OutOfMemoryError; everything else a RuntimeError.
#include <string>

#include "runtime/nrt/nrt_abi.h"

namespace torchneuron {

const char* nrtStatusName(int status);

// Throws for any status but NRT_SUCCESS. `call` is the libnrt entry point, `where` names the device and what
// ran ("neuron:0, executing aten::add.Tensor(float32[4, 3], ...)").
void checkNrt(int status, const char* call, const std::string& where);

} // namespace torchneuron
