#pragma once
// Probing for libnrt (the Neuron runtime). It is opened with dlopen, never linked, so the extension builds
// and imports on machines without the Neuron SDK.
#include <string>

namespace torchneuron {

struct NrtProbe {
  bool loaded = false;
  std::string path;   // which library answered
  std::string error;  // dlerror() of the last attempt when not loaded
};

NrtProbe probeLibnrt();

} // namespace torchneuron
