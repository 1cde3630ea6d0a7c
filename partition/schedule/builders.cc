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
  s.weight_stashing = spec.weight_stashing;
  // Without stashing a backward reruns its forward on the latest weights (spec.h).
  s.recompute = spec.recompute || !spec.weight_stashing;
  s.recompute_timing = spec.recompute_timing;
  s.send_mode = spec.send_mode;
  int worker = 0;
  for (int stage = 0; stage < spec.stages; ++stage) {
    for (int r = 0; r < replicas[stage]; ++r) {
      WorkerProgram w;
      w.worker = worker++;
      w.stage = stage;
      w.replica = r;
      for (int c = 0; c < spec.chunks; ++c)
        w.model_stages.push_back(ModelStageOf(spec.kind, spec.stages, stage, c));
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

// The looped 1F1B family, torch.distributed.pipelining's _get_1f1b_rank_ops: the worker at
// position r of p holds v chunks (model stages r, r + p, ...). Its m micro-batches go in rounds
// of n = m / max(1, floor(m / p)) (n = p when p divides m; torch's flexible rounds, which need n
// to divide m). Forward step k runs chunk floor(k / n) mod v, backwards visit the chunks in
// reverse; each chunk takes its micro-batches in order. Warm-up: (v - 1) n + f (p - 1 - r)
// forwards, capped at m v, then one forward and one backward at a time, then the remaining
// backwards.
//   - interleaved 1F1B (Narayanan et al., SC'21, section 2.2; Megatron-LM
//     forward_backward_pipelining_with_interleaving; torch ScheduleInterleaved1F1B): f = 2;
//   - with the backward split (Qi et al., ICLR 2024; torch ScheduleInterleavedZeroBubble, "ZB1P"):
//     f = 1, and from the worker's (r + 1)-th backward on each backward-input is followed by the
//     weight pass of the oldest backward still without one; the rest come at the end. With
//     v = 1 this is ZB-H1 (section 2.1): stage r delays its W passes by r micro-batches, so
//     every stage holds p activations at most (1F1B's peak, on its first stage) and the W
//     passes fill the cool-down bubble;
//   - ZB-H2 (section 2.2), v = 1: f = 2, and the W passes lag by 2r, so step x of stage r runs
//     F(x), I(x - 2(p - 1 - r)), W(x - 2(p - 1)): the extra warm-up forwards fill the bubble
//     before the first backward, every stage holds 2p - 1 activations, and with F = I = W
//     iterations run back to back without a bubble (the paper's parallelogram).
// With data parallelism (every stage replicated d times, as Megatron replicates the whole
// pipeline) each replica runs this order over its own m / d micro-batches (k = q, q + d, ...).
void BuildLoopedOneFOneB(PipelineSchedule& s, int warmup_factor, bool zero_bubble) {
  const int p = s.stages, v = s.chunks;
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    const int m = static_cast<int>(mine.size());
    const int per_round = MicrobatchesPerRound(p, m);
    const int total = m * v;
    const int warmup = std::min((v - 1) * per_round + warmup_factor * (p - 1 - w.stage), total);
    std::vector<int> next_forward(v, 0), next_backward(v, 0), next_weight(v, 0);
    std::vector<int> backward_chunks;  // the chunk of each backward so far, in order
    size_t weights_done = 0;
    auto push = [&](OpKind kind, int c, std::vector<int>& next) {
      w.ops.push_back(MakeOp(kind, ModelStageOf(s.kind, p, w.stage, c), c, mine[next[c]++]));
    };
    auto backward = [&](int k) {
      const int c = v - 1 - ((k - warmup) / per_round) % v;
      push(zero_bubble ? OpKind::kBackwardInput : OpKind::kBackward, c, next_backward);
      backward_chunks.push_back(c);
      if (zero_bubble && k - warmup >= warmup_factor * w.stage)
        push(OpKind::kBackwardWeight, backward_chunks[weights_done++], next_weight);
    };
    for (int k = 0; k < total + warmup; ++k) {
      if (k < total) push(OpKind::kForward, (k / per_round) % v, next_forward);
      if (k >= warmup) backward(k);
    }
    while (zero_bubble && weights_done < backward_chunks.size())
      push(OpKind::kBackwardWeight, backward_chunks[weights_done++], next_weight);
    AppendSync(s, w);
  }
}

// Breadth-first looped pipeline (Lamy-Poirier, "Breadth-First Pipeline Parallelism", 2022;
// torch ScheduleLoopedBFS): chunk by chunk, every micro-batch's forward; then the chunks in
// reverse, each with its micro-batches' backwards in reverse. Like GPipe it keeps every
// micro-batch's activations of every chunk until the backward.
void BuildLoopedBFS(PipelineSchedule& s) {
  const int p = s.stages, v = s.chunks;
  for (auto& w : s.workers) {
    const auto mine = MicrobatchesOf(s, w);
    for (int c = 0; c < v; ++c)
      for (int k : mine)
        w.ops.push_back(MakeOp(OpKind::kForward, ModelStageOf(s.kind, p, w.stage, c), c, k));
    for (int c = v - 1; c >= 0; --c)
      for (auto k = mine.rbegin(); k != mine.rend(); ++k)
        w.ops.push_back(MakeOp(OpKind::kBackward, ModelStageOf(s.kind, p, w.stage, c), c, *k));
    AppendSync(s, w);
  }
}

// Appends one worker's compute ops of a V schedule (two chunks: 0 going down the workers, 1
// coming back up) by chunk and per-chunk micro-batch counter; a counter past the worker's
// micro-batches appends nothing (ZB-V's order is built for at least 2p - 1 of them).
// Under DualPipe chunk 1 takes the micro-batches of the worker's mirror partner (kind.h).
class VOrder {
 public:
  VOrder(const PipelineSchedule& s, WorkerProgram& w) : s_(s), w_(w) {
    mine_[0] = MicrobatchesOf(s, w);
    if (s.kind != ScheduleKind::kDualPipe) {
      mine_[1] = mine_[0];
      return;
    }
    WorkerProgram partner = w;
    partner.replica = DualPipePartner(s.replicas[w.stage], w.replica);
    mine_[1] = MicrobatchesOf(s, partner);
  }
  int microbatches() const { return static_cast<int>(mine_[0].size()); }
  // The op `kind` of chunk c on its micro-batch `index` (in the worker's own order).
  void Push(OpKind kind, int c, int index) {
    if (index >= static_cast<int>(mine_[c].size())) return;
    w_.ops.push_back(
        MakeOp(kind, ModelStageOf(s_.kind, s_.stages, w_.stage, c), c, mine_[c][index]));
  }

 private:
  const PipelineSchedule& s_;
  WorkerProgram& w_;
  std::vector<int> mine_[2];
};

// ZB-V (Qi et al., ICLR 2024, section 6; torch ScheduleZBVZeroBubble): worker r of p holds
// model stages r and 2p - 1 - r. Warm-up: 2(p - r) - 1 forwards of chunk 0, then r pairs
// F1 F0, then p - r rounds of F1 I1 W1; steady state F0 I0 W0 F1 I1 W1 until every forward has
// run; cool-down: r pairs I0 I1, p - r pairs I0 W0, then the W passes left (chunk 1's first).
// Built over n = max(2p - 1, m) micro-batches, those past m left out (as torch does). With F, I
// and W of equal time it has no bubble in the steady state and holds 2p chunk activations on
// every worker, 1F1B's peak of p whole stages (section 6).
void BuildZeroBubbleV(PipelineSchedule& s) {
  const int p = s.stages;
  for (auto& w : s.workers) {
    VOrder order(s, w);
    const int r = w.stage, n = std::max(2 * p - 1, order.microbatches());
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    for (int i = 0; i < 2 * (p - r) - 1; ++i) order.Push(OpKind::kForward, 0, f0++);
    for (int i = 0; i < r; ++i) {
      order.Push(OpKind::kForward, 1, f1++);
      order.Push(OpKind::kForward, 0, f0++);
    }
    for (int i = 0; i < p - r; ++i) {
      order.Push(OpKind::kForward, 1, f1++);
      order.Push(OpKind::kBackwardInput, 1, b1);
      order.Push(OpKind::kBackwardWeight, 1, b1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n) order.Push(OpKind::kForward, 0, f0++);
      order.Push(OpKind::kBackwardInput, 0, b0);
      order.Push(OpKind::kBackwardWeight, 0, b0++);
      order.Push(OpKind::kForward, 1, f1++);
      order.Push(OpKind::kBackwardInput, 1, b1);
      order.Push(OpKind::kBackwardWeight, 1, b1++);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < r; ++i) {
      order.Push(OpKind::kBackwardInput, 0, b0++);
      order.Push(OpKind::kBackwardInput, 1, b1++);
    }
    for (int i = 0; i < p - r; ++i) {
      order.Push(OpKind::kBackwardInput, 0, b0++);
      order.Push(OpKind::kBackwardWeight, 0, w0++);
    }
    while (w1 < b1) order.Push(OpKind::kBackwardWeight, 1, w1++);
    while (w0 < b0) order.Push(OpKind::kBackwardWeight, 0, w0++);
    AppendSync(s, w);
  }
}

// DualPipeV (DeepSeek-V3 technical report, section 3.2.1, DualPipe; its V form from
// deepseek-ai/DualPipe, as torch ScheduleDualPipeV builds it): worker r of p holds model stages r
// and 2p - 1 - r, m >= 2p. Eight phases: 2(p - r - 1) forwards of chunk 0; r + 1 pairs F0 F1;
// p - r - 1 rounds I1 W F1; m - 2p + r + 1 rounds of F0 with B1 then F1 with B0 (DualPipe's
// overlapped forward and backward chunks: here one after the other, as torch's runtime runs
// them without a custom function); p - r - 1 rounds B1, F1 with B0; r + 1 pairs of chunk 1's and
// chunk 0's backward, split into I (W queued) from the middle pair on; p - r - 1 rounds of a
// queued W and a chunk-0 backward; the queued W passes left. B is a full backward, I the
// input-gradient half whose W comes later from the queue, oldest first.
//
// DualPipe (bidirectional) is this order on each worker of its mirror pairs, p = PP/2 and m the
// worker's half of the micro-batches (VOrder gives chunk 1 the partner's); deepseek-ai/DualPipe
// dualpipe.py runs the same eight steps with half_rank for r and half_num_chunks for m.
void BuildDualPipeV(PipelineSchedule& s) {
  const int p = s.stages;
  for (auto& w : s.workers) {
    VOrder order(s, w);
    const int r = w.stage, m = order.microbatches();
    int forward[2] = {0, 0}, backward[2] = {0, 0};
    std::vector<std::pair<int, int>> weights;  // queued W passes: (chunk, index), oldest first
    size_t weights_done = 0;
    auto F = [&](int c) { order.Push(OpKind::kForward, c, forward[c]++); };
    auto B = [&](int c, bool split) {
      if (split) weights.push_back({c, backward[c]});
      order.Push(split ? OpKind::kBackwardInput : OpKind::kBackward, c, backward[c]++);
    };
    auto queued_weight = [&]() {
      if (weights_done == weights.size()) return;
      const auto [c, index] = weights[weights_done++];
      order.Push(OpKind::kBackwardWeight, c, index);
    };
    for (int i = 0; i < 2 * (p - r - 1); ++i) F(0);
    for (int i = 0; i < r + 1; ++i) F(0), F(1);
    for (int i = 0; i < p - r - 1; ++i) B(1, true), queued_weight(), F(1);
    for (int i = 0; i < m - 2 * p + r + 1; ++i) {
      F(0), B(1, false);  // on the last worker the first pair is not overlapped; same order here
      F(1), B(0, false);
    }
    for (int i = 0; i < p - r - 1; ++i) B(1, false), F(1), B(0, false);
    bool split = false;
    const int pairs = r + 1;
    for (int i = 0; i < pairs; ++i) {
      if (i == pairs / 2 && r % 2 == 1) split = true;
      B(1, split);
      if (i == pairs / 2 && r % 2 == 0) split = true;
      B(0, split);
    }
    for (int i = 0; i < p - r - 1; ++i) queued_weight(), B(0, split);
    for (int i = 0; i < r + 1; ++i) queued_weight();
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

// Whether each replica runs the order over its own micro-batches (the looped, zero-bubble and V
// kinds), so that data parallelism must replicate the whole pipeline.
bool RunsOrderPerReplica(ScheduleKind kind, int chunks) {
  return kind == ScheduleKind::kZeroBubbleH1 || kind == ScheduleKind::kZeroBubbleH2 ||
         chunks > 1 || TakesChunkCount(kind) || IsVShaped(kind);
}

// A broken rule of the spec, naming the spec's field it concerns (ScheduleSpecError).
[[noreturn]] void Broken(const ScheduleSpec& spec, const char* field, const std::string& rule) {
  throw ScheduleSpecError(field, "schedule " + ScheduleKindName(spec.kind) + ": " + rule);
}

std::vector<int> CheckedReplicas(const ScheduleSpec& spec) {
  std::vector<int> replicas = spec.replicas;
  if (replicas.empty()) replicas.assign(spec.stages, spec.kind == ScheduleKind::kDualPipe ? 2 : 1);
  if (static_cast<int>(replicas.size()) != spec.stages)
    Broken(spec, "replicas", "the replica counts list " + std::to_string(replicas.size()) +
                                 " stages for a pipeline of " + std::to_string(spec.stages) +
                                 " (one count per stage)");
  for (size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i] < 1)
      Broken(spec, "replicas", "stage " + std::to_string(i) + " has " + std::to_string(replicas[i]) +
                       " replicas (at least 1)");
  if (spec.kind == ScheduleKind::kDualPipe)
    for (size_t i = 0; i < replicas.size(); ++i)
      if (replicas[i] % 2 != 0)
        Broken(spec, "replicas", "position " + std::to_string(i) + " has " +
                                     std::to_string(replicas[i]) +
                                     " workers: DualPipe's come in mirror pairs (an even count)");
  const int workers = std::accumulate(replicas.begin(), replicas.end(), 0);
  if (spec.worker_count > 0 && workers != spec.worker_count)
    Broken(spec, "replicas", "the replicas need " + std::to_string(workers) + " workers but there are " +
                     std::to_string(spec.worker_count));
  const bool replicated = workers > spec.stages;
  if (replicated && RunsOrderPerReplica(spec.kind, spec.chunks) &&
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
  if (spec.chunks > 1 && !TakesChunkCount(kind) && !IsVShaped(kind))
    Broken(spec, "chunks", "model chunks per worker apply to interleaved, looped-bfs and "
                           "interleaved-zb (and zb-v and dualpipe-v, which have two)");
  if (kind == ScheduleKind::kInterleaved && spec.chunks < 2)
    Broken(spec, "chunks", "needs at least 2 model chunks per worker, got " +
                     std::to_string(spec.chunks));
  if (IsVShaped(kind) && spec.chunks != 2)
    Broken(spec, "chunks", "runs exactly 2 model chunks per worker (a V), got " +
                     std::to_string(spec.chunks));
  if (RunsOrderPerReplica(kind, spec.chunks) && m % replicas[0] != 0)
    Broken(spec, "microbatches", "needs the micro-batches divisible by the replicas, got m = " +
                 std::to_string(m) + " over " + std::to_string(replicas[0]));
  const int local = m / replicas[0];  // each replica's micro-batches
  const bool looped_1f1b = kind == ScheduleKind::kInterleaved ||
                           kind == ScheduleKind::kInterleavedZeroBubble;
  if (looped_1f1b && local % MicrobatchesPerRound(p, local) != 0)
    Broken(spec, "microbatches",
           "needs each replica's micro-batches in rounds of equal size: m / max(1, floor(m / p))"
           " whole (torch's rounds; any multiple of the stage count does), got m = " +
               std::to_string(local) + " per replica, p = " + std::to_string(p));
  if (kind == ScheduleKind::kDualPipe && local < 2 * p)
    Broken(spec, "microbatches", "needs at least twice as many micro-batches per pipeline as "
                 "ranks (M >= 2PP = " + std::to_string(4 * p) + ", M/2 in each direction), got M = " +
                 std::to_string(2 * local));
  if (kind == ScheduleKind::kDualPipeV && local < 2 * p)
    Broken(spec, "microbatches", "needs at least as many micro-batches per replica as model "
                 "stages (m >= 2p = " + std::to_string(2 * p) + "), got m = " +
                 std::to_string(local));
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
  if (!spec.weight_stashing && kind != ScheduleKind::kPipeDream)
    Broken(spec, "weight_stashing", "only pipedream can run without weight stashing (expected true)");
  if (!spec.weight_stashing && spec.vertical_sync)
    Broken(spec, "weight_stashing", "vertical sync runs forwards on older versions, which must be "
                 "stashed (expected true with vertical_sync)");
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

std::vector<int> PositionReplicas(ScheduleKind kind, int chunks,
                                  const std::vector<int>& stage_replicas) {
  const int stages = static_cast<int>(stage_replicas.size());
  if (kind != ScheduleKind::kDualPipe)
    return std::vector<int>(stage_replicas.begin(),
                            stage_replicas.begin() + stages / std::max(chunks, 1));
  if (stages % 2 != 0)
    throw ScheduleSpecError("stages", "schedule dualpipe: needs an even number of stages (ranks "
                                      "in mirror pairs), got " + std::to_string(stages));
  std::vector<int> replicas;
  for (int h = 0; h < stages / 2; ++h) {
    const int mirror = stages - 1 - h;
    if (stage_replicas[h] != stage_replicas[mirror])
      throw ScheduleSpecError(
          "replicas", "schedule dualpipe: stage " + std::to_string(h) + " and its mirror stage " +
                          std::to_string(mirror) + " need as many replicas (each copy of the "
                          "weights runs one direction), got " + std::to_string(stage_replicas[h]) +
                          " and " + std::to_string(stage_replicas[mirror]));
    replicas.push_back(2 * stage_replicas[h]);
  }
  return replicas;
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
      if (!spec.weight_stashing) policy = VersionPolicy::kLatestEverywhere;
      break;
    case ScheduleKind::kTwoBW:
      BuildTwoBW(s);
      policy = VersionPolicy::kTwoBuffer;
      break;
    case ScheduleKind::kInterleaved: BuildLoopedOneFOneB(s, 2, false); break;
    case ScheduleKind::kZeroBubbleH1:
    case ScheduleKind::kInterleavedZeroBubble: BuildLoopedOneFOneB(s, 1, true); break;
    case ScheduleKind::kZeroBubbleH2: BuildLoopedOneFOneB(s, 2, true); break;
    case ScheduleKind::kLoopedBFS: BuildLoopedBFS(s); break;
    case ScheduleKind::kZeroBubbleV: BuildZeroBubbleV(s); break;
    case ScheduleKind::kDualPipeV:
    case ScheduleKind::kDualPipe: BuildDualPipeV(s); break;
    case ScheduleKind::kImported: break;
  }
  if (s.recompute) InsertRecompute(s);
  for (WorkerProgram& w : s.workers)
    for (Op& op : w.ops)
      if (op.kind == OpKind::kAllReduce) op.buckets = spec.allreduce_buckets;
  schedule_internal::AssignWeightVersions(s, policy);
  schedule_internal::PlaceCommunication(s);
  return s;
}

}  // namespace pipetwin
