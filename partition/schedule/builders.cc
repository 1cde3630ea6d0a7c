// The compute order of each schedule kind, and BuildSchedule which checks a spec's rules and
// lowers the order into complete op lists (schedule_lowering.cc).
//
// Every builder writes, per worker, Forward/Backward (or BackwardInput/BackwardWeight) in the
// order the worker runs them, and a "sync" (AllReduce over the stage's replicas when there are
// several, then Update) where the weights change. Micro-batch k goes to replica k mod r of a
// replicated stage, so its backward returns to the replica that ran its forward (1F1B-RR,
// PipeDream SOSP'19 section 3.2).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/build.h"
#include "partition/schedule/internal/lowering.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

namespace {

using schedule_internal::MakeOp;

constexpr int kDefaultTwoBWBatches = 4;
// The largest run whose op lists pipetwin builds: forwards, backwards and recomputations over
// every micro-batch, stage and repeat (the other ops are a few per compute op). The simulator
// keeps a few hundred bytes per op (its records, messages and activities), so the lists of
// such a run and what the back ends keep of them stay within a few GB; the largest runs in use
// (16,384 GPUs, a few thousand micro-batches per iteration, a few iterations) are below it.
constexpr int64_t kMaxComputeOps = 4'000'000;
constexpr int64_t kMaxScheduleWorkers = 100'000;

// One step of a 1F1B order: a forward or a backward of the worker's i-th micro-batch.
struct Step {
  bool forward;
  int index;
};

// 1F1B over `count` micro-batches with `warmup` forwards first: warm-up, then one forward and one
// backward at a time, then the remaining backwards (cool-down). Megatron-LM
// forward_backward_pipelining_without_interleaving; PipeDream SOSP'19 section 3.2 without flush.
std::vector<Step> OneFOneB(int count, int warmup) {
  warmup = std::min(warmup, count);
  std::vector<Step> steps;
  steps.reserve(2 * count);
  for (int i = 0; i < warmup; ++i) steps.push_back({true, i});
  for (int i = 0; i < count - warmup; ++i) {
    steps.push_back({true, warmup + i});
    steps.push_back({false, i});
  }
  for (int i = count - warmup; i < count; ++i) steps.push_back({false, i});
  return steps;
}

// The skeleton: workers with their position, replica and model stages, and no ops yet.
PipelineSchedule Skeleton(const ScheduleSpec& spec, const std::vector<int>& replicas,
                          int microbatches, int per_batch) {
  PipelineSchedule s;
  s.kind = spec.kind;
  s.stages = spec.stages;
  s.replicas = replicas;
  s.microbatches = microbatches;
  s.microbatches_per_batch = per_batch;
  s.chunks = spec.chunks;
  s.vertical_sync = spec.vertical_sync;
  s.recompute = spec.recompute;
  s.recompute_timing = spec.recompute_timing;
  s.send_mode = spec.send_mode;
  int worker = 0;
  for (int stage = 0; stage < spec.stages; ++stage) {
    for (int r = 0; r < replicas[stage]; ++r) {
      WorkerProgram w;
      w.worker = worker++;
      w.stage = stage;
      w.replica = r;
      for (int c = 0; c < spec.chunks; ++c) w.model_stages.push_back(c * spec.stages + stage);
      s.workers.push_back(w);
    }
  }
  return s;
}

// The micro-batches a worker runs, ascending.
std::vector<int> MicrobatchesOf(const PipelineSchedule& s, const WorkerProgram& w) {
  std::vector<int> mine;
  for (int k = w.replica; k < s.microbatches; k += s.replicas[w.stage]) mine.push_back(k);
  return mine;
}

// An AllReduce (its buckets set by BuildSchedule) when the stage has replicas, then the Update.
void AppendSync(const PipelineSchedule& s, WorkerProgram& w) {
  if (s.replicas[w.stage] > 1) w.ops.push_back(MakeOp(OpKind::kAllReduce, w.stage, 0, -1));
  w.ops.push_back(MakeOp(OpKind::kUpdate, w.stage, 0, -1));
}

// GPipe (Huang et al., NeurIPS'19): all forwards, then all backwards in the same order (as
// torch.distributed.pipelining ScheduleGPipe), then one update.
void BuildGPipe(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    for (int k : mine) w.ops.push_back(MakeOp(OpKind::kForward, w.stage, 0, k));
    for (int k : mine) w.ops.push_back(MakeOp(OpKind::kBackward, w.stage, 0, k));
    AppendSync(s, w);
  }
}

// 1F1B over the worker's micro-batches; `after_backward(i)` appends what follows the i-th
// backward (the syncs of PipeDream and 2BW).
template <typename AfterBackward>
void BuildOneFOneB(PipelineSchedule& s, WorkerProgram& w, AfterBackward after_backward) {
  const auto mine = MicrobatchesOf(s, w);
  const int warmup = InFlightTarget(s.replicas, w.stage) - 1;
  for (const Step& step : OneFOneB(static_cast<int>(mine.size()), warmup)) {
    const int k = mine[step.index];
    w.ops.push_back(MakeOp(step.forward ? OpKind::kForward : OpKind::kBackward, w.stage, 0, k));
    if (!step.forward) after_backward(step.index);
  }
}

// PipeDream-Flush / Megatron 1F1B: warm-up of p-s-1 forwards, steady 1F1B, cool-down, one
// update per batch (PipeDream-2BW, ICML'21, section 3.3 "PipeDream-Flush").
void BuildFlush(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    BuildOneFOneB(s, w, [](int) {});
    AppendSync(s, w);
  }
}

// PipeDream (SOSP'19 sections 3.2-3.3): 1F1B with no flush; the input stage admits NOAM
// minibatches; each worker updates after each backward (replicas all-reduce first). A replica
// with fewer minibatches than its stage's rounds joins the remaining all-reduces at the end.
void BuildPipeDream(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    BuildOneFOneB(s, w, [&](int) { AppendSync(s, w); });
    const int rounds = (s.microbatches + s.replicas[w.stage] - 1) / s.replicas[w.stage];
    const int mine = static_cast<int>(MicrobatchesOf(s, w).size());
    for (int i = mine; i < rounds; ++i) AppendSync(s, w);
  }
}

// PipeDream-2BW (ICML'21 section 3): 1F1B with no flush over all batches; each worker updates
// once per batch of m micro-batches, after its last backward of that batch.
void BuildTwoBW(PipelineSchedule& s) {
  const int m = s.microbatches_per_batch;
  const int batches = s.microbatches / m;
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    // last[t]: index (in `mine`) of the worker's last micro-batch of batch <= t, or -1.
    std::vector<int> last(batches, -1);
    for (int i = 0; i < static_cast<int>(mine.size()); ++i)
      for (int t = mine[i] / m; t < batches; ++t) last[t] = i;
    for (int t = 0; t < batches && last[t] == -1; ++t) AppendSync(s, w);
    BuildOneFOneB(s, w, [&](int i) {
      for (int t = 0; t < batches; ++t)
        if (last[t] == i) AppendSync(s, w);
    });
  }
}

// Interleaved 1F1B (Megatron-LM, Narayanan et al., SC'21, section 2.2): worker w holds model
// stages w, w+p, ..., w+(v-1)p. Forward k goes to chunk (k mod pv) div p, micro-batch
// (k div pv) p + k mod p; backwards visit chunks in reverse. Warm-up: 2(p-w-1) + (v-1)p
// forwards, capped at m v (torch ScheduleInterleaved1F1B._calculate_single_rank_operations and
// Megatron forward_backward_pipelining_with_interleaving). With data parallelism (every stage
// replicated d times, as Megatron replicates the whole pipeline) each replica runs this order over
// its own m / d micro-batches (k = r, r + d, ...).
void BuildInterleaved(PipelineSchedule& s) {
  const int p = s.stages, v = s.chunks;
  auto chunk_of = [&](int k, bool forward) {
    int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto microbatch_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    const int total = static_cast<int>(mine.size()) * v;
    const int warmup = std::min(2 * (p - w.stage - 1) + (v - 1) * p, total);
    auto push = [&](int k, bool forward) {
      const int c = chunk_of(k, forward);
      w.ops.push_back(MakeOp(forward ? OpKind::kForward : OpKind::kBackward, c * p + w.stage, c,
                             mine[microbatch_of(k)]));
    };
    for (const Step& step : OneFOneB(total, warmup)) push(step.index, step.forward);
    AppendSync(s, w);
  }
}

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 2.1): the 1F1B order
// with the backward split into I (input gradient) and W (weight gradient); stage s delays its W
// passes by s micro-batches, so every stage holds p activations at most (1F1B's peak) and the W
// passes fill the cool-down bubble. Same order as torch ScheduleInterleavedZeroBubble with one
// stage per rank. With data parallelism each replica runs it over its own micro-batches.
void BuildZeroBubbleH1(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    const int m = static_cast<int>(mine.size());
    const int lag = w.stage;
    int weights_done = 0;
    for (const Step& step : OneFOneB(m, s.stages - w.stage - 1)) {
      const int k = step.index;
      if (step.forward) {
        w.ops.push_back(MakeOp(OpKind::kForward, w.stage, 0, mine[k]));
        continue;
      }
      w.ops.push_back(MakeOp(OpKind::kBackwardInput, w.stage, 0, mine[k]));
      if (k >= lag)
        w.ops.push_back(MakeOp(OpKind::kBackwardWeight, w.stage, 0, mine[weights_done++]));
    }
    while (weights_done < m)
      w.ops.push_back(MakeOp(OpKind::kBackwardWeight, w.stage, 0, mine[weights_done++]));
    AppendSync(s, w);
  }
}

// Recomputation: each backward is preceded by a Recompute of its forward.
void InsertRecompute(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    std::vector<Op> ops;
    for (const Op& op : w.ops) {
      if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput)
        ops.push_back(MakeOp(OpKind::kRecompute, op.stage, op.chunk, op.microbatch));
      ops.push_back(op);
    }
    w.ops = std::move(ops);
  }
}

// A broken rule of the spec, naming the spec's field it concerns (ScheduleSpecError).
[[noreturn]] void Broken(const ScheduleSpec& spec, const char* field, const std::string& rule) {
  throw ScheduleSpecError(field, "schedule " + ScheduleKindName(spec.kind) + ": " + rule);
}

std::vector<int> CheckedReplicas(const ScheduleSpec& spec) {
  std::vector<int> replicas = spec.replicas;
  if (replicas.empty()) replicas.assign(spec.stages, 1);
  if (static_cast<int>(replicas.size()) != spec.stages)
    Broken(spec, "replicas", "the replica counts list " + std::to_string(replicas.size()) +
                                 " stages for a pipeline of " + std::to_string(spec.stages) +
                                 " (one count per stage)");
  for (size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i] < 1)
      Broken(spec, "replicas", "stage " + std::to_string(i) + " has " + std::to_string(replicas[i]) +
                       " replicas (at least 1)");
  const int workers = std::accumulate(replicas.begin(), replicas.end(), 0);
  if (spec.worker_count > 0 && workers != spec.worker_count)
    Broken(spec, "replicas", "the replicas need " + std::to_string(workers) + " workers but there are " +
                     std::to_string(spec.worker_count));
  const bool replicated = workers > spec.stages;
  const ScheduleKind k = spec.kind;
  if (replicated && (k == ScheduleKind::kInterleaved || k == ScheduleKind::kZeroBubbleH1) &&
      std::adjacent_find(replicas.begin(), replicas.end(), std::not_equal_to<int>()) !=
          replicas.end())
    Broken(spec, "replicas", "replicates the whole pipeline (every stage the same replica count, "
                             "as Megatron-LM's data parallelism) or no stage");
  return replicas;
}

void CheckSpec(const ScheduleSpec& spec, const std::vector<int>& replicas) {
  const int p = spec.stages, m = spec.microbatches;
  const ScheduleKind kind = spec.kind;
  if (kind == ScheduleKind::kImported) Broken(spec, "kind", "an imported schedule is read, not built");
  if (spec.chunks > 1 && kind != ScheduleKind::kInterleaved)
    Broken(spec, "chunks", "model chunks per worker apply to the interleaved schedule only");
  if (kind == ScheduleKind::kInterleaved && spec.chunks < 2)
    Broken(spec, "chunks", "needs at least 2 model chunks per worker, got " +
                     std::to_string(spec.chunks));
  if (kind == ScheduleKind::kInterleaved && m % (p * replicas[0]) != 0)
    Broken(spec, "microbatches", "needs each replica's micro-batch count to be a multiple of the "
                 "stage count (Megatron-LM), got m = " + std::to_string(m) + " over " +
                 std::to_string(replicas[0]) + " replica(s), p = " + std::to_string(p));
  if (kind == ScheduleKind::kZeroBubbleH1 && m % replicas[0] != 0)
    Broken(spec, "microbatches", "needs the micro-batches divisible by the replicas, got m = " +
                 std::to_string(m) + " over " + std::to_string(replicas[0]));
  if (spec.layer_count > 0 && p * spec.chunks > spec.layer_count)
    Broken(spec, "stages", "more stages (" + std::to_string(p * spec.chunks) + ") than layers (" +
                     std::to_string(spec.layer_count) + ")");
  if (spec.vertical_sync && kind != ScheduleKind::kPipeDream)
    Broken(spec, "vertical_sync", "vertical sync applies to pipedream only");
  if (spec.vertical_sync &&
      std::adjacent_find(replicas.begin(), replicas.end(), std::not_equal_to<int>()) !=
          replicas.end())
    Broken(spec, "vertical_sync", "vertical sync needs the same replica count on every stage (versions are "
                 "numbered per update)");
  if (spec.batches != 0 && kind != ScheduleKind::kTwoBW)
    Broken(spec, "batches", "a count of batches applies to 2bw only");
  if (spec.batches < 0) Broken(spec, "batches", "batches must be >= 1");
  if (kind == ScheduleKind::kTwoBW) {
    const int in_flight = OptimalActiveMinibatches(replicas) * replicas[0];
    if (m < in_flight)
      Broken(spec, "microbatches", "needs at least as many micro-batches per batch as are in flight (m >= d"
                   " = " + std::to_string(in_flight) + "), got m = " + std::to_string(m));
  }
}

}  // namespace

void CheckScheduleSpec(const ScheduleSpec& spec, int repeats) {
  if (spec.stages < 1) Broken(spec, "stages", "stages must be >= 1, got " + std::to_string(spec.stages));
  if (spec.microbatches < 1)
    Broken(spec, "microbatches",
           "micro-batches must be >= 1, got " + std::to_string(spec.microbatches));
  if (spec.chunks < 1)
    Broken(spec, "chunks", "chunks must be >= 1, got " + std::to_string(spec.chunks));
  if (spec.allreduce_buckets < 1)
    Broken(spec, "allreduce_buckets", "all-reduce buckets must be >= 1, got " + std::to_string(spec.allreduce_buckets));
  const std::vector<int> replicas = CheckedReplicas(spec);
  CheckSpec(spec, replicas);
  const int batches = spec.kind == ScheduleKind::kTwoBW
                          ? (spec.batches > 0 ? spec.batches : kDefaultTwoBWBatches)
                          : 1;
  const int64_t workers = std::accumulate(replicas.begin(), replicas.end(), int64_t{0});
  if (workers > kMaxScheduleWorkers)
    Broken(spec, "replicas", "too large a schedule: " + std::to_string(workers) +
                                 " workers, more than pipetwin's limit of " +
                                 std::to_string(kMaxScheduleWorkers) + " for one schedule");
  // Every count is at most 2^24 (util/limits.h), so the product fits 64 bits.
  const int64_t compute = int64_t{spec.microbatches} * batches * spec.stages * spec.chunks * 3 *
                          std::max(repeats, 1);
  if (compute > kMaxComputeOps)
    Broken(spec, repeats > 1 ? "batches" : "microbatches",
           "too large a run: " + std::to_string(std::max(repeats, 1)) + " x " +
               std::to_string(int64_t{spec.microbatches} * batches) + " micro-batches over " +
               std::to_string(spec.stages * spec.chunks) + " stages are " +
               std::to_string(compute) + " compute ops, more than pipetwin's limit of " +
               std::to_string(kMaxComputeOps) +
               " for one run's lists (fewer iterations or micro-batches)");
}

PipelineSchedule BuildSchedule(const ScheduleSpec& spec) {
  CheckScheduleSpec(spec);
  const std::vector<int> replicas = CheckedReplicas(spec);
  const int batches = spec.kind == ScheduleKind::kTwoBW
                          ? (spec.batches > 0 ? spec.batches : kDefaultTwoBWBatches)
                          : 1;
  const long total = static_cast<long>(spec.microbatches) * batches;
  const int per_batch = spec.kind == ScheduleKind::kPipeDream ? 1 : spec.microbatches;
  PipelineSchedule s = Skeleton(spec, replicas, static_cast<int>(total), per_batch);

  using schedule_internal::VersionPolicy;
  VersionPolicy policy = VersionPolicy::kLatest;
  switch (spec.kind) {
    case ScheduleKind::kGPipe: BuildGPipe(s); break;
    case ScheduleKind::kFlush: BuildFlush(s); break;
    case ScheduleKind::kPipeDream:
      BuildPipeDream(s);
      if (spec.vertical_sync) policy = VersionPolicy::kVerticalSync;
      break;
    case ScheduleKind::kTwoBW:
      BuildTwoBW(s);
      policy = VersionPolicy::kTwoBuffer;
      break;
    case ScheduleKind::kInterleaved: BuildInterleaved(s); break;
    case ScheduleKind::kZeroBubbleH1: BuildZeroBubbleH1(s); break;
    case ScheduleKind::kImported: break;
  }
  if (spec.recompute) InsertRecompute(s);
  for (WorkerProgram& w : s.workers)
    for (Op& op : w.ops)
      if (op.kind == OpKind::kAllReduce) op.buckets = spec.allreduce_buckets;
  schedule_internal::AssignWeightVersions(s, policy);
  schedule_internal::PlaceCommunication(s);
  return s;
}

}  // namespace pipetwin
