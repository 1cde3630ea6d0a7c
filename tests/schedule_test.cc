// Schedule builders: per-rank orders against torch.distributed.pipelining and Megatron-LM, weight
// versions and staleness against the papers' formulas, memory bounds. Expected values are
// computed here from the formulas, independently of the builders.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/op.h"
#include "partition/schedule/build.h"
#include "partition/schedule/check.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {
namespace {

using Order = std::vector<std::string>;

std::string A(int stage, const char* type, int mb) {
  return std::to_string(stage) + type + std::to_string(mb);
}

// A worker's compute actions in torch notation, in list order.
Order ComputeOrder(const WorkerProgram& w) {
  Order order;
  for (const Op& op : w.ops)
    if (IsComputeOp(op.kind) && op.kind != OpKind::kRecompute) order.push_back(ActionName(op));
  return order;
}

PipelineSchedule Build(ScheduleKind kind, int p, int m, std::vector<int> replicas = {},
                       int chunks = 1, bool vertical_sync = false, int batches = 0) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.stages = p;
  spec.microbatches = m;
  spec.replicas = std::move(replicas);
  spec.chunks = chunks;
  spec.vertical_sync = vertical_sync;
  spec.batches = batches;
  return BuildSchedule(spec);
}

// --- golden orders derived from the field's code -------------------------------------------

// Megatron-LM, megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving: num_warmup = min(p - rank - 1, m), then
// num_microbatches_remaining times (forward_step, backward_step), then the warm-up backwards.
Order MegatronOneFOneB(int p, int m, int rank) {
  Order o;
  const int warmup = std::min(p - rank - 1, m), remaining = m - warmup;
  for (int i = 0; i < warmup; ++i) o.push_back(A(rank, "F", i));
  for (int i = 0; i < remaining; ++i) {
    o.push_back(A(rank, "F", warmup + i));
    o.push_back(A(rank, "B", i));
  }
  for (int i = 0; i < warmup; ++i) o.push_back(A(rank, "B", remaining + i));
  return o;
}

// torch/distributed/pipelining/schedules.py, Schedule1F1B._step_microbatches (what torch runs;
// requires m >= p): warmup_chunks = min(m, p - stage) forwards, then "1B1F" (a backward, then a
// forward while forwards remain), then the cool-down backwards. (The _get_pipeline_order helper
// of the same class starts the last rank at F1, an off-by-one in that display-only IR.)
Order TorchOneFOneB(int p, int m, int rank) {
  Order o;
  int fwd = 0, bwd = 0;
  const int warmup = std::min(m, p - rank);
  for (int i = 0; i < warmup; ++i) o.push_back(A(rank, "F", fwd++));
  while (true) {
    o.push_back(A(rank, "B", bwd++));
    if (fwd == m) break;
    o.push_back(A(rank, "F", fwd++));
  }
  while (bwd < m) o.push_back(A(rank, "B", bwd++));
  return o;
}

// torch ScheduleGPipe._step_microbatches / _get_pipeline_order: all forwards, then all
// backwards in ascending micro-batch order.
Order TorchGPipe(int m, int rank) {
  Order o;
  for (int i = 0; i < m; ++i) o.push_back(A(rank, "F", i));
  for (int i = 0; i < m; ++i) o.push_back(A(rank, "B", i));
  return o;
}

// torch ScheduleInterleaved1F1B._calculate_single_rank_operations with _get_warmup_ops
// (multiply_factor 2) and _get_1f1b_rank_ops: per-stage micro-batch counters, the stage of
// step k is ((k // mpr) % v) * p + rank forward and (v - 1 - ((k - warmup) // mpr) % v) * p +
// rank backward, with rounds = max(1, m // p) and mpr = m // rounds.
// ScheduleInterleavedZeroBubble is the same with multiply_factor 1, I in place of B, and the W of
// the backwards in order once (op - warmup) >= rank, the rest at the end.
Order TorchInterleaved(int p, int v, int m, int rank, bool zero_bubble) {
  const int rounds = std::max(1, m / p), mpr = m / rounds;
  const int warmup = std::min((v - 1) * mpr + (zero_bubble ? 1 : 2) * (p - 1 - rank), m * v);
  const int fwd_bwd = m * v - warmup;
  std::map<int, int> fwd_mb, bwd_mb, w_mb;
  std::vector<int> backward_stages;
  Order o;
  auto fstage = [&](int k) { return ((k / mpr) % v) * p + rank; };
  auto bstage = [&](int k) { return (v - 1 - ((k - warmup) / mpr) % v) * p + rank; };
  size_t weights = 0;
  auto backward = [&](int op) {
    int s = bstage(op);
    o.push_back(A(s, zero_bubble ? "I" : "B", bwd_mb[s]++));
    backward_stages.push_back(s);
    if (zero_bubble && op - warmup >= rank) {
      int ws = backward_stages[weights++];
      o.push_back(A(ws, "W", w_mb[ws]++));
    }
  };
  for (int op = 0; op < warmup + fwd_bwd + warmup; ++op) {
    if (op < warmup) {
      o.push_back(A(fstage(op), "F", fwd_mb[fstage(op)]++));
    } else if (op < warmup + fwd_bwd) {
      o.push_back(A(fstage(op), "F", fwd_mb[fstage(op)]++));
      backward(op);
    } else {
      backward(op);
    }
  }
  while (zero_bubble && weights < backward_stages.size()) {
    int ws = backward_stages[weights++];
    o.push_back(A(ws, "W", w_mb[ws]++));
  }
  return o;
}

TEST(ScheduleOrderTest, FlushIsMegatronAndTorchOneFOneB) {
  for (int p = 1; p <= 32; ++p) {
    for (int m = 1; m <= 4 * p; ++m) {
      PipelineSchedule s = Build(ScheduleKind::kFlush, p, m);
      for (int r = 0; r < p; ++r) {
        const Order ours = ComputeOrder(s.workers[r]);
        ASSERT_EQ(ours, MegatronOneFOneB(p, m, r)) << "p=" << p << " m=" << m << " rank " << r;
        if (m >= p) {
          ASSERT_EQ(ours, TorchOneFOneB(p, m, r)) << "p=" << p << " m=" << m;
        }
      }
    }
  }
}

TEST(ScheduleOrderTest, GPipeIsTorchGPipe) {
  for (int p = 1; p <= 16; ++p)
    for (int m = 1; m <= 4 * p; ++m) {
      PipelineSchedule s = Build(ScheduleKind::kGPipe, p, m);
      for (int r = 0; r < p; ++r) ASSERT_EQ(ComputeOrder(s.workers[r]), TorchGPipe(m, r));
    }
}

TEST(ScheduleOrderTest, InterleavedIsTorchInterleaved1F1B) {
  for (int p = 1; p <= 8; ++p)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 4 * p; m += p) {
        PipelineSchedule s = Build(ScheduleKind::kInterleaved, p, m, {}, v);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(ComputeOrder(s.workers[r]), TorchInterleaved(p, v, m, r, false))
              << "p=" << p << " v=" << v << " m=" << m << " rank " << r;
      }
}

TEST(ScheduleOrderTest, ZeroBubbleH1IsTorchZeroBubbleWithOneStagePerRank) {
  for (int p = 1; p <= 16; ++p)
    for (int m = 1; m <= 4 * p; ++m) {
      PipelineSchedule s = Build(ScheduleKind::kZeroBubbleH1, p, m);
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(ComputeOrder(s.workers[r]), TorchInterleaved(p, 1, m, r, true))
            << "p=" << p << " m=" << m << " rank " << r;
    }
}

// Data parallelism replicates the whole pipeline (Megatron-LM): replica q of every stage runs the
// unreplicated order over its own micro-batches q, q + d, q + 2d, ... (torch's order over m / d
// micro-batches, each index j read as q + j d).
Order OnReplica(const Order& order, int d, int q) {
  Order out;
  for (const std::string& a : order) {
    const size_t digits = a.find_last_not_of("0123456789") + 1;
    out.push_back(a.substr(0, digits) + std::to_string(q + std::stoi(a.substr(digits)) * d));
  }
  return out;
}

TEST(ScheduleOrderTest, ReplicatedInterleavedAndZeroBubbleRunTheOrderPerReplica) {
  for (int p = 1; p <= 4; ++p)
    for (int d = 2; d <= 3; ++d)
      for (int v = 1; v <= 3; ++v) {
        const int m = 2 * p * d;
        const bool zb = v == 1;
        PipelineSchedule s = Build(zb ? ScheduleKind::kZeroBubbleH1 : ScheduleKind::kInterleaved,
                                   p, m, std::vector<int>(p, d), zb ? 1 : v);
        for (const WorkerProgram& w : s.workers)
          ASSERT_EQ(ComputeOrder(w),
                    OnReplica(TorchInterleaved(p, v, m / d, w.stage, zb), d, w.replica))
              << "p=" << p << " d=" << d << " v=" << v << " worker " << w.worker;
      }
}

// The kinds added from torch's classes (their unreplicated orders are compared with torch itself
// by tests/scripts/torch_schedules_test.py) replicate the whole pipeline the same way: replica q
// of every stage runs the unreplicated order over micro-batches q, q + d, ...; and the lists
// check.
TEST(ScheduleOrderTest, ReplicatedTorchKindsRunTheOrderPerReplica) {
  for (ScheduleKind kind : {ScheduleKind::kLoopedBFS, ScheduleKind::kInterleavedZeroBubble,
                            ScheduleKind::kZeroBubbleV, ScheduleKind::kDualPipeV})
    for (int p = 1; p <= 4; ++p)
      for (int d = 2; d <= 3; ++d) {
        const int v = 2, m = 2 * p * d;
        PipelineSchedule one = Build(kind, p, m / d, {}, v);
        PipelineSchedule s = Build(kind, p, m, std::vector<int>(p, d), v);
        ASSERT_NO_THROW(CheckSchedule(s));
        for (const WorkerProgram& w : s.workers)
          ASSERT_EQ(ComputeOrder(w), OnReplica(ComputeOrder(one.workers[w.stage]), d, w.replica))
              << ScheduleKindName(kind) << " p=" << p << " d=" << d << " worker " << w.worker;
      }
}

// A literal golden, p = 2 and m = 3, so the notation itself is pinned down.
TEST(ScheduleOrderTest, LiteralOneFOneBForTwoStages) {
  PipelineSchedule s = Build(ScheduleKind::kFlush, 2, 3);
  EXPECT_EQ(ComputeOrder(s.workers[0]), (Order{"0F0", "0F1", "0B0", "0F2", "0B1", "0B2"}));
  EXPECT_EQ(ComputeOrder(s.workers[1]), (Order{"1F0", "1B0", "1F1", "1B1", "1F2", "1B2"}));
}

// --- weight versions, staleness, memory ---------------------------------------------------

// Version of each forward and backward, by (stage, micro-batch), checking backward == forward.
std::map<std::pair<int, int>, int> Versions(const PipelineSchedule& s) {
  std::map<std::pair<int, int>, int> forward;
  for (const auto& w : s.workers)
    for (const Op& op : w.ops) {
      if (op.kind == OpKind::kForward) forward[{op.stage, op.microbatch}] = op.weight_version;
      if (IsBackwardOp(op.kind)) {
        EXPECT_EQ(op.weight_version, (forward[{op.stage, op.microbatch}]))
            << "backward and forward of stage " << op.stage << " mb " << op.microbatch;
      }
    }
  return forward;
}

TEST(ScheduleWeightsTest, FlushingSchedulesUseOneVersionWithNoStaleness) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kZeroBubbleH1}) {
    for (int p = 1; p <= 12; ++p)
      for (int m = 1; m <= 4 * p; m += 3) {
        PipelineSchedule s = Build(kind, p, m);
        for (const auto& [id, v] : Versions(s)) ASSERT_EQ(v, 0);
        for (const StageSummary& r : AnalyzeSchedule(s)) {
          ASSERT_EQ(r.max_weight_versions, 1);
          ASSERT_EQ(r.staleness_max, 0);
          ASSERT_EQ(r.updates, 1);
        }
      }
  }
}

TEST(ScheduleWeightsTest, PipeDreamStashesWeightsWithDelayDMinus1MinusS) {
  for (int d = 1; d <= 32; ++d) {
    for (int M = 1; M <= 4 * d; M += (d > 8 ? 5 : 1)) {
      for (bool vertical : {false, true}) {
        PipelineSchedule s = Build(ScheduleKind::kPipeDream, d, M, {}, 1, vertical);
        // PipeDream SOSP'19 section 3.3: stage s runs d-1-s backwards (and updates) between a
        // minibatch's forward and its backward, so minibatch k's forward sees the version after
        // max(0, k - (d-1-s)) updates; vertical sync uses the input stage's version everywhere.
        for (const auto& [id, v] : Versions(s)) {
          const int stage = id.first, k = id.second;
          const int delay = vertical ? d - 1 : d - 1 - stage;
          ASSERT_EQ(v, std::max(0, k - delay)) << "d=" << d << " M=" << M << " stage " << stage;
        }
        for (const StageSummary& r : AnalyzeSchedule(s)) {
          const int delay = vertical ? d - 1 : d - 1 - r.stage;
          ASSERT_EQ(r.staleness_max, std::min(M - 1, delay)) << "d=" << d << " M=" << M;
          ASSERT_EQ(r.updates, M);
          ASSERT_EQ(r.max_in_flight_activations, std::min(d - r.stage, M));
          ASSERT_LE(r.max_weight_versions, vertical ? d : r.max_in_flight_activations);
          if (!vertical && M >= 2 * d) {
            ASSERT_EQ(r.max_weight_versions, d - r.stage);
          }
        }
      }
    }
  }
}

TEST(ScheduleWeightsTest, TwoBWUsesTwoBuffersWithDelayOne) {
  for (int d = 1; d <= 16; ++d) {
    for (int m = d; m <= 4 * d; m += 2) {
      for (int batches : {1, 2, 3}) {
        PipelineSchedule s = Build(ScheduleKind::kTwoBW, d, m, {}, 1, false, batches);
        // PipeDream-2BW (ICML'21) section 3.1: micro-batch k (from 1) uses
        // max(floor((k-1)/m) - 1, 0) for its forward and its backward.
        for (const auto& [id, v] : Versions(s)) {
          const int k = id.second + 1;
          ASSERT_EQ(v, std::max((k - 1) / m - 1, 0)) << "d=" << d << " m=" << m;
        }
        // The older buffer goes right after the backward of the last micro-batch using it.
        for (const auto& w : s.workers) {
          for (size_t i = 0; i < w.ops.size(); ++i) {
            if (w.ops[i].kind != OpKind::kReleaseWeights) continue;
            const int v = w.ops[i].weight_version;
            size_t j = i;
            while (j > 0 && !IsComputeOp(w.ops[j - 1].kind)) --j;
            ASSERT_GT(j, 0u);
            ASSERT_EQ(w.ops[j - 1].kind, OpKind::kBackward);
            ASSERT_EQ(w.ops[j - 1].weight_version, v);
            for (size_t later = i + 1; later < w.ops.size(); ++later) {
              if (IsComputeOp(w.ops[later].kind)) {
                ASSERT_NE(w.ops[later].weight_version, v);
              }
            }
          }
        }
        for (const StageSummary& r : AnalyzeSchedule(s)) {
          ASSERT_EQ(r.updates, batches);
          ASSERT_EQ(r.max_weight_versions, batches >= 2 ? 2 : 1);
          ASSERT_EQ(r.staleness_max, batches >= 2 ? 1 : 0);
          ASSERT_EQ(r.max_in_flight_activations, d - r.stage);
        }
      }
    }
  }
}

TEST(ScheduleMemoryTest, ActivationStashesPerStage) {
  for (int p = 1; p <= 32; ++p) {
    for (int m = 1; m <= 4 * p; m += (p > 8 ? 7 : 1)) {
      auto gpipe = AnalyzeSchedule(Build(ScheduleKind::kGPipe, p, m));
      auto flush = AnalyzeSchedule(Build(ScheduleKind::kFlush, p, m));
      auto zb = AnalyzeSchedule(Build(ScheduleKind::kZeroBubbleH1, p, m));
      int zb_peak = 0;
      for (int s = 0; s < p; ++s) {
        ASSERT_EQ(gpipe[s].max_in_flight_activations, m);
        ASSERT_EQ(flush[s].max_in_flight_activations, std::min(p - s, m));
        ASSERT_LE(zb[s].max_in_flight_activations, std::min(p, m));
        zb_peak = std::max(zb_peak, zb[s].max_in_flight_activations);
      }
      // ZB-H1 keeps 1F1B's peak (ICLR'24 section 2.1).
      ASSERT_EQ(zb_peak, flush[0].max_in_flight_activations);
    }
  }
}

TEST(ScheduleMemoryTest, InterleavedHoldsWarmupPlusOneChunks) {
  for (int p = 1; p <= 8; ++p)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 4 * p; m += p) {
        auto report = AnalyzeSchedule(Build(ScheduleKind::kInterleaved, p, m, {}, v));
        for (int s = 0; s < p; ++s)
          ASSERT_EQ(report[s].max_in_flight_activations,
                    std::min(2 * (p - 1 - s) + (v - 1) * p + 1, m * v));
      }
}

TEST(ScheduleMemoryTest, RecomputeKeepsOnlyStageInputs) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kGPipe;
  spec.stages = 4;
  spec.microbatches = 6;
  spec.recompute = true;
  PipelineSchedule s = BuildSchedule(spec);
  for (const auto& w : s.workers) {
    int recomputes = 0;
    for (size_t i = 0; i < w.ops.size(); ++i) {
      if (w.ops[i].kind == OpKind::kStashActivation) {
        EXPECT_TRUE(w.ops[i].input_only);
      }
      if (w.ops[i].kind == OpKind::kRecompute) ++recomputes;
      if (w.ops[i].kind == OpKind::kBackward) {
        // The compute op right before each backward is the recompute of its micro-batch (only
        // communication may sit between them).
        size_t j = i;
        while (j > 0 && !IsComputeOp(w.ops[j - 1].kind)) --j;
        ASSERT_GT(j, 0u);
        EXPECT_EQ(w.ops[j - 1].kind, OpKind::kRecompute);
        EXPECT_EQ(w.ops[j - 1].microbatch, w.ops[i].microbatch);
      }
    }
    EXPECT_EQ(recomputes, 6);
  }
  for (const auto& r : AnalyzeSchedule(s)) EXPECT_EQ(r.max_in_flight_activations, 6);
}

// --- replicated stages: 1F1B-RR -------------------------------------------------------------

TEST(ScheduleReplicationTest, PipeDreamRoundRobinAndNoam) {
  const std::vector<std::vector<int>> configs = {
      {2, 1}, {1, 2}, {3, 1}, {2, 2}, {3, 1, 1}, {1, 3, 2}, {4, 2, 1, 1}, {2, 1, 2, 1}, {1, 1, 4}};
  for (const auto& replicas : configs) {
    const int workers = std::accumulate(replicas.begin(), replicas.end(), 0);
    const int noam = (workers + replicas[0] - 1) / replicas[0];
    EXPECT_EQ(OptimalActiveMinibatches(replicas), noam);
    for (int M = 1; M <= 4 * workers; ++M) {
      PipelineSchedule s = Build(ScheduleKind::kPipeDream, static_cast<int>(replicas.size()), M,
                                 replicas);
      ASSERT_NO_THROW(CheckSchedule(s));
      for (const auto& w : s.workers) {
        const int r_s = replicas[w.stage];
        const int in_flight = InFlightTarget(replicas, w.stage);
        int forwards_before_first_backward = 0, allreduces = 0, updates = 0;
        bool seen_backward = false;
        for (const Op& op : w.ops) {
          if (IsComputeOp(op.kind)) {
            // Round robin: minibatch k on replica k mod r; backward returns to its replica.
            ASSERT_EQ(op.microbatch % r_s, w.replica);
            // Version: the replica's updates before its j-th forward, j = k div r.
            const int j = op.microbatch / r_s;
            ASSERT_EQ(op.weight_version, std::max(0, j - (in_flight - 1)));
          }
          if (op.kind == OpKind::kForward && !seen_backward) ++forwards_before_first_backward;
          if (op.kind == OpKind::kBackward) seen_backward = true;
          if (op.kind == OpKind::kAllReduce) ++allreduces;
          if (op.kind == OpKind::kUpdate) ++updates;
        }
        const int mine = (M - w.replica + r_s - 1) / r_s;
        const int rounds = (M + r_s - 1) / r_s;
        if (w.stage == 0) {
          ASSERT_EQ(forwards_before_first_backward, std::min(noam, mine));
        }
        ASSERT_EQ(updates, rounds);
        ASSERT_EQ(allreduces, r_s > 1 ? rounds : 0);
      }
      for (const StageSummary& r : AnalyzeSchedule(s)) {
        const int rounds = (M + replicas[r.stage] - 1) / replicas[r.stage];
        ASSERT_EQ(r.staleness_max, std::min(rounds - 1, InFlightTarget(replicas, r.stage) - 1));
        ASSERT_LE(r.max_weight_versions, r.max_in_flight_activations);
      }
    }
  }
}

TEST(ScheduleReplicationTest, SynchronousKindsAllReduceOncePerBatch) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kTwoBW}) {
    for (const std::vector<int>& replicas : {std::vector<int>{2, 1}, {1, 2, 1}, {2, 2, 2}}) {
      const int p = static_cast<int>(replicas.size());
      for (int m = 6; m <= 12; m += 3) {
        PipelineSchedule s = Build(kind, p, m, replicas, 1, false,
                                   kind == ScheduleKind::kTwoBW ? 2 : 0);
        ASSERT_NO_THROW(CheckSchedule(s)) << ScheduleKindName(kind);
        for (const StageSummary& r : AnalyzeSchedule(s))
          ASSERT_EQ(r.updates, kind == ScheduleKind::kTwoBW ? 2 : 1);
      }
    }
  }
}

// Every replica layout of up to 3 stages with up to 3 replicas each, for every kind that takes
// replicas: the lists are valid and complete (op.h's contract).
TEST(ScheduleReplicationTest, EverySmallLayoutIsValid) {
  std::vector<std::vector<int>> layouts;
  for (int p = 1; p <= 3; ++p) {
    std::vector<int> r(p, 1);
    while (true) {
      layouts.push_back(r);
      int i = 0;
      while (i < p && r[i] == 3) r[i++] = 1;
      if (i == p) break;
      ++r[i];
    }
  }
  for (const auto& replicas : layouts) {
    const int p = static_cast<int>(replicas.size());
    const int workers = std::accumulate(replicas.begin(), replicas.end(), 0);
    for (int m = 1; m <= 2 * workers + 1; ++m) {
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush,
                                ScheduleKind::kPipeDream, ScheduleKind::kTwoBW}) {
        if (kind == ScheduleKind::kTwoBW && m < OptimalActiveMinibatches(replicas) * replicas[0])
          continue;
        PipelineSchedule s = Build(kind, p, m, replicas, 1, false,
                                   kind == ScheduleKind::kTwoBW ? 2 : 0);
        ASSERT_NO_THROW(CheckSchedule(s)) << ScheduleKindName(kind) << " m=" << m;
        for (const StageSummary& r : AnalyzeSchedule(s))
          ASSERT_LE(r.max_weight_versions, kind == ScheduleKind::kTwoBW ? 2 : r.max_in_flight_activations);
      }
    }
  }
}

TEST(ScheduleReplicationTest, VerticalSyncWithEqualReplicasUsesTheInputStageVersion) {
  for (int r = 1; r <= 3; ++r) {
    for (int d = 1; d <= 4; ++d) {
      const std::vector<int> replicas(d, r);
      for (int M = 1; M <= 3 * d * r; ++M) {
        PipelineSchedule s = Build(ScheduleKind::kPipeDream, d, M, replicas, 1, true);
        ASSERT_NO_THROW(CheckSchedule(s));
        std::map<int, int> input_version;
        for (const auto& w : s.workers)
          for (const Op& op : w.ops)
            if (op.kind == OpKind::kForward && op.stage == 0) input_version[op.microbatch] = op.weight_version;
        for (const auto& w : s.workers)
          for (const Op& op : w.ops)
            if (IsComputeOp(op.kind)) {
              ASSERT_EQ(op.weight_version, input_version[op.microbatch]);
            }
        for (const StageSummary& rep : AnalyzeSchedule(s))
          ASSERT_EQ(rep.staleness_max, AnalyzeSchedule(s)[0].staleness_max);  // uniform
      }
    }
  }
}

// Without weight stashing (PipeDream SOSP'19 section 5.5's comparison) every backward runs on the
// worker's latest weights: the version a worker holds is the number of its updates so far, so the
// oracle counts the Update ops before each op. Its forward is rebuilt on them first (a Recompute
// on the backward's version), the stage keeps its input only, and no version is stashed, so no
// update has to copy the weights.
TEST(ScheduleReplicationTest, WithoutWeightStashingBackwardsRunOnTheLatestWeights) {
  for (const std::vector<int>& replicas :
       std::vector<std::vector<int>>{{1, 1}, {1, 1, 1}, {1, 1, 1, 1}, {2, 1}, {1, 2, 1}}) {
    const int d = static_cast<int>(replicas.size());
    for (int M = 1; M <= 12; ++M) {
      ScheduleSpec spec;
      spec.kind = ScheduleKind::kPipeDream;
      spec.stages = d;
      spec.microbatches = M;
      spec.replicas = replicas;
      spec.weight_stashing = false;
      const PipelineSchedule s = BuildSchedule(spec);
      ASSERT_NO_THROW(CheckSchedule(s));
      EXPECT_FALSE(s.weight_stashing);
      EXPECT_TRUE(s.recompute);
      int newer = 0;  // backwards on another version than their forward
      for (const auto& w : s.workers) {
        int updates = 0;
        std::map<int, int> forward_version;
        bool recomputed = false;
        for (const Op& op : w.ops) {
          ASSERT_NE(op.kind, OpKind::kStashWeights) << ActionName(op);
          if (op.kind == OpKind::kUpdate) ++updates;
          if (op.kind == OpKind::kStashActivation) EXPECT_TRUE(op.input_only);
          if (!IsComputeOp(op.kind)) continue;
          ASSERT_EQ(op.weight_version, updates) << "worker " << w.worker << " " << ActionName(op);
          if (op.kind == OpKind::kForward) forward_version[op.microbatch] = op.weight_version;
          if (op.kind == OpKind::kRecompute) recomputed = true;
          if (op.kind == OpKind::kBackward) {
            EXPECT_TRUE(recomputed) << "worker " << w.worker << " " << ActionName(op);
            recomputed = false;
            newer += op.weight_version != forward_version.at(op.microbatch);
          }
        }
        for (bool copies : UpdatesCopyingWeights(w)) EXPECT_FALSE(copies);
      }
      // From the first stage of a deeper pipeline some backwards meet updates made after their
      // forward (1F1B keeps d - s minibatches in flight), which stashing would have hidden.
      if (d > 1 && M > d) EXPECT_GT(newer, 0) << d << " stages, " << M << " minibatches";
      // The same schedule with stashing: the same compute order, and stage 0 stashes.
      spec.weight_stashing = true;
      const PipelineSchedule stashed = BuildSchedule(spec);
      for (size_t i = 0; i < s.workers.size(); ++i)
        EXPECT_EQ(ComputeOrder(s.workers[i]), ComputeOrder(stashed.workers[i]));
    }
  }
}

// The checker holds the lists to that: with stashing a recompute rebuilds its forward's version
// and the backward uses it; without, the backward uses the recompute's (the latest).
TEST(ScheduleReplicationTest, TheCheckerKnowsWhichVersionARecomputeRebuilds) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kPipeDream;
  spec.stages = 3;
  spec.microbatches = 6;
  spec.recompute = true;
  auto error = [](const PipelineSchedule& s) -> std::string {
    try {
      CheckSchedule(s);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  // Stage 0's third recompute comes after an update: with stashing it names the forward's
  // version, which a tampered list moves to the current one.
  for (bool stashing : {true, false}) {
    spec.weight_stashing = stashing;
    PipelineSchedule s = BuildSchedule(spec);
    ASSERT_EQ(error(s), "");
    int updates = 0, recomputes = 0;
    for (Op& op : s.workers[0].ops) {
      if (op.kind == OpKind::kUpdate) ++updates;
      if (op.kind != OpKind::kRecompute || ++recomputes < 3) continue;
      ASSERT_GT(updates, 0);
      // Stashing: the forward's version, older than the current; without: the current one.
      EXPECT_EQ(op.weight_version == updates, !stashing) << op.weight_version << " " << updates;
      op.weight_version = stashing ? updates : updates - 1;
      break;
    }
    const std::string e = error(s);
    if (stashing)
      EXPECT_NE(e.find("recomputes on weight version"), std::string::npos) << e;
    else  // an older version without stashing is no longer alive
      EXPECT_NE(e.find("which is not alive"), std::string::npos) << e;
  }
}

// --- rules ---------------------------------------------------------------------------------

std::string BuildError(ScheduleSpec spec) {
  try {
    BuildSchedule(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleRulesTest, ImpossibleCombinationsNameTheRule) {
  ScheduleSpec spec;
  spec.stages = 4;
  spec.microbatches = 3;
  spec.kind = ScheduleKind::kTwoBW;
  EXPECT_NE(BuildError(spec).find("m >= d"), std::string::npos) << BuildError(spec);
  spec.kind = ScheduleKind::kInterleaved;
  spec.chunks = 2;
  spec.microbatches = 9;  // torch's rounds: floor(9 / 4) = 2 rounds of 4.5
  EXPECT_NE(BuildError(spec).find("rounds of equal size"), std::string::npos);
  spec.microbatches = 6;  // one round of 6: torch builds it, so does pipetwin
  EXPECT_EQ(BuildError(spec), "");
  spec.kind = ScheduleKind::kDualPipeV;
  EXPECT_NE(BuildError(spec).find("m >= 2p = 8"), std::string::npos);
  spec.microbatches = 8;
  EXPECT_EQ(BuildError(spec), "");
  spec.kind = ScheduleKind::kZeroBubbleV;
  spec.chunks = 3;
  EXPECT_NE(BuildError(spec).find("exactly 2 model chunks"), std::string::npos);
  spec.kind = ScheduleKind::kFlush;
  EXPECT_NE(BuildError(spec).find("model chunks per worker apply to"), std::string::npos);
  spec.kind = ScheduleKind::kInterleaved;
  spec.chunks = 2;
  spec.microbatches = 8;
  spec.layer_count = 6;
  EXPECT_NE(BuildError(spec).find("more stages (8) than layers (6)"), std::string::npos);
  spec = ScheduleSpec();
  spec.stages = 3;
  spec.microbatches = 4;
  spec.replicas = {2, 1};
  EXPECT_NE(BuildError(spec).find("one count per stage"), std::string::npos);
  spec.replicas = {2, 1, 1};
  spec.worker_count = 3;
  EXPECT_NE(BuildError(spec).find("need 4 workers but there are 3"), std::string::npos);
  spec.worker_count = 0;
  spec.kind = ScheduleKind::kZeroBubbleH1;  // data parallelism replicates the whole pipeline
  EXPECT_NE(BuildError(spec).find("replicates the whole pipeline"), std::string::npos);
  spec.kind = ScheduleKind::kPipeDream;
  spec.vertical_sync = true;
  EXPECT_NE(BuildError(spec).find("same replica count"), std::string::npos);
  spec.replicas = {1, 1, 1};
  spec.weight_stashing = false;
  EXPECT_NE(BuildError(spec).find("vertical sync runs forwards on older versions"),
            std::string::npos)
      << BuildError(spec);
  spec.vertical_sync = false;
  EXPECT_EQ(BuildError(spec), "");
  spec.kind = ScheduleKind::kFlush;
  EXPECT_NE(BuildError(spec).find("only pipedream can run without weight stashing"),
            std::string::npos)
      << BuildError(spec);
  spec.kind = ScheduleKind::kPipeDream;
  spec.weight_stashing = true;
  spec.replicas = {2, 1, 1};
  spec.vertical_sync = true;
  spec.replicas = {0, 1, 1};
  EXPECT_NE(BuildError(spec).find("at least 1"), std::string::npos);
  spec = ScheduleSpec();
  spec.stages = 0;
  EXPECT_NE(BuildError(spec).find("stages must be >= 1"), std::string::npos);
  EXPECT_THROW(ParseScheduleKind("1f1b"), InputError);
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// MessageOf is the one rule of which Send matches which Recv; SendOf and RecvOf are its inverse.
TEST(ScheduleMessages, SendAndReceiveOfAMessageNameIt) {
  for (bool activation : {true, false}) {
    const MessageKey key{activation, 2, 5, /*sender=*/3, /*receiver=*/7};
    const Op send = SendOf(key), recv = RecvOf(key);
    EXPECT_TRUE(IsSendOp(send.kind));
    EXPECT_FALSE(IsSendOp(recv.kind));
    EXPECT_EQ(MessageOf(send, 3), key);
    EXPECT_EQ(MessageOf(recv, 7), key);
    EXPECT_EQ(recv.stage, activation ? 3 : 1);
    EXPECT_EQ(key.UpstreamStage(), activation ? 2 : 1);
  }
  // In every list BuildSchedule makes, each receive names the message its peer sends.
  const PipelineSchedule s = Build(ScheduleKind::kInterleaved, 3, 6, {}, 2);
  std::map<MessageKey, int> sends;
  for (const WorkerProgram& w : s.workers)
    for (const Op& op : w.ops)
      if (IsSendOp(op.kind)) ++sends[MessageOf(op, w.worker)];
  int receives = 0;
  for (const WorkerProgram& w : s.workers)
    for (const Op& op : w.ops)
      if (IsCommunicationOp(op.kind) && !IsSendOp(op.kind)) {
        ++receives;
        EXPECT_EQ(sends[MessageOf(op, w.worker)], 1) << ActionName(op);
      }
  EXPECT_EQ(receives, static_cast<int>(sends.size()));
}

// The all-reduce's buckets are part of the spec and of every AllReduce op: one by default (after
// the backward, as the executor runs it), as many as the spec asks otherwise.
TEST(ScheduleAllReduce, TheOpListsCarryTheBuckets) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kFlush;
  spec.stages = 2;
  spec.microbatches = 4;
  spec.replicas = {2, 1};
  for (int buckets : {kDefaultAllReduceBuckets, 3}) {
    spec.allreduce_buckets = buckets;
    const PipelineSchedule s = BuildSchedule(spec);
    int all_reduces = 0;
    for (const WorkerProgram& w : s.workers)
      for (const Op& op : w.ops)
        if (op.kind == OpKind::kAllReduce) {
          ++all_reduces;
          EXPECT_EQ(op.buckets, buckets);
        }
    EXPECT_EQ(all_reduces, 2);  // stage 0's two replicas, once each
  }
  EXPECT_EQ(kDefaultAllReduceBuckets, 1);
  spec.allreduce_buckets = 0;
  EXPECT_THROW(BuildSchedule(spec), InputError);
}

// The gradient sums (op.h, AddsToGradientSums): a stage's first weight gradient after an update
// is taken as it is and each later one added in place, so a worker adds (backwards - updates)
// times per stage it holds; PipeDream, which updates after every minibatch's backward (SOSP'19,
// section 3.3), never adds; a replicated stage's sums are its all-reduce's buffer, always added to.
TEST(ScheduleGradientSums, TheFirstGradientAfterAnUpdateIsTakenAsItIs) {
  const auto count = [](const WorkerProgram& w, OpKind kind) {
    return static_cast<int>(std::count_if(w.ops.begin(), w.ops.end(),
                                          [kind](const Op& op) { return op.kind == kind; }));
  };
  const auto adds = [](const WorkerProgram& w) {
    const std::vector<bool> a = GradientSumAdds(w);
    EXPECT_EQ(a.size(), w.ops.size());
    for (size_t i = 0; i < a.size(); ++i)  // only weight-gradient ops add
      if (a[i]) EXPECT_TRUE(w.ops[i].kind == OpKind::kBackward ||
                            w.ops[i].kind == OpKind::kBackwardWeight) << ActionName(w.ops[i]);
    return static_cast<int>(std::count(a.begin(), a.end(), true));
  };
  // Three flushed iterations of 4 micro-batches: 3 of each iteration's 4 backwards add.
  for (const WorkerProgram& w : RepeatSchedule(Build(ScheduleKind::kFlush, 2, 4), 3).workers) {
    EXPECT_EQ(count(w, OpKind::kBackward), 12);
    EXPECT_EQ(count(w, OpKind::kUpdate), 3);
    EXPECT_EQ(adds(w), 9) << "worker " << w.worker;
  }
  for (const WorkerProgram& w : Build(ScheduleKind::kPipeDream, 3, 8).workers)
    EXPECT_EQ(adds(w), 0) << "PipeDream worker " << w.worker;
  for (const WorkerProgram& w : Build(ScheduleKind::kTwoBW, 2, 8, {}, 1, false, 2).workers)
    EXPECT_EQ(adds(w), count(w, OpKind::kBackward) - count(w, OpKind::kUpdate));
  // Two chunks a worker: each chunk's first backward of the batch takes its gradient as it is.
  for (const WorkerProgram& w : Build(ScheduleKind::kInterleaved, 2, 4, {}, 2).workers)
    EXPECT_EQ(adds(w), 2 * (4 - 1)) << "interleaved worker " << w.worker;
  // Zero bubble: the W passes make the weight gradients, the I passes never add.
  for (const WorkerProgram& w : Build(ScheduleKind::kZeroBubbleH1, 2, 4).workers)
    EXPECT_EQ(adds(w), 4 - 1) << "ZB-H1 worker " << w.worker;
  // Stage 0 in two replicas: they add every backward; stage 1 alone: m - 1.
  const PipelineSchedule replicated = Build(ScheduleKind::kFlush, 2, 4, {2, 1});
  for (const WorkerProgram& w : replicated.workers)
    EXPECT_EQ(adds(w), w.stage == 0 ? count(w, OpKind::kBackward) : 4 - 1)
        << "replicated, worker " << w.worker;
  EXPECT_TRUE(AddsToGradientSums(0, true));
  EXPECT_FALSE(AddsToGradientSums(0, false));
  EXPECT_TRUE(AddsToGradientSums(1, false));
}

// An update copies the weights when their current version is stashed for a backward to come
// (op.h, UpdatesCopyingWeights). PipeDream's 1F1B (SOSP'19, section 3.3): stage s of P runs
// d = P - 1 - s minibatches ahead, F(k + d) B(k) then the update, and F(k + d) took the version
// that update replaces; its backward is still to come when d >= 1 and k + d < m. So the last
// stage (d = 0) steps in place every time, and stage s copies at m - d of its m updates.
// Flushing schedules keep one version and never copy.
TEST(ScheduleWeightsTest, AnUpdateCopiesTheWeightsOnlyWhileABackwardNeedsThem) {
  const int p = 3, m = 8;
  for (const WorkerProgram& w : Build(ScheduleKind::kPipeDream, p, m).workers) {
    const std::vector<bool> copies = UpdatesCopyingWeights(w);
    int updates = 0, copying = 0;
    for (size_t i = 0; i < w.ops.size(); ++i) {
      if (copies[i]) EXPECT_EQ(w.ops[i].kind, OpKind::kUpdate);
      updates += w.ops[i].kind == OpKind::kUpdate;
      copying += copies[i];
    }
    EXPECT_EQ(updates, m) << "worker " << w.worker;
    const int d = p - 1 - w.stage;
    EXPECT_EQ(copying, d >= 1 ? m - d : 0) << "stage " << w.stage;
  }
  for (const WorkerProgram& w : Build(ScheduleKind::kFlush, p, m).workers) {
    const std::vector<bool> copies = UpdatesCopyingWeights(w);
    EXPECT_EQ(std::count(copies.begin(), copies.end(), true), 0);
  }
}

// A flushing schedule's iterations are its one-iteration lists back to back: micro-batch k of
// repeat r is r m + k, versions continue, and the result is a valid schedule.
TEST(ScheduleRepeat, IterationsFollowOneAnother) {
  const PipelineSchedule once = Build(ScheduleKind::kFlush, 3, 4, {2, 1, 1});
  const PipelineSchedule three = RepeatSchedule(once, 3);
  EXPECT_NO_THROW(CheckSchedule(three));
  EXPECT_EQ(three.microbatches, 3 * once.microbatches);
  for (size_t w = 0; w < once.workers.size(); ++w) {
    const auto& a = once.workers[w].ops;
    const auto& b = three.workers[w].ops;
    ASSERT_EQ(b.size(), 3 * a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const Op& last = b[2 * a.size() + i];
      EXPECT_EQ(last.kind, a[i].kind);
      EXPECT_EQ(last.microbatch, a[i].microbatch < 0 ? -1 : a[i].microbatch + 8);
      if (a[i].kind == OpKind::kUpdate) EXPECT_EQ(last.weight_version, 3);
    }
  }
  EXPECT_EQ(RepeatSchedule(once, 1), once);
}

}  // namespace
}  // namespace pipetwin
