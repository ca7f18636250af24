#include "runtime/nrt/NrtLoader.h"

#include <dlfcn.h>

#include <mutex>

namespace torchneuron {

namespace {
std::string versionOf(void* handle) {
  auto get_version = reinterpret_cast<nrt_get_version_fn>(dlsym(handle, "nrt_get_version"));
  if (get_version == nullptr) return "unknown (the library has no nrt_get_version)";
  nrt_version_t v{};
  if (get_version(&v, sizeof v) != NRT_SUCCESS) return "unknown (nrt_get_version failed)";
  return std::to_string(v.rt_major) + "." + std::to_string(v.rt_minor) + "." + std::to_string(v.rt_patch) + "." +
      std::to_string(v.rt_maintenance);
}

uint64_t majorOf(const std::string& version) {
  try {
    return std::stoull(version);
  } catch (...) {
    return 0;
  }
}

NrtLoad open() {
  NrtLoad result;
  const char* candidates[] = {"libnrt.so.1", "libnrt.so", "/opt/aws/neuron/lib/libnrt.so.1"};
  void* handle = nullptr;
  for (const char* path : candidates) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      result.path = path;
      break;
    }
    const char* err = dlerror();
    result.error = err ? err : std::string("cannot open ") + path;
  }
  if (handle == nullptr) return result;  // kMissing, with the last dlerror()

  result.version = versionOf(handle);
  result.outcome = NrtLoad::Outcome::kTooOld;
  if (majorOf(result.version) < kMinNrtMajor) {
    result.error = "libnrt " + result.version + " at " + result.path + " is older than the libnrt " +
        std::to_string(kMinNrtMajor) + ".x ABI torchneuron calls";
    return result;
  }
  auto lib = std::make_shared<NrtLibrary>();
  lib->path = result.path;
  lib->version = result.version;
  std::string missing;
#define TORCHNEURON_NRT_LOOKUP(ret, name, params)                                  \
  lib->name = reinterpret_cast<name##_fn>(dlsym(handle, #name));                  \
  if (lib->name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  TORCHNEURON_NRT_FUNCTIONS(TORCHNEURON_NRT_LOOKUP)
#undef TORCHNEURON_NRT_LOOKUP
  if (!missing.empty()) {
    // Kept open: unloading a library that may have started threads is not safe.
    result.error = "libnrt " + result.version + " at " + result.path + " lacks " + missing +
        ", which torchneuron calls (the library is too old, or is not libnrt)";
    return result;
  }
  result.outcome = NrtLoad::Outcome::kLoaded;
  result.library = std::move(lib);
  result.error.clear();
  return result;
}
} // namespace

const NrtLoad& loadLibnrt() {
  static std::once_flag once;
  static NrtLoad* loaded = nullptr;  // leaked with the library, which stays open
  std::call_once(once, [] { loaded = new NrtLoad(open()); });
  return *loaded;
}

} // namespace torchneuron
