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

#include "partition/cost/communication.h"
#include "partition/cost/data_loading.h"
#include "partition/cost/memory.h"
#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"

namespace pipetwin {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// What the cost model is told besides the workload and the cluster.
struct CostSettings {
  int workers = 0;                      // devices to use, 0: every device of the cluster
  double memory_bytes_per_device = 0;   // capacity, 0: the cluster's device memory
  double parameter_dtype_bytes = 0;     // bytes per weight, 0: the workload's
  double gradient_dtype_bytes = 0;      // bytes per gradient, 0: as the weights
  double optimizer_bytes_per_parameter = 8;  // Adam in fp32: two moments of 4 bytes
  // The optimizer state is sharded over a stage's replicas (ZeRO-1): they reduce-scatter the
  // gradients and all-gather the weights instead of all-reducing the gradients
  // (communication.h, GradientSyncBytes).
  bool sharded_optimizer = false;
  // Bytes each layer keeps from its forward pass for its backward pass, per reference batch
  // (e.g. TransformerBlockStashBytes for the blocks). Empty: each layer's activation_bytes.
  std::vector<double> stash_bytes_per_layer;
  // How the input stage's data loading (Workload::data_loading_ms) meets its compute.
  DataLoading data_loading = DataLoading::kOverlapped;
};

// Where a pipeline of `depth` stages times `width` replicas runs (device k*depth + s).
struct PipelinePlacement {
  int depth = 1;
  int width = 1;
  std::vector<std::vector<int>> devices;  // per stage: one device per replica
  std::vector<LinearCost> send_next;      // per stage: to the next stage (last: none)
  // Per stage: among its replicas, every stage's all-reduce running at once (the uplinks they
  // cross shared: communication.h's ConcurrentRingAllReduceCosts).
  std::vector<LinearCost> allreduce;
  // Per stage: its all-reduce with the links to itself (RingAllReduceCost).
  std::vector<LinearCost> allreduce_alone;
  // The links its transfers and rings cross, numbered (communication.h's link numbers).
  std::vector<LinkDirection> links;
  // Per stage: the work its ring puts on each link per byte all-reduced (AddRingWork), with the
  // most of its flows that cross the link at once (RingFlows).
  std::vector<std::vector<RingLoad>> ring_per_byte;
  // Per boundary (stage s to s + 1) and replica: the activation's route out, the gradient's back.
  std::vector<std::vector<std::pair<SharedRoute, SharedRoute>>> transfer_routes;
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
  MemoryCategories memory;
};

// The shared cost model over one workload, cluster and settings. Requires nothing; validates
// everything and throws InputError with a one-line rule. Queries over layer ranges are O(1).
class PipelineCostModel {
 public:
  PipelineCostModel(const Workload& workload, const Cluster& cluster,
                    const CostSettings& settings);

  int LayerCount() const { return static_cast<int>(forward_ms_.size()) - 1; }
  int WorkerCount() const { return workers_; }
  int DeviceCount() const { return cluster_.DeviceCount(); }
  double CapacityBytes() const { return capacity_bytes_; }
  const Cluster& cluster() const { return cluster_; }
  const CostSettings& settings() const { return settings_; }

  // Layers first..last (inclusive), one micro-batch of b samples; a range from layer 0 is an
  // input stage, whose data loading counts as cost/data_loading.h says.
  double ComputeMs(int first, int last, int b, bool recompute) const;
  double Parameters(int first, int last) const { return parameters_[last + 1] - parameters_[first]; }
  // The backward part of ComputeMs (with recomputation, the forward it repeats).
  double BackwardMs(int first, int last, int b, bool recompute) const;
  double GradientBytes(int first, int last) const {
    return Parameters(first, last) * gradient_dtype_bytes_;
  }
  // What the replicas of layers first..last synchronise after a batch, as the bytes of a ring
  // all-reduce of the same cost (GradientSyncBytes).
  double SyncBytes(int first, int last) const;
  double StashBytes(int first, int last, int b) const;
  // Layers first..last as one stage under recomputation, one micro-batch of b samples
  // (StageRecomputeFootprint).
  RecomputeFootprint Recompute(int first, int last, int b) const;
  // Bytes crossing the cut after layer `last` for b samples (0 after the last layer, and
  // "before layer 0": the model's input is not a layer and costs nothing here).
  double BoundaryBytes(int last, int b) const;

  // The cluster's link and collective costs (communication.h).
  LinearCost AllReduceCost(const std::vector<int>& devices) const;
  LinearCost TransferCost(int device_a, int device_b) const;
  PipelinePlacement Place(int depth, int width) const;
  // When every stage all-reduces gradient_bytes[s] at once: the work on each link (by the
  // placement's numbers), and the
  // busiest link's: max-min fair sharing is work-conserving, so no sharing of the links ends
  // them sooner.
  std::vector<double> RingWork(const PipelinePlacement& placement,
                               const std::vector<double>& gradient_bytes) const;
  double BusiestLinkMs(const PipelinePlacement& placement,
                       const std::vector<double>& gradient_bytes) const;

  StageTimes Times(const PipelinePlacement& placement, int stage, int first, int last, int b,
                   bool recompute) const;
  // Whether some stage's all-reduce ring leaves a server (crosses a level-1 uplink), and whether
  // some pipeline boundary does too: what the planners' predictions leave to the simulator
  // (the plans name it, see their details.caveat).
  bool RingsCrossServers(const PipelinePlacement& placement) const;
  bool TransfersCrossServers(const PipelinePlacement& placement) const;
  MemoryCategories Memory(int first, int last, int b, int weight_versions,
                         int stashed_microbatches, bool recompute) const;
  StageEstimate EstimateStage(const PipelinePlacement& placement, int stage, int first, int last,
                              int b, bool recompute, int weight_versions,
                              int stashed_microbatches) const;

 private:
  Cluster cluster_;
  CostSettings settings_;
  int workers_ = 0;
  double capacity_bytes_ = 0;
  double parameter_dtype_bytes_ = 4;
  double gradient_dtype_bytes_ = 4;
  double samples_per_reference_ = 1;  // reference.batch_size
  bool stash_holds_input_ = false;    // Workload::stash_holds_input
  double load_ms_per_sample_ = 0;     // data loading
  // Prefix sums over layers (index i: layers 0..i-1); times already divided by the speed and
  // per sample, bytes per sample.
  std::vector<double> forward_ms_, backward_ms_, parameters_, stash_bytes_;
  std::vector<double> cut_bytes_;  // per sample, after layer j
  // Per layer and sample, for recomputation when some layer has a checkpoint of its own or is
  // never recomputed (Layer::checkpoint_bytes, recomputed; else empty: the whole-stage rule).
  std::vector<RecomputedLayer> recomputed_;
};

}  // namespace pipetwin
