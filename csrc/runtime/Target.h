#pragma once
// Per-generation facts the simulator must reproduce (reference: nki.md §3, torchneuron-anchor §1.3).
#include <cstdint>
#include <string>

namespace torchneuron {

struct TargetInfo {
  std::string name;            // "trn1" | "trn2" | "trn3": the neuronx-cc --target value
  std::string instance;        // the instance family a user would see, e.g. "trn2.48xlarge"
  std::string core_generation; // NeuronCore generation, e.g. "NC-v3"
  int logical_cores;           // torch devices per chip (logical NeuronCores at the default LNC)
  int lnc;                     // physical cores fused into one logical core
  int64_t chip_hbm_bytes;      // HBM per chip; each device gets chip_hbm_bytes / logical_cores
};

// Throws c10::Error naming the accepted values when `name` is not a known target.
const TargetInfo& lookupTarget(const std::string& name);

} // namespace torchneuron
