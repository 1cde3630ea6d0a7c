// The checker and the replayer: every built schedule is valid and completes for depths 1..32
// and micro-batch counts 1..4p, with each message next to its ops; bubbles match the papers' formulas;
// broken lists are caught with the rule they break.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "partition/util/error.h"
#include "partition/schedule/op.h"
#include "partition/schedule/build.h"
#include "partition/schedule/check.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"
#include "tests/oracle/list_schedule.h"

namespace pipetwin {
namespace {

PipelineSchedule Build(ScheduleKind kind, int p, int m, int chunks = 1, int batches = 0) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.stages = p;
  spec.microbatches = m;
  spec.chunks = chunks;
  spec.batches = batches;
  return BuildSchedule(spec);
}

OpCosts Costs(double forward, double backward) {
  OpCosts c;
  c.forward = forward;
  c.backward = backward;
  return c;
}

// Every kind, every depth 1..32 and micro-batch count 1..4p the kind allows: the lists pass the
// structural checks and a replay with unit times completes. About 10,000 schedules and
// 10^8 ops, spread over the machine's cores.
TEST(ScheduleValiditySweepTest, AllKindsAllDepthsAllMicrobatchCounts) {
#if defined(__GLIBC__)
  // The sweep allocates and frees a few MB per schedule; keep freed memory for reuse instead of
  // returning it to the kernel each time (that alone doubles the run time).
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
#endif
  const auto start = std::chrono::steady_clock::now();
  const int threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::vector<std::vector<std::string>> failures(threads);
  std::vector<long> checked(threads, 0);
  auto sweep = [&](int thread) {
    // Depths dealt round-robin from the deepest, so that the threads finish together.
    for (int p = 32 - thread; p >= 1; p -= threads) {
      for (int m = 1; m <= 4 * p; ++m) {
        std::vector<ScheduleSpec> specs;
        auto add = [&](ScheduleKind kind, int chunks = 1, int batches = 0) {
          ScheduleSpec spec;
          spec.kind = kind;
          spec.stages = p;
          spec.microbatches = m;
          spec.chunks = chunks;
          spec.batches = batches;
          specs.push_back(spec);
        };
        add(ScheduleKind::kGPipe);
        add(ScheduleKind::kFlush);
        add(ScheduleKind::kPipeDream);
        add(ScheduleKind::kZeroBubbleH1);
        add(ScheduleKind::kZeroBubbleH2);
        if (m >= p) add(ScheduleKind::kTwoBW, 1, 2);
        if (m % p == 0) add(ScheduleKind::kInterleaved, 2);
        if (m % p == 0 && p <= 8) add(ScheduleKind::kInterleaved, 3);
        for (const auto& spec : specs) {
          try {
            CheckSchedule(BuildSchedule(spec));
            ++checked[thread];
          } catch (const std::exception& e) {
            failures[thread].push_back(ScheduleKindName(spec.kind) + " p=" + std::to_string(p) +
                                       " m=" + std::to_string(m) + ": " + e.what());
          }
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(sweep, t);
  for (auto& t : pool) t.join();
  long total = 0;
  for (int t = 0; t < threads; ++t) {
    total += checked[t];
    for (const auto& f : failures[t]) ADD_FAILURE() << f;
  }
  EXPECT_EQ(total, 12336);  // every (kind, p, m) above
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("checked %ld schedules in %.2f s on %d threads\n", total, seconds, threads);
}

// Every Send follows the op that produces its data, and every Recv precedes the op that
// consumes it, with only stash and release ops in between (op.h): the lists never make a worker
// wait for data it does not need yet, nor hold back data another worker needs.
TEST(ScheduleLoweringTest, EachMessageSitsNextToItsOps) {
  auto bookkeeping = [](OpKind k) {
    return k == OpKind::kStashActivation || k == OpKind::kReleaseActivation ||
           k == OpKind::kStashWeights || k == OpKind::kReleaseWeights;
  };
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kPipeDream,
                            ScheduleKind::kTwoBW, ScheduleKind::kInterleaved,
                            ScheduleKind::kZeroBubbleH1, ScheduleKind::kZeroBubbleH2}) {
    for (bool recompute : {false, true}) {
      for (RecomputeTiming timing : {RecomputeTiming::kInBackward, RecomputeTiming::kEarly}) {
        ScheduleSpec spec;
        spec.kind = kind;
        spec.stages = 4;
        spec.microbatches = 8;
        spec.chunks = kind == ScheduleKind::kInterleaved ? 2 : 1;
        spec.recompute = recompute;
        spec.recompute_timing = timing;
        const PipelineSchedule s = BuildSchedule(spec);
        const std::string what = ScheduleKindName(kind) + (recompute ? " recompute " : " ") +
                                 RecomputeTimingName(timing);
        int messages = 0;
        for (const auto& w : s.workers) {
          for (size_t i = 0; i < w.ops.size(); ++i) {
            const Op& op = w.ops[i];
            if (!IsCommunicationOp(op.kind)) continue;
            ++messages;
            const bool send = IsSendOp(op.kind);
            // The nearest compute op before a Send, after a Recv.
            size_t j = i;
            while (send ? j-- > 0 : ++j < w.ops.size()) {
              if (IsComputeOp(w.ops[j].kind)) break;
              ASSERT_TRUE(bookkeeping(w.ops[j].kind) || IsCommunicationOp(w.ops[j].kind))
                  << what << ": worker " << w.worker << " op " << i << " " << ActionName(op)
                  << " is separated from its compute op by " << ActionName(w.ops[j]);
            }
            ASSERT_LT(j, w.ops.size()) << what << ": " << ActionName(op) << " has no compute op";
            const Op& c = w.ops[j];
            EXPECT_EQ(c.microbatch, op.microbatch) << what << ": " << ActionName(op);
            EXPECT_EQ(c.stage, op.stage) << what << ": " << ActionName(op);
            const bool activation =
                op.kind == OpKind::kSendActivation || op.kind == OpKind::kRecvActivation;
            OpKind expected = activation ? OpKind::kForward : OpKind::kBackward;
            if ((kind == ScheduleKind::kZeroBubbleH1 || kind == ScheduleKind::kZeroBubbleH2) &&
                !activation)
              expected = OpKind::kBackwardInput;
            if (!activation && !send && recompute && timing == RecomputeTiming::kInBackward)
              expected = OpKind::kRecompute;
            EXPECT_EQ(c.kind, expected) << what << ": " << ActionName(op) << " next to "
                                        << ActionName(c);
          }
        }
        EXPECT_GT(messages, 0) << what;
      }
    }
  }
}

// GPipe and PipeDream-Flush idle (p-1)/(m+p-1) of the iteration (GPipe, NeurIPS'19; Megatron-LM
// SC'21 section 2.2.1), for any equal stage times f and b.
TEST(ScheduleBubbleTest, GPipeAndFlushBubbleIsPMinus1OverMPlusPMinus1) {
  for (auto [f, b] : {std::pair{1.0, 2.0}, std::pair{1.0, 1.0}, std::pair{2.0, 3.0}}) {
    for (int p = 1; p <= 32; ++p) {
      for (int m = 1; m <= 4 * p; m += (p > 8 ? 3 : 1)) {
        for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush}) {
          ReplayResult r = ReplaySchedule(Build(kind, p, m), Costs(f, b));
          ASSERT_TRUE(r.completed);
          ASSERT_NEAR(r.bubble_fraction, double(p - 1) / (m + p - 1), 1e-9)
              << ScheduleKindName(kind) << " p=" << p << " m=" << m << " f=" << f << " b=" << b;
          ASSERT_NEAR(r.makespan, (m + p - 1) * (f + b), 1e-9);
        }
      }
    }
  }
}

// Interleaved 1F1B: bubble time / ideal compute time = (p-1)/(v m) (Megatron-LM SC'21
// section 2.2.2), each chunk taking 1/v of the stage's time.
TEST(ScheduleBubbleTest, InterleavedBubbleIsPMinus1OverVM) {
  for (int p = 1; p <= 16; ++p)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 4 * p; m += p) {
        ReplayResult r =
            ReplaySchedule(Build(ScheduleKind::kInterleaved, p, m, v), Costs(1, 2));
        ASSERT_TRUE(r.completed);
        ASSERT_NEAR(r.bubble_over_compute, double(p - 1) / (v * m), 1e-9)
            << "p=" << p << " v=" << v << " m=" << m;
      }
}

// ZB-H1 with F = B(input) = W: a third of 1F1B's bubble (Qi et al., ICLR'24, section 2.1: the
// bubble shrinks from (p-1)(F+B+W) to (p-1)(F+B-W)).
TEST(ScheduleBubbleTest, ZeroBubbleH1IsAThirdOfOneFOneB) {
  for (int p = 2; p <= 32; ++p)
    for (int m = p; m <= 4 * p; m += (p > 8 ? 5 : 1)) {
      ReplayResult zb = ReplaySchedule(Build(ScheduleKind::kZeroBubbleH1, p, m), Costs(1, 2));
      ReplayResult flush = ReplaySchedule(Build(ScheduleKind::kFlush, p, m), Costs(1, 2));
      double zb_idle = 0, flush_idle = 0;
      for (const auto& w : zb.workers) zb_idle += w.idle;
      for (const auto& w : flush.workers) flush_idle += w.idle;
      ASSERT_NEAR(zb_idle / flush_idle, 1.0 / 3.0, 1e-9) << "p=" << p << " m=" << m;
    }
}

// ZB-H1 and ZB-H2 against the bubbles of Qi et al., ICLR'24, table 1, (p-1)(T_F + T_B - T_W)
// and (p-1)(T_F + T_B - 2 T_W), per iteration of a run of iterations back to back: without data
// parallelism nothing but the messages ties one worker's iteration to another's, so stage r's
// next iteration starts while the stages below still finish this one, the overlap the paper's
// parallelogram assumes (its post-validation removes the optimizer's synchronisation). The
// steady state's period (3 iterations minus 2) less the compute is the bubble. ZB-H2 holds
// 2p - 1 micro-batches for it (schedule_memory_test.cc); with T_W = T_F = T_B it has none.
TEST(ScheduleBubbleTest, ZeroBubbleH1AndH2MatchThePapersBubbles) {
  for (int p = 2; p <= 16; ++p)
    for (int m = 2 * p - 1; m <= 4 * p; m += (p > 8 ? 7 : 1))
      for (auto [f, i, w] : {std::tuple{1.0, 1.0, 1.0}, std::tuple{1.0, 1.0, 0.5},
                             std::tuple{1.0, 1.2, 0.8}, std::tuple{1.5, 1.0, 0.25}}) {
        OpCosts c;
        c.forward = f;
        c.backward_input = i;
        c.backward_weight = w;
        c.backward = i + w;
        for (auto [kind, bubble] : {std::pair{ScheduleKind::kZeroBubbleH1, (p - 1) * (f + i - w)},
                                    std::pair{ScheduleKind::kZeroBubbleH2,
                                              (p - 1) * (f + i - 2 * w)}}) {
          const PipelineSchedule once = Build(kind, p, m);
          const ReplayResult two = ReplaySchedule(RepeatSchedule(once, 2), c);
          const ReplayResult three = ReplaySchedule(RepeatSchedule(once, 3), c);
          ASSERT_TRUE(two.completed && three.completed);
          ASSERT_NEAR(three.makespan - two.makespan - m * (f + i + w), bubble, 1e-9)
              << ScheduleKindName(kind) << " p=" << p << " m=" << m << " F=" << f << " I=" << i
              << " W=" << w;
        }
      }
}

// ZB-V (Qi et al., ICLR'24, section 6) and DualPipeV (DeepSeek-V3 report, section 3.2.1; its
// bubble (PP/2 - 1)(F&B + B - 3W) does not grow with m) with F = I = W: their steady state has
// no bubble, so a worker's idle time is the same for 2p and for 6p micro-batches. What is left,
// which the replay of the lists shows, is the fill: p - 1 chunk forwards on every worker, 1/6 of
// 1F1B's (p-1)(F+B).
TEST(ScheduleBubbleTest, VSchedulesHaveNoSteadyStateBubble) {
  for (ScheduleKind kind : {ScheduleKind::kZeroBubbleV, ScheduleKind::kDualPipeV}) {
    for (int p = 1; p <= 16; ++p) {
      ReplayResult short_run = ReplaySchedule(Build(kind, p, 2 * p, 2), Costs(1, 2));
      ReplayResult long_run = ReplaySchedule(Build(kind, p, 6 * p, 2), Costs(1, 2));
      ASSERT_TRUE(short_run.completed && long_run.completed);
      for (int w = 0; w < p; ++w) {
        ASSERT_NEAR(short_run.workers[w].idle, long_run.workers[w].idle, 1e-9)
            << ScheduleKindName(kind) << " p=" << p << " worker " << w;
        ASSERT_NEAR(long_run.workers[w].idle, (p - 1) * 0.5, 1e-9)
            << ScheduleKindName(kind) << " p=" << p << " worker " << w;
      }
    }
  }
}

// PipeDream and 2BW never flush: each worker idles only while the pipeline fills and drains, so
// its idle time does not grow with the number of (micro-)batches run.
TEST(ScheduleBubbleTest, PipeDreamAndTwoBWHaveNoSteadyStateBubble) {
  for (int p = 1; p <= 16; ++p) {
    for (auto [f, b] : {std::pair{1.0, 2.0}, std::pair{1.0, 1.0}}) {
      ReplayResult short_run = ReplaySchedule(Build(ScheduleKind::kPipeDream, p, 2 * p), Costs(f, b));
      ReplayResult long_run = ReplaySchedule(Build(ScheduleKind::kPipeDream, p, 6 * p), Costs(f, b));
      for (int w = 0; w < p; ++w)
        ASSERT_NEAR(short_run.workers[w].idle, long_run.workers[w].idle, 1e-9) << "p=" << p;
      ReplayResult two = ReplaySchedule(Build(ScheduleKind::kTwoBW, p, p, 1, 2), Costs(f, b));
      ReplayResult six = ReplaySchedule(Build(ScheduleKind::kTwoBW, p, p, 1, 6), Costs(f, b));
      for (int w = 0; w < p; ++w)
        ASSERT_NEAR(two.workers[w].idle, six.workers[w].idle, 1e-9) << "p=" << p;
    }
  }
}

// --- the checker catches broken lists ------------------------------------------------------

Op MakeOp(OpKind kind, int stage, int mb, int peer = -1, int version = 0) {
  Op op;
  op.kind = kind;
  op.stage = stage;
  op.microbatch = mb;
  op.peer_worker = peer;
  op.weight_version = IsComputeOp(kind) ? version : -1;
  return op;
}

// Two stages, one micro-batch each way, with the sends first on both sides: fine, since a Send
// never waits for its receive (op.h).
PipelineSchedule CrossedSends() {
  PipelineSchedule s;
  s.kind = ScheduleKind::kImported;
  s.stages = 2;
  s.replicas = {1, 1};
  s.microbatches = 2;
  WorkerProgram w0, w1;
  w0.worker = 0, w0.stage = 0, w0.model_stages = {0};
  w1.worker = 1, w1.stage = 1, w1.model_stages = {1};
  // mb 0 goes through; then stage 0 sends mb 1's activation before receiving mb 0's gradient,
  // while stage 1 sends mb 0's gradient before receiving mb 1's activation.
  w0.ops = {MakeOp(OpKind::kForward, 0, 0), MakeOp(OpKind::kSendActivation, 0, 0, 1),
            MakeOp(OpKind::kForward, 0, 1), MakeOp(OpKind::kSendActivation, 0, 1, 1),
            MakeOp(OpKind::kRecvGradient, 0, 0, 1), MakeOp(OpKind::kBackward, 0, 0),
            MakeOp(OpKind::kRecvGradient, 0, 1, 1), MakeOp(OpKind::kBackward, 0, 1)};
  w1.ops = {MakeOp(OpKind::kRecvActivation, 1, 0, 0), MakeOp(OpKind::kForward, 1, 0),
            MakeOp(OpKind::kBackward, 1, 0), MakeOp(OpKind::kSendGradient, 1, 0, 0),
            MakeOp(OpKind::kRecvActivation, 1, 1, 0), MakeOp(OpKind::kForward, 1, 1),
            MakeOp(OpKind::kBackward, 1, 1), MakeOp(OpKind::kSendGradient, 1, 1, 0)};
  s.workers = {w0, w1};
  return s;
}

TEST(ScheduleCheckerTest, CrossedSendsCompleteSinceASendNeverWaits) {
  PipelineSchedule s = CrossedSends();
  EXPECT_NO_THROW(CheckSchedule(s));
  EXPECT_TRUE(ReplaySchedule(s, OpCosts()).completed);
}

// Each worker waits for the other's message before it sends its own: a cycle of waits.
TEST(ScheduleCheckerTest, ReceivesWaitingForEachOtherAreADeadlock) {
  PipelineSchedule s = CrossedSends();
  // Worker 0 now waits for mb 0's gradient before it sends mb 0's activation.
  s.workers[0].ops = {MakeOp(OpKind::kRecvGradient, 0, 0, 1), MakeOp(OpKind::kForward, 0, 0),
                      MakeOp(OpKind::kSendActivation, 0, 0, 1), MakeOp(OpKind::kForward, 0, 1),
                      MakeOp(OpKind::kSendActivation, 0, 1, 1), MakeOp(OpKind::kBackward, 0, 0),
                      MakeOp(OpKind::kRecvGradient, 0, 1, 1), MakeOp(OpKind::kBackward, 0, 1)};
  ReplayResult r = ReplaySchedule(s, OpCosts());
  EXPECT_FALSE(r.completed);
  EXPECT_NE(r.deadlock.find("worker 1 waits at 1RECV_F0 from worker 0"), std::string::npos)
      << r.deadlock;
  try {
    CheckSchedule(s);
    ADD_FAILURE() << "expected a deadlock";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
  }
}

std::string ValidationError(const PipelineSchedule& s) {
  try {
    ValidateSchedule(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleCheckerTest, StructuralRulesAreNamed) {
  PipelineSchedule s = CrossedSends();
  auto broken = s;
  broken.workers[0].ops.erase(broken.workers[0].ops.begin() + 3);  // drop 0SEND_F1
  EXPECT_NE(ValidationError(broken).find("1RECV_F1 from worker 0 never gets its send"),
            std::string::npos)
      << ValidationError(broken);
  broken = s;
  broken.workers[1].ops.erase(broken.workers[1].ops.begin() + 4);  // drop 1RECV_F1
  EXPECT_NE(ValidationError(broken).find("0SEND_F1 to worker 1 has no matching receive"),
            std::string::npos);
  broken = s;
  std::swap(broken.workers[0].ops[0], broken.workers[0].ops[5]);  // backward before forward
  EXPECT_NE(ValidationError(broken).find("before its forward"), std::string::npos);
  broken = s;
  broken.workers[0].ops.push_back(MakeOp(OpKind::kForward, 0, 1));
  EXPECT_NE(ValidationError(broken).find("runs its forward 2 times"), std::string::npos);
  broken = s;
  broken.workers[1].ops[1].weight_version = broken.workers[1].ops[2].weight_version = 3;
  EXPECT_NE(ValidationError(broken).find("not alive"), std::string::npos);
  broken = s;
  broken.workers[1].ops[4].peer_worker = 1;
  EXPECT_NE(ValidationError(broken).find("no other worker"), std::string::npos);
}

TEST(ScheduleReplayTest, ReportsPerWorkerTimesAndStages) {
  PipelineSchedule s = Build(ScheduleKind::kFlush, 4, 8);
  ReplayResult r = ReplaySchedule(s, Costs(1, 2));
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(r.workers.size(), 4u);
  ASSERT_EQ(r.stages.size(), 4u);
  for (const auto& w : r.workers) {
    EXPECT_DOUBLE_EQ(w.busy, 8 * 3.0);
    EXPECT_DOUBLE_EQ(w.idle, 33 - 24.0);
    EXPECT_EQ(w.op_start.size(), s.workers[w.worker].ops.size());
  }
  // Stage 3 runs 3F0 right after stage 0, 1, 2 pass micro-batch 0 down.
  const auto& last = s.workers[3];
  for (size_t i = 0; i < last.ops.size(); ++i)
    if (last.ops[i].kind == OpKind::kForward && last.ops[i].microbatch == 0) {
      EXPECT_DOUBLE_EQ(r.workers[3].op_start[i], 3.0);
    }
}

// Blocking sends (op.h, SendMode::kBlocking) in the replay against the independent
// list-scheduling oracle (tests/oracle/list_schedule.h) with the same rule: every kind, depths 2
// to 6, 1 to 3p micro-batches, equal ops and a transfer of 0.7 forwards; the blocking makespan
// is never below the eager one, and equal to it when messages are free.
TEST(ScheduleReplay, BlockingSendsFollowTheListScheduleOracle) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kInterleaved,
                            ScheduleKind::kZeroBubbleH1, ScheduleKind::kZeroBubbleH2}) {
    for (int p = 2; p <= 6; ++p) {
      const int chunks = kind == ScheduleKind::kInterleaved ? 2 : 1;
      for (int m = kind == ScheduleKind::kInterleaved ? p : 1; m <= 3 * p;
           m += kind == ScheduleKind::kInterleaved ? p : 1) {
        ScheduleSpec spec;
        spec.kind = kind;
        spec.stages = p;
        spec.microbatches = m;
        spec.chunks = chunks;
        spec.send_mode = SendMode::kBlocking;
        const PipelineSchedule blocking = BuildSchedule(spec);
        spec.send_mode = SendMode::kEager;
        const PipelineSchedule eager = BuildSchedule(spec);
        OpCosts costs = Costs(1, 2);
        costs.transfer = 0.7;
        oracle::ListScheduleCase c;
        c.forward.assign(p * chunks, 1.0 / chunks);  // OpCosts are per worker, a chunk's share
        c.backward.assign(p * chunks, 2.0 / chunks);
        c.transfer.assign(p * chunks, 0.7);
        c.blocking_sends = true;
        const double replayed = ReplaySchedule(blocking, costs).makespan;
        EXPECT_NEAR(replayed, oracle::ListScheduleMakespan(blocking, c), 1e-9)
            << ScheduleKindName(kind) << " p=" << p << " m=" << m;
        EXPECT_GE(replayed + 1e-9, ReplaySchedule(eager, costs).makespan);
        costs.transfer = 0;
        EXPECT_NEAR(ReplaySchedule(blocking, costs).makespan,
                    ReplaySchedule(eager, costs).makespan, 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace pipetwin
