// The "megatron" workload generator's settings, as a scenario names them (scenarios/README.md,
// "The megatron generator") and `pipetwin from-megatron` writes them:
//
//   {"generator": "megatron", "architecture": "gpt", "layers": 96, "hidden": 12288,
//    "heads": 96, "sequence": 2048, "vocabulary": 51200, "tensor_parallel": 8,
//    "sequence_parallel": true, "recompute": "selective", "microbatch": 1}
#pragma once

#include <nlohmann/json.hpp>

#include "partition/util/json_reader.h"
#include "workloads/megatron/model.h"

namespace pipetwin {

struct MegatronSpec {
  MegatronModel model;
  MegatronParallel parallel;
};

// Reads every key (the architecture's defaults first, then the keys given); the caller
// Finish()es. Throws InputError naming the file and JSON path; ValidateMegatron's rules are
// the caller's (they need the whole spec).
MegatronSpec ReadMegatronSpec(JsonReader& spec);
// The generator source that reads back as `spec` (every key written).
nlohmann::json MegatronSpecToJson(const MegatronSpec& spec);

}  // namespace pipetwin
