#include "partition/cost/memory.h"

#include <algorithm>

namespace pipetwin {

nlohmann::json MemoryBreakdown::ToJson() const {
  return {{"weight_bytes", weight_bytes},         {"optimizer_bytes", optimizer_bytes},
          {"gradient_bytes", gradient_bytes},     {"activation_bytes", activation_bytes},
          {"total_bytes", Total()}};
}

MemoryBreakdown WorkerMemory(const WorkerMemoryInputs& in) {
  MemoryBreakdown m;
  m.weight_bytes = in.parameters * in.parameter_dtype_bytes * in.weight_versions;
  m.gradient_bytes = in.parameters * in.gradient_dtype_bytes;
  m.optimizer_bytes = in.parameters * in.optimizer_bytes_per_parameter;
  // PipeDream-2BW appendix A.1.2, per stage with n = stashed micro-batches (d for 2BW):
  //   without recomputation  n |A_total(b)| / d + n |A_input(b)|
  //   with recomputation     |A_total(b)| / d + n |A_input(b)|
  // (GPipe with recomputation, section 3.1: |A_total(b)| / d + m |A_input(b)|.)
  const double inputs = in.stashed_microbatches * in.input_bytes_per_microbatch;
  m.activation_bytes = inputs + (in.recompute ? 1 : in.stashed_microbatches) *
                                    in.stash_bytes_per_microbatch;
  return m;
}

int StashedMicrobatches(const std::string& schedule, int stage, int depth, int microbatches) {
  if (schedule == "gpipe") return microbatches;
  return std::min(depth - stage, microbatches);
}

int WeightVersions(const std::string& schedule, int stage, int depth) {
  if (schedule == "2bw") return 2;
  if (schedule == "pipedream") return depth - stage;
  return 1;
}

}  // namespace pipetwin
