// The cost model every planner shares: what one stage of a pipeline costs in time and memory.
//
// Units and assumptions (stated once, used by the 2BW planner and every baseline):
//  - A Workload's times and activation bytes are per reference batch (reference.batch_size
//    samples); a micro-batch of b samples costs b / reference.batch_size of them (linear
//    scaling: exact in FLOPs for the analytic transformers, approximate for memory-bound layers
//    and for measured profiles).
//    Times are divided by SpeedOverReference (the device's relative_speed, unless the workload
//    was timed on this very device).
//  - A DAG workload is pipelined in its topological order as a chain: the bytes crossing the cut
//    after layer j are the outputs of every layer <= j that feeds a layer > j.
//  - Stage s of replica k of a pipeline of depth d sits on device k*d + s: the d stages of one
//    replica are neighbours (inside a server when d divides the server), the replicas of a
//    stage lie a server apart (depth within a server, width across; PipeDream-2BW, ICML'21,
//    section 3.3 and its figure 4, equi-replicated parallel pipelines).
//  - A boundary between two devices uses the innermost level that holds both (level 0 inside a
//    server); a boundary's cost is the worst over the replicas.
//
//   PipelineCostModel model(workload, cluster, settings);   // validates, throws InputError
//   PipelinePlacement p = model.Place(/*depth=*/4, /*width=*/2);
//   StageEstimate e = model.EstimateStage(p, 0, 0, 9, /*microbatch=*/2, false, 2, 4);
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/cluster.h"
#include "partition/plan.h"
#include "partition/workload.h"

namespace pipetwin {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// What a planner is told besides the workload and the cluster.
struct PlannerSettings {
  int workers = 0;                      // devices to use, 0: every device of the cluster
  double memory_bytes_per_device = 0;   // capacity, 0: the cluster's device memory
  double parameter_dtype_bytes = 0;     // bytes per weight, 0: the workload's
  double gradient_dtype_bytes = 0;      // bytes per gradient, 0: as the weights
  double optimizer_bytes_per_parameter = 8;  // Adam in fp32: two moments of 4 bytes
  // Bytes each layer keeps from its forward pass for its backward pass, per reference batch
  // (e.g. TransformerBlockStashBytes for the blocks). Empty: each layer's activation_bytes.
  std::vector<double> stash_bytes_per_layer;

  // PipeDream-2BW search.
  int max_global_batch_size = 1024;     // w * b * m at most this
  std::vector<int> microbatch_candidates = {1, 2, 4, 8, 16, 32, 64};
  bool search_recompute = true;         // false: recomputation off only
  int ranked_count = 10;                // rows of the ranked table

  // Baselines: a configuration chosen by hand.
  int depth = 0;                        // gpipe/flush/uniform/balanced; 0: smallest that fits
  int microbatch_size = 1;
  int microbatches = 8;                 // m per weight update
  bool recompute = false;
  std::string split_schedule = "flush";  // schedule of uniform/balanced: "flush" or "gpipe"
  bool allow_over_capacity = false;     // baselines: return (fits: false) instead of throwing
};

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

// ms = fixed_ms + ms_per_byte * bytes (0 when there are no bytes).
struct LinearCost {
  double fixed_ms = 0;
  double ms_per_byte = 0;
  double Ms(double bytes) const { return bytes > 0 ? fixed_ms + ms_per_byte * bytes : 0; }
};

// Where a pipeline of `depth` stages times `width` replicas runs (device k*depth + s).
struct PipelinePlacement {
  int depth = 1;
  int width = 1;
  std::vector<std::vector<int>> devices;  // per stage: one device per replica
  std::vector<LinearCost> send_next;      // per stage: to the next stage (last: none)
  std::vector<LinearCost> allreduce;      // per stage: among its replicas
};

// A stage's time per micro-batch and its all-reduce per update.
struct StageTimes {
  double compute_ms = 0;    // forward + backward (+ forward again with recomputation)
  double transfer_ms = 0;   // 2 |A| / bandwidth per neighbouring stage (activation + gradient)
  double allreduce_ms = 0;  // gradient all-reduce among the replicas, once per update
};

struct StageEstimate {
  int first_layer = 0;
  int last_layer = 0;
  std::vector<int> devices;
  StageTimes times;
  MemoryBreakdown memory;
};

// The shared cost model over one workload, cluster and settings. Requires nothing; validates
// everything and throws InputError with a one-line rule. Queries over layer ranges are O(1).
class PipelineCostModel {
 public:
  PipelineCostModel(const Workload& workload, const Cluster& cluster,
                    const PlannerSettings& settings);

  int LayerCount() const { return static_cast<int>(forward_ms_.size()) - 1; }
  int WorkerCount() const { return workers_; }
  int DeviceCount() const { return cluster_.DeviceCount(); }
  double CapacityBytes() const { return capacity_bytes_; }
  const Cluster& cluster() const { return cluster_; }
  const PlannerSettings& settings() const { return settings_; }

  // Layers first..last (inclusive), one micro-batch of b samples.
  double ComputeMs(int first, int last, int b, bool recompute) const;
  double Parameters(int first, int last) const { return parameters_[last + 1] - parameters_[first]; }
  double StashBytes(int first, int last, int b) const;
  // Bytes crossing the cut after layer `last` for b samples (0 after the last layer, and
  // "before layer 0": the model's input is not a layer and costs nothing here).
  double BoundaryBytes(int last, int b) const;

  // Ring all-reduce, hierarchical across levels, of `bytes` among `devices`.
  LinearCost AllReduceCost(const std::vector<int>& devices) const;
  // Point-to-point message between two devices.
  LinearCost TransferCost(int device_a, int device_b) const;
  PipelinePlacement Place(int depth, int width) const;

  StageTimes Times(const PipelinePlacement& placement, int stage, int first, int last, int b,
                   bool recompute) const;
  MemoryBreakdown Memory(int first, int last, int b, int weight_versions,
                         int stashed_microbatches, bool recompute) const;
  StageEstimate EstimateStage(const PipelinePlacement& placement, int stage, int first, int last,
                              int b, bool recompute, int weight_versions,
                              int stashed_microbatches) const;

 private:
  Cluster cluster_;
  PlannerSettings settings_;
  int workers_ = 0;
  double capacity_bytes_ = 0;
  double parameter_dtype_bytes_ = 4;
  double gradient_dtype_bytes_ = 4;
  double samples_per_reference_ = 1;  // reference.batch_size
  // Prefix sums over layers (index i: layers 0..i-1); times already divided by the speed and
  // per sample, bytes per sample.
  std::vector<double> forward_ms_, backward_ms_, parameters_, stash_bytes_;
  std::vector<double> cut_bytes_;  // per sample, after layer j
};

// A contiguous range of layers.
struct StageRange {
  int first_layer = 0;
  int last_layer = 0;
};

// Equal layer counts; the first L mod d stages take one layer more (DeepSpeed's
// partition_uniform, what Megatron-LM users do with equal blocks per stage).
std::vector<StageRange> UniformSplit(int layers, int depth);
// Contiguous split minimising the largest stage compute time (forward + backward, + forward with
// recomputation) for micro-batch b: "equal time per stage".
std::vector<StageRange> BalancedSplit(const PipelineCostModel& model, int depth, int b,
                                      bool recompute);

// A plan's stage from an estimate, the per-device memory vector (0 for idle devices) and the
// per-stage details JSON.
StagePlan MakeStagePlan(const StageEstimate& estimate);
std::vector<double> DeviceMemory(const std::vector<StageEstimate>& stages, int device_count);
nlohmann::json StageDetails(const std::vector<StageEstimate>& stages);

// Contiguous partition of `layers` layers into `depth` stages that minimises max_s cost(s, i, j)
// (stage s holds layers i..j) by dynamic programming over prefixes, O(depth L^2). `cost` returns
// kInfinity for an inadmissible stage; stages costing more than `limit` are inadmissible too.
// `lower(i, j)` must bound cost(s, i, j) from below for every s and must not decrease as i
// decreases: the scan over i stops once it reaches the best value so far. Among equal optima the
// first found wins (the last stage as short as possible, then the one before, ...). Returns the
// optimum (kInfinity when nothing is admissible) and fills `ranges` when it is finite.
class MinMaxPartitioner {
 public:
  template <class Cost, class Lower>
  double Solve(int layers, int depth, const Cost& cost, const Lower& lower, double limit,
               std::vector<StageRange>* ranges);

 private:
  std::vector<double> best_;  // best_[s * layers + j]: stages 0..s over layers 0..j
  std::vector<int> start_;    // first layer of stage s in that optimum
};

template <class Cost, class Lower>
double MinMaxPartitioner::Solve(int layers, int depth, const Cost& cost, const Lower& lower,
                                double limit, std::vector<StageRange>* ranges) {
  if (depth < 1 || depth > layers) return kInfinity;
  best_.assign(static_cast<size_t>(depth) * layers, kInfinity);
  start_.assign(static_cast<size_t>(depth) * layers, -1);
  for (int s = 0; s < depth; ++s) {
    // Stage s ends at j >= s; later stages need a layer each; the last stage ends the model.
    for (int j = (s == depth - 1 ? layers - 1 : s); j <= layers - depth + s; ++j) {
      double& best = best_[s * layers + j];
      for (int i = (s == 0 ? 0 : j); i >= s; --i) {
        const double bound = lower(i, j);
        if (bound >= best || bound > limit) break;
        const double before = s == 0 ? 0 : best_[(s - 1) * layers + i - 1];
        if (before >= best) continue;
        double c = cost(s, i, j);
        if (c > limit) c = kInfinity;
        const double value = before > c ? before : c;
        if (value < best) {
          best = value;
          start_[s * layers + j] = i;
        }
      }
    }
  }
  const double result = best_[(depth - 1) * layers + layers - 1];
  if (result == kInfinity || ranges == nullptr) return result;
  ranges->assign(depth, StageRange{});
  for (int s = depth - 1, j = layers - 1; s >= 0; --s) {
    const int i = start_[s * layers + j];
    (*ranges)[s] = {i, j};
    j = i - 1;
  }
  return result;
}

// "17.23 GB (17,234,567,890 bytes)", "50.59 MB (50,586,889 bytes)"
std::string DescribeBytes(double bytes);

}  // namespace pipetwin
