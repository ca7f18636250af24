#include "runtime/Target.h"

#include <c10/util/Exception.h>

namespace torchneuron {

namespace {
constexpr int64_t GiB = int64_t(1) << 30;

const TargetInfo kTargets[] = {
    // trn1: two NeuronCore-v2 per chip, 32 GiB HBM; no LNC fusion.
    {"trn1", "trn1.32xlarge", "NC-v2", 2, 1, 32 * GiB},
    // trn2: eight NeuronCore-v3 per chip shown as four logical cores at LNC=2, 96 GiB HBM.
    {"trn2", "trn2.48xlarge", "NC-v3", 4, 2, 96 * GiB},
    // trn3: eight NeuronCore-v4 per chip at LNC=2, 144 GiB HBM.
    {"trn3", "trn3.48xlarge", "NC-v4", 4, 2, 144 * GiB},
};
} // namespace

const TargetInfo& lookupTarget(const std::string& name) {
  for (const auto& t : kTargets) {
    if (t.name == name) {
      return t;
    }
  }
  TORCH_CHECK(
      false,
      "neuron: unknown target '", name,
      "'. Set TORCHNEURON_TARGET to one of trn1, trn2, trn3 (default trn2).");
}

} // namespace torchneuron
