#include "runtime/Target.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "runtime/Runtime.h"

namespace torchneuron {

const TargetInfo& lookupTarget(const std::string& name) {
  const auto& targets = runtimeConfig().targets;
  for (const auto& t : targets) {
    if (t.name == name) return t;
  }
  std::string known;
  for (const auto& t : targets) known += (known.empty() ? "" : ", ") + t.name;
  TORCH_CHECK(!targets.empty(), "neuron: the runtime was used before torchneuron configured it (import "
              "torchneuron, or let `import torch` autoload it)");
  TORCH_CHECK(false, "neuron: unknown target '", name, "'. Set TORCHNEURON_TARGET to one of ", known, ".");
}

const TargetInfo* targetForNrtFamily(int family) {
  for (const auto& t : runtimeConfig().targets) {
    if (std::find(t.nrt_families.begin(), t.nrt_families.end(), family) != t.nrt_families.end()) return &t;
  }
  return nullptr;
}

} // namespace torchneuron
