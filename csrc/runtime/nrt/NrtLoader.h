#pragma once
// Opening libnrt (the Neuron runtime) with dlopen: it is never linked, so the extension builds and imports on
// machines without the Neuron SDK. The library is opened once per process and kept open.
#include <memory>
#include <string>

#include "runtime/nrt/nrt_abi.h"

namespace torchneuron {

struct NrtLibrary {
  std::string path;     // which file answered (as passed to dlopen)
  std::string version;  // "major.minor.patch.maintenance" from nrt_get_version
#define TORCHNEURON_NRT_POINTER(ret, name, params) name##_fn name = nullptr;
  TORCHNEURON_NRT_FUNCTIONS(TORCHNEURON_NRT_POINTER)
#undef TORCHNEURON_NRT_POINTER
};

struct NrtLoad {
  enum class Outcome { kLoaded, kMissing, kTooOld };
  Outcome outcome = Outcome::kMissing;
  std::shared_ptr<const NrtLibrary> library;  // set when loaded
  std::string path;                           // the library found (missing: empty)
  std::string version;                        // what it reports ("unknown" when it cannot say)
  std::string error;                          // why it is unusable (dlerror, missing entry point, old ABI)
};

// The process's libnrt, looked up once: libnrt.so.1 on the loader path, then /opt/aws/neuron/lib.
const NrtLoad& loadLibnrt();

// The oldest ABI accepted: NRT_MAJOR_VERSION of the headers the declarations come from, with every entry
// point in nrt_abi.h present.
constexpr uint64_t kMinNrtMajor = NRT_MAJOR_VERSION;

} // namespace torchneuron
