// What one worker holds in memory, by category, and how many micro-batches and weight versions
// a stage keeps under each schedule.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/model/workload.h"
#include "partition/schedule/kind.h"
#include "partition/util/json_reader.h"

namespace pipetwin {

// Bytes one device holds, by what they are for: what the planners estimate (WorkerMemory), the
// simulator tracks op by op and the executor measures, in one type.
struct MemoryCategories {
  double weights = 0;      // parameters x live weight versions
  double optimizer = 0;    // optimizer state (momenta, Adam moments)
  double gradients = 0;    // one gradient buffer
  double activations = 0;  // stashed: stage inputs, and layer stashes unless recomputed
  double recompute = 0;    // stashes rebuilt by recomputation, until their backward is done

  double Total() const { return weights + optimizer + gradients + activations + recompute; }
  // The categories by index 0..kMemoryCategoryCount-1, in the order above.
  double Of(int category) const;
  double& Of(int category);
};

constexpr int kMemoryCategoryCount = 5;
// "weights", "optimizer", "gradients", "activations", "recompute".
const char* MemoryCategoryName(int category);

// {"weights": ..., "optimizer": ..., ..., "total": ...}, and back (InputError naming the path).
nlohmann::json MemoryCategoriesToJson(const MemoryCategories& memory);
MemoryCategories MemoryCategoriesFromJson(JsonReader reader);

// One layer of a stage, one micro-batch, as recomputation sees it (Layer::checkpoint_bytes,
// Layer::recomputed).
struct RecomputedLayer {
  double input_bytes = 0;  // what crosses into it: the stage's input for the stage's first layer
  double stash_bytes = 0;  // its stash (Workload::StashBytes)
  double forward_ms = 0;
  std::optional<double> checkpoint_bytes;
  bool recomputed = true;
};

// What a stage holds for one micro-batch under recomputation, in the stage's layer order:
//   kept_bytes     from its forward to its backward: the input of each run of layers recomputed
//                  together, and the stash of each layer never recomputed (with its input, where
//                  stashes do not hold their inputs). A layer with checkpoint_bytes opens a run
//                  and keeps that many bytes; the recomputed layers after it without a checkpoint
//                  of their own join its run (a checkpointed segment, torch.utils.checkpoint's
//                  and Megatron-LM's --recompute-method uniform --recompute-num-layers N); a run
//                  that no checkpoint opens starts at the stage's input, or after a layer never
//                  recomputed, and keeps that layer's input;
//   rebuilt_bytes  the most that exists at once while the backward recomputes: the largest run's
//                  stash (its input counted again, as the whole stage's rule always has: a
//                  tensor-level bound);
//   recompute_ms   the forward rerun: every layer but those never recomputed.
// With no layer giving a checkpoint or refusing recomputation this is PipeDream-2BW's rule
// (appendix A.1.2: the stage's input kept, |A_total(b)| / d rebuilt); with every block its own
// checkpoint, Megatron-LM's full recomputation (Korthikanti et al. 2022, section 5: 2 s b h per
// layer kept, one layer's activations rebuilt at a time); with every N-th, its uniform method
// of N layers per checkpoint.
struct RecomputeFootprint {
  double kept_bytes = 0, rebuilt_bytes = 0, recompute_ms = 0;
};
RecomputeFootprint StageRecomputeFootprint(const std::vector<RecomputedLayer>& layers,
                                           bool stash_holds_input);

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
  bool stash_holds_input = false;         // Workload::stash_holds_input
  // Under recomputation, what the stage keeps and rebuilds when its layers say
  // (StageRecomputeFootprint); absent: the stage's input kept, its whole stash rebuilt.
  std::optional<RecomputeFootprint> recompute_footprint;
};

// The activation bytes a stage keeps for one micro-batch from its forward to its backward: its
// input, and every layer's stash unless it recomputes them (`input_only`). When the layers'
// stashes hold their own inputs (Workload::stash_holds_input) the stage's input is already in
// its first layer's stash: the stashes alone, or the input alone when recomputing. The one rule
// the planners (WorkerMemory) and the simulator (sim/memory_tracker.cc) keep activations by.
double KeptActivationBytes(double input_bytes, double stash_bytes, bool input_only,
                           bool stash_holds_input);

// One worker's memory (PipeDream-2BW, ICML'21, appendix A.1.2): versions x |W_stage| weights,
// one gradient buffer (coalesced over the micro-batches of an update), optimizer state, and for
// each stashed micro-batch what KeptActivationBytes keeps (its input and, without
// recomputation, the stash of every layer); with recomputation one micro-batch's full stash
// exists at a time besides (the `recompute` category).
MemoryCategories WorkerMemory(const WorkerMemoryInputs& in);

// The weights, gradients and optimizer state of a whole model, one version, without activations:
// what training it needs at least (WorkerMemory of every layer on one worker).
double ModelStateBytes(const Workload& workload, double optimizer_bytes_per_parameter);

// The closed forms of what a stage of a pipeline of `depth` positions keeps, one stage per
// position and no replication (the planners' assumptions), with `microbatches` per batch
// (PipeDream: minibatches run) and `chunks` model chunks per worker. The op lists imply the same
// (AnalyzeSchedule; tests/schedule_memory_test.cc checks every kind against them).
//
// Micro-batches stage `stage` holds between their forward and their backward, at most:
//   GPipe        m, every forward before any backward (Huang et al., NeurIPS 2019, section 2.3)
//   1F1B         min(d - s, m): Flush, 2BW and PipeDream, whose warm-up admits d - s
//                (Narayanan et al., SC'21, section 2.2.1; ICML'21, section 3.1; SOSP'19 NOAM)
//   ZB-H1        min(d, m) on every stage: stage s delays its weight passes by s micro-batches,
//                keeping 1F1B's peak of stage 0 (Qi et al., ICLR 2024, section 2.1)
//   ZB-H2        min(2d - 1, m) on every stage: 2(d - s - 1) warm-up forwards, and weight
//                passes that lag by 2s, the paper's (2p - 1) M_B (section 2.2)
// and in chunk micro-batches, each 1/v of the worker's layers, with n = MicrobatchesPerRound:
//   interleaved  min(2 (d - s - 1) + (v - 1) n + 1, m v): its warm-up forwards and one more
//                (SC'21, section 2.2; n = d when d divides m)
//   interleaved-zb  min((v - 1) n + d, m v) on every stage: warm-up (v - 1) n + d - s - 1, one
//                more, and s whose weight passes lag (ZB-H1's rule over v chunks; v = 1 is ZB-H1)
//   looped-bfs   m v: every chunk's forwards before any backward, like GPipe
//   zb-v         min(2d, m + 1 + s, 2m): two chunks in a V hold 1F1B's peak of d whole stages on
//                every worker (Qi et al., section 6), fewer while m < 2d - 1
//   dualpipe-v   2d + 1: DualPipe's "PP + 1" with PP = 2d chunks (DeepSeek-V3 report, table 2)
//   dualpipe     2d + 1 = PP + 1 on every rank, d = PP/2 positions of mirror pairs (table 2)
int StashedMicrobatches(ScheduleKind kind, int stage, int depth, int microbatches,
                        int chunks = 1);
// Weight versions stage `stage` keeps, at most: 2BW 2 (double buffering, ICML'21 section 3.1);
// PipeDream one per minibatch in flight, n = d - s (SOSP'19 section 3.3), once the run is long
// enough. With warm-up n - 1, minibatch k's forward uses version max(0, k - n + 1); right after
// the update that follows backward j, the current version and those of the minibatches j + 1 ..
// min(j + n - 1, m - 1) still in flight are alive, at most min(n, max(2, m - n + 2)) at once
// (1 when n = 1 or m = 1); the others 1.
int WeightVersions(ScheduleKind kind, int stage, int depth, int microbatches);

}  // namespace pipetwin
