// What each stage of a plan costs for one micro-batch: the one rule the simulator, the layout of
// the op lists' communication, the profiler's pipeline bound and the planners' cost model follow.
//
//  - Times: a layer's forward_ms and backward_ms are for reference.batch_size samples on
//    reference.device; b samples cost b / reference.batch_size of them (linear scaling: exact
//    in FLOPs for the analytic transformers, approximate for memory-bound layers and measured
//    profiles), divided by the speed of the device over the reference (SpeedOverReference:
//    the cluster device's relative_speed, unless the workload was timed on that very device).
//    The passes over the parameters (update_ms, update_copy_ms, and gradient_add_ms of the
//    backward) do not depend on the samples: only the speed divides them.
//  - Parameters: Workload::LayerParameters; weights and gradients at the workload's dtype.
//  - Bytes across a cut: the outputs of every layer at or before the cut that feeds a layer after
//    it, in the plan's layer order (a DAG's skip connections included); gradients going back
//    carry as many.
//  - Memory per micro-batch: the stage input (the cut before the stage) plus each layer's stash
//    (Workload::StashBytes), scaled to b.
//
//   std::vector<StageCost> c = PlanStageCosts(w, plan, /*b=*/4, SpeedOverReference(cluster,
//                                             w.reference.device), /*optimizer bytes=*/8);
//   c[1].forward_ms;   // one micro-batch through stage 1
#pragma once

#include <optional>
#include <vector>

#include "partition/cost/memory.h"
#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"

namespace pipetwin {

// One stage of a plan (a contiguous range of positions of its layer order).
struct StageCost {
  int first_layer = 0;
  int last_layer = 0;
  double forward_ms = 0;   // one micro-batch
  double backward_ms = 0;
  // A zero-bubble schedule's two backward passes, one micro-batch: each layer's own split where
  // it gives one (Layer::backward_input_ms), else its backward_ms split by BackwardInputShare.
  double backward_input_ms = 0, backward_weight_ms = 0;
  // Of backward_ms (and of backward_weight_ms, the pass that makes the parameters' gradients),
  // the additions into the gradient sums (Layer::gradient_add_ms), which a backward that takes
  // its gradient as it is does not run (op.h, AddsToGradientSums).
  double gradient_add_ms = 0;
  double update_ms = 0;    // the optimizer step, once per weight update (Layer::update_ms)
  double update_sharded_ms = 0;  // of it, what a sharded optimizer divides (Layer's own)
  // Of update_ms, the copy into new tensors that an update of a stashed version makes
  // (Layer::update_copy_ms; op.h, UpdatesCopyingWeights).
  double update_copy_ms = 0;
  double parameters = 0;
  double weight_bytes = 0;      // one version: parameters x parameter dtype bytes
  double gradient_bytes = 0;    // parameters x gradient dtype bytes (as the weights)
  double optimizer_bytes = 0;   // parameters x optimizer bytes per parameter
  double input_bytes = 0;       // the stage input of one micro-batch (kept under recomputation)
  double stash_bytes = 0;       // every layer's stash for one micro-batch
  // What a zero-bubble W keeps after I (Layer::weight_stash_bytes), when every layer of the
  // stage says; absent: the whole stash and input stay until W.
  std::optional<double> weight_stash_bytes;
  bool stash_holds_input = false;  // the workload's (Workload::stash_holds_input)
  // Under recomputation (memory.h, StageRecomputeFootprint): what a micro-batch keeps from its
  // forward to its backward, what recomputing rebuilds at most at once, and the forward rerun.
  RecomputeFootprint recompute;
  // The collectives of the recomputed layers' forward (the forward_ fields), one micro-batch.
  GroupCollectives recompute_collectives;
  double output_bytes = 0;      // one micro-batch's activation sent to the next stage
  // The tensor-parallel group's collectives in the stage's layers (Layer::collectives), one
  // micro-batch: part of forward_ms and backward_ms (and of the I and W passes' times), scaled
  // as they are; a layer without the I/W split shares its backward's by BackwardInputShare.
  GroupCollectives collectives;
  // Per layer, last layer first (the order a backward produces gradients in): backward ms and
  // gradient bytes, for bucketing the all-reduce.
  std::vector<double> layer_backward_ms;
  std::vector<double> layer_gradient_bytes;
};

// For a layer that does not give its own I/W split (a measured profile), the share of its
// backward that a zero-bubble schedule's BackwardInput op (I) computes; its BackwardWeight op
// (W) computes the rest. Qi et al. (ICLR 2024, §2) take the input and weight gradients of a
// layer as equal halves (two GEMMs of the same size). The model's first stage (the stage whose
// first layer is the model's) has no input gradient to compute, since its input is data: I does
// nothing and W the whole backward, as pipetwin's executor (stage_executor.cc, Backward) and
// torch.distributed.pipelining's stage (stage.py, backward_one_chunk: "Skip the backward for the
// first stage") run it. Analytic layers (workloads/megatron) give their split from their kernels
// instead, as Megatron-LM's zero-bubble runtime runs them on every stage.
double BackwardInputShare(int stage_first_layer);

// A stage's optimizer step on each of its replicas when a sharded optimizer divides it among
// `shards` of them (1: not sharded): each steps its 1 / shards of the sharded part and all of the
// rest (StageCost::update_sharded_ms).
double UpdateMs(const StageCost& stage, int shards);

// The factor turning a layer's reference times into those of `samples` samples on a device
// `speed` times as fast as the reference: samples / reference.batch_size / speed.
double TimeScale(const Workload& workload, double samples, double speed);

// Per sample, the bytes crossing the cut after each position of `order` (a topological order;
// empty: the workload's own), 0 after the last.
std::vector<double> CutBytesPerSample(const Workload& workload, const std::vector<int>& order);

// Every stage of `plan` for micro-batches of `microbatch_size` samples on a device `speed` times
// as fast as the workload's reference.
std::vector<StageCost> PlanStageCosts(const Workload& workload, const Plan& plan,
                                      int microbatch_size, double speed,
                                      double optimizer_bytes_per_parameter);

}  // namespace pipetwin
