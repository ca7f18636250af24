#include "runtime/NrtLoader.h"

#include <dlfcn.h>

#include <cstdlib>

namespace torchneuron {

NrtProbe probeLibnrt() {
  NrtProbe probe;
  std::string candidates[] = {
      "libnrt.so.1",
      "libnrt.so",
      "/opt/aws/neuron/lib/libnrt.so.1",
  };
  for (const auto& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      // The documented entry points the nrt runtime needs; a library without them is not libnrt.
      bool complete = dlsym(handle, "nrt_init") && dlsym(handle, "nrt_tensor_allocate") &&
          dlsym(handle, "nrt_get_visible_vnc_count");
      if (complete) {
        probe.loaded = true;
        probe.path = path;
        return probe;
      }
      probe.error = path + " lacks nrt_init/nrt_tensor_allocate/nrt_get_visible_vnc_count";
      dlclose(handle);
      continue;
    }
    const char* err = dlerror();
    probe.error = err ? err : ("cannot open " + path);
  }
  return probe;
}

} // namespace torchneuron
