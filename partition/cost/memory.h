// What one worker holds in memory, by category, and how many micro-batches and weight versions
// a stage keeps under each schedule.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pipetwin {

// Bytes one worker holds, by category.
struct MemoryBreakdown {
  double weight_bytes = 0;      // parameters x weight versions
  double optimizer_bytes = 0;
  double gradient_bytes = 0;
  double activation_bytes = 0;  // stashed activations (and one recomputed micro-batch)
  double Total() const { return weight_bytes + optimizer_bytes + gradient_bytes + activation_bytes; }
  nlohmann::json ToJson() const;
};

struct WorkerMemoryInputs {
  double parameters = 0;                  // of the stage the worker holds
  double parameter_dtype_bytes = 4;
  double gradient_dtype_bytes = 4;
  double optimizer_bytes_per_parameter = 8;
  int weight_versions = 1;
  double stash_bytes_per_microbatch = 0;  // every layer's stash, one micro-batch
  double input_bytes_per_microbatch = 0;  // the stage's input activation, one micro-batch
  int stashed_microbatches = 1;           // forwarded, not yet backwarded
  bool recompute = false;
};

// One worker's memory (PipeDream-2BW, ICML'21, appendix A.1.2): versions x |W_stage| weights,
// one gradient buffer (coalesced over the micro-batches of an update), optimizer state, and for
// each stashed micro-batch the stage's input activation plus, without recomputation, the stash
// of every layer; with recomputation only one micro-batch's full stash exists at a time.
MemoryBreakdown WorkerMemory(const WorkerMemoryInputs& in);

// Micro-batches a stage holds between forward and backward: GPipe all m (Huang et al., NeurIPS
// 2019, section 2.3); 1F1B schedules (flush, 2bw, pipedream) min(d - stage, m) (Narayanan et
// al., SC'21, section 2.2.1; ICML'21, section 3.1).
int StashedMicrobatches(const std::string& schedule, int stage, int depth, int microbatches);
// Weight versions a stage keeps: 2bw 2, pipedream (weight stashing) d - stage, others 1.
int WeightVersions(const std::string& schedule, int stage, int depth);

}  // namespace pipetwin
