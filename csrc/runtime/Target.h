#pragma once
// A Trainium generation as the runtime needs it. The facts themselves live in one table in Python
// (torchneuron/targets.py) and arrive with the runtime configuration; nothing here hard-codes a generation.
#include <cstdint>
#include <string>
#include <vector>

namespace torchneuron {

struct TargetInfo {
  std::string name;            // "trn1" | "trn2" | "trn3": the neuronx-cc --target value
  std::string instance;        // the instance a user would see, e.g. "trn2.48xlarge"
  std::string core_generation; // NeuronCore generation, e.g. "NC-v3"
  int logical_cores = 0;       // torch devices per chip (logical NeuronCores at the default LNC)
  int lnc = 1;                 // physical cores fused into one logical core
  int64_t chip_hbm_bytes = 0;  // HBM per chip; each device gets chip_hbm_bytes / logical_cores
  std::vector<int> nrt_families;  // libnrt instance families (NRT_INSTANCE_*) of this generation
};

// From the configured table. Throws c10::Error naming the accepted values when `name` is not in it.
const TargetInfo& lookupTarget(const std::string& name);
// The configured target whose NeuronCores an instance family (nrt_instance_info_t.family) has, or nullptr.
const TargetInfo* targetForNrtFamily(int family);

} // namespace torchneuron
