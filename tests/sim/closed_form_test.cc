// Where the analytic answer is exact, the simulator must reproduce it within 0.1%: GPipe and
// Flush on equal stages, asynchronous 1F1B's steady state, ring all-reduce (flat and
// hierarchical, against the planners' own cost model), and the core's buffered replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "sim/setup.h"
#include "tests/sim/sim_test_support.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {
namespace {

using simtest::EqualLayers;
using simtest::EvenPlan;
using simtest::MakeScenario;
using simtest::RelativeError;
using simtest::TwoLevelCluster;

constexpr double kTolerance = 1e-3;

TEST(SimClosedForm, GPipeIsMPlusPMinusOneTimesFPlusBPlusTransfers) {
  const int p = 4, m = 8;
  const double f = 1e-3, b = 2e-3, bytes = 10e6;
  const double gbps = 400, latency_us = 2;  // 50 GB/s: 0.2 ms per activation
  const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, bytes, 4e6),
                                  TwoLevelCluster(p, 1, gbps, latency_us, 0, 0), EvenPlan(p, 1, 1),
                                  "gpipe", m, 1);
  const Report r = simtest::Simulate(s);
  const double transfer = bytes / (gbps * 1e9 / 8) + latency_us * 1e-6;
  // Forward wave: p - 1 hops; backward wave: p - 1 hops back.
  const double expected = (m + p - 1) * (f + b) + 2 * (p - 1) * transfer;
  EXPECT_LT(RelativeError(r.iteration_s, expected), kTolerance)
      << r.iteration_s << " vs " << expected;
  EXPECT_LT(RelativeError(r.samples_per_s, m / expected), kTolerance);
  // Bubble (p - 1) / (m + p - 1) up to the transfers.
  EXPECT_NEAR(r.bubble_fraction, 1 - m * (f + b) / expected, 1e-9);
}

// The cluster's knobs: every compute op pays launch_overhead_us; every message pays
// communication_overhead_us on its sender before it leaves.
TEST(SimClosedForm, OverheadsAreChargedPerOperationAndPerMessage) {
  const int p = 2, m = 4;
  const double f = 1e-3, b = 2e-3, launch = 50e-6, host = 20e-6;
  Cluster cluster = TwoLevelCluster(p, 1, 800, 0, 0, 0);
  cluster.launch_overhead_us = launch * 1e6;
  const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6), cluster,
                                  EvenPlan(p, 1, 1), "gpipe", m, 1);
  const double compute = (m + p - 1) * (f + b + 2 * launch);
  EXPECT_LT(RelativeError(simtest::Simulate(s).iteration_s, compute), kTolerance);
  // Two stages in step: stage 0 sends after each of its m forwards, which paces stage 1's
  // forwards; stage 1 sends after each of its m backwards, which paces stage 0's backwards.
  // Every one of the 2m messages' overheads is on the critical path.
  Scenario with_host = s;
  with_host.cluster.communication_overhead_us = host * 1e6;
  const double expected = compute + 2 * m * host;
  const double got = simtest::Simulate(with_host).iteration_s;
  EXPECT_LT(RelativeError(got, expected), kTolerance) << got << " vs " << expected;
}

TEST(SimClosedForm, FlushIsMPlusPMinusOneTimesFPlusBOnFreeLinks) {
  const int p = 4, m = 8;
  const double f = 1e-3, b = 2e-3;
  const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6),
                                  TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1), "flush",
                                  m, 3);
  const Report r = simtest::Simulate(s);
  EXPECT_LT(RelativeError(r.iteration_s, (m + p - 1) * (f + b)), kTolerance) << r.iteration_s;
  EXPECT_EQ(r.iterations, 3);
  EXPECT_NE(r.measurement.find("steady state"), std::string::npos);
}

// The steady state of ZB-H1 and ZB-H2 on free links with F = I = W (b = 2f, split in halves):
// an iteration takes m (f + b) plus the bubble of Qi et al., ICLR'24, table 1, (p-1)(T_F + T_B
// - T_W) = (p-1) f for ZB-H1 and (p-1)(T_F + T_B - 2 T_W) = 0 for ZB-H2, whose next iteration
// starts on stage 0 while the last stages finish this one (no step ties the stages together).
TEST(SimClosedForm, ZeroBubbleH2HasNoBubbleInTheSteadyState) {
  const int p = 4, m = 8;
  const double f = 1e-3, b = 2e-3;
  for (auto [kind, bubble] : {std::pair{"zb-h1", (p - 1) * f}, std::pair{"zb-h2", 0.0}}) {
    const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6),
                                    TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1), kind,
                                    m, 4);
    const Report r = simtest::Simulate(s);
    EXPECT_LT(RelativeError(r.iteration_s, m * (f + b) + bubble), kTolerance)
        << kind << ": " << r.iteration_s;
  }
}

// Qi et al.'s table 2 with T_F, T_B and T_W unequal, as a Megatron layer's own split gives them
// (every stage alike, the first included): ZB-H1's bubble is (p-1)(T_F + T_B - T_W) and ZB-H2's
// (p-1)(T_F + T_B - 2 T_W), on top of m (T_F + T_B + T_W).
TEST(SimClosedForm, ZeroBubbleBubblesWithUnequalPassesAreQiTable2) {
  const int p = 4, m = 8;
  const double f = 1e-3, i = 1.4e-3, w = 0.6e-3;
  Workload layers = EqualLayers(p, f * 1e3, (i + w) * 1e3, 0, 4e6);
  for (Layer& l : layers.layers) {
    l.backward_input_ms = i * 1e3;
    l.backward_weight_ms = w * 1e3;
  }
  for (auto [kind, bubble] : {std::pair{"zb-h1", (p - 1) * (f + i - w)},
                              std::pair{"zb-h2", (p - 1) * (f + i - 2 * w)}}) {
    const Report r = simtest::Simulate(MakeScenario(layers, TwoLevelCluster(p, 1, 800, 0, 0, 0),
                                                    EvenPlan(p, 1, 1), kind, m, 4));
    EXPECT_LT(RelativeError(r.iteration_s, m * (f + i + w) + bubble), kTolerance)
        << kind << ": " << r.iteration_s << " against " << m * (f + i + w) + bubble;
  }
}

// DualPipe (DeepSeek-V3 report, section 3.2.1) runs each of its PP ranks through DualPipeV's
// order for PP/2 ranks over half the micro-batches (tests/dualpipe_test.cc checks the orders
// against deepseek-ai/DualPipe). So on free links with no weights to all-reduce between the two
// copies, M micro-batches on 4 ranks take what DualPipeV's M/2 take on 2 ranks: twice the
// samples per second on twice the devices. With weights, every DualPipe device keeps two stages'
// parameters, twice what flush keeps on the same plan (table 2: parameters 2x).
TEST(SimClosedForm, DualPipeRunsDualPipeVsIterationOnTwiceTheRanks) {
  const int ranks = 4, m = 8;
  const double f = 1e-3, b = 2e-3;
  const Workload free = EqualLayers(ranks, f * 1e3, b * 1e3, 0, 0);
  const Report dual = simtest::Simulate(MakeScenario(
      free, TwoLevelCluster(ranks, 1, 800, 0, 0, 0), EvenPlan(ranks, 1, 1), "dualpipe", m, 3));
  const Report v = simtest::Simulate(MakeScenario(free, TwoLevelCluster(ranks / 2, 1, 800, 0, 0, 0),
                                                  EvenPlan(ranks, 1, 1), "dualpipe-v", m / 2, 3));
  EXPECT_EQ(dual.worker_count, ranks);
  EXPECT_EQ(dual.pipeline_depth, ranks);
  EXPECT_LT(RelativeError(dual.iteration_s, v.iteration_s), kTolerance)
      << dual.iteration_s << " against " << v.iteration_s;
  EXPECT_LT(RelativeError(dual.samples_per_s, 2 * v.samples_per_s), kTolerance);

  const Workload weighted = EqualLayers(ranks, f * 1e3, b * 1e3, 0, 4e6);
  const Report copies = simtest::Simulate(MakeScenario(
      weighted, TwoLevelCluster(ranks, 1, 800, 0, 0, 0), EvenPlan(ranks, 1, 1), "dualpipe", m, 1));
  const Report flush = simtest::Simulate(MakeScenario(
      weighted, TwoLevelCluster(ranks, 1, 800, 0, 0, 0), EvenPlan(ranks, 1, 1), "flush", m, 1));
  ASSERT_EQ(copies.devices.size(), flush.devices.size());
  for (size_t d = 0; d < copies.devices.size(); ++d) {
    EXPECT_GT(flush.devices[d].category_peaks.weights, 0);
    EXPECT_NEAR(copies.devices[d].category_peaks.weights,
                2 * flush.devices[d].category_peaks.weights, 1) << "device " << d;
  }
}

// With transfers the exact answer is the core's buffered replay (sends go at once, a receive
// waits for the bytes): the simulator must agree wherever no two transfers share a link. ZB-H1
// is the exception that shows the simulator's point: a stage's input activation and its output
// gradient arrive at the same time through the device's one ingress link and share it, which
// the replay (a fixed time per transfer) cannot see.
TEST(SimClosedForm, SchedulesMatchTheBufferedReplayOnFreeLinks) {
  const int p = 4, m = 8;
  const double f = 1e-3, b = 2e-3, bytes = 10e6, gbps = 400;
  for (const char* kind : {"gpipe", "flush", "pipedream", "2bw", "zb-h1"}) {
    const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, bytes, 4e6),
                                    TwoLevelCluster(p, 1, gbps, 0, 0, 0), EvenPlan(p, 1, 1), kind,
                                    m, 1);
    const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
    OpCosts costs;
    costs.forward = f;
    costs.backward = b;
    costs.transfer = bytes / (gbps * 1e9 / 8);
    const ReplayResult replay = ReplaySchedule(setup.schedule, costs);
    ASSERT_TRUE(replay.completed) << kind;
    const Report r = simtest::Simulate(s);
    if (std::string(kind) == "zb-h1") {
      EXPECT_GT(r.makespan_s, replay.makespan * (1 + kTolerance));
      EXPECT_LT(r.makespan_s, replay.makespan + 2 * p * costs.transfer);
      continue;
    }
    EXPECT_LT(RelativeError(r.makespan_s, replay.makespan), kTolerance)
        << kind << ": " << r.makespan_s << " vs " << replay.makespan;
  }
}

// Data loading (cost/data_loading.h) on asynchronous 1F1B over 3 equal stages of f + b = 3 ms per
// minibatch: overlapped, a 5 ms load paces the input stage at 5 ms per minibatch (and a 2 ms
// load costs nothing); serial, each minibatch takes 3 + 5 ms on the input stage. The report
// states the rule it used.
TEST(SimClosedForm, DataLoadingPacesTheInputStageAsTheRuleSays) {
  const int p = 3, m = 12;
  const double f = 1e-3, b = 2e-3;
  for (auto [mode, load, per_minibatch] :
       {std::tuple{DataLoading::kOverlapped, 5e-3, 5e-3},
        std::tuple{DataLoading::kOverlapped, 2e-3, f + b},
        std::tuple{DataLoading::kSerial, 5e-3, f + b + 5e-3}}) {
    Workload w = EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6);
    w.data_loading_ms = load * 1e3;
    Scenario s = MakeScenario(w, TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1),
                              "pipedream", m, 4);
    s.training.data_loading = mode;
    const Report r = simtest::Simulate(s);
    EXPECT_LT(RelativeError(r.iteration_s, m * per_minibatch), kTolerance)
        << DataLoadingName(mode) << " " << load << ": " << r.iteration_s;
    EXPECT_EQ(r.data_loading, DataLoadingName(mode));
    EXPECT_DOUBLE_EQ(r.load_s_per_microbatch, load);
  }
}

TEST(SimClosedForm, AsynchronousOneFOneBRunsAtTheSlowestStage) {
  // Stage 2 holds two layers: 2 x (1 + 2) ms per minibatch; the others 3 ms.
  Workload w = EqualLayers(5, 1, 2, 0, 4e6);
  Plan plan = EvenPlan(4, 1, 1);
  plan.stages[2].last_layer = 3;
  plan.stages[3].first_layer = plan.stages[3].last_layer = 4;
  const int m = 8;
  const Scenario s = MakeScenario(w, TwoLevelCluster(4, 1, 800, 0, 0, 0), plan, "pipedream", m, 4);
  const Report r = simtest::Simulate(s);
  const double slowest = 2 * (1e-3 + 2e-3);
  EXPECT_LT(RelativeError(r.iteration_s, m * slowest), kTolerance) << r.iteration_s;
  EXPECT_LT(RelativeError(r.samples_per_s, 1 / slowest), kTolerance);
}

// Workers that are processes sharing CPU cores (cluster.shared_cores): asynchronous 1F1B on 4
// equal stages runs at one stage per core while each has a core (3 ms per minibatch on 4 cores);
// on 2 cores the 4 workers' 12 ms of work per minibatch take 6 ms, on 1 core 12 ms.
TEST(SimClosedForm, WorkersSharingCoresDivideThem) {
  const int p = 4, m = 16;
  const double f = 1e-3, b = 2e-3;
  for (int cores : {0, 4, 2, 1}) {
    Cluster cluster = TwoLevelCluster(p, 1, 800, 0, 0, 0);
    cluster.shared_cores = cores;
    const Scenario s = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6), cluster,
                                    EvenPlan(p, 1, 1), "pipedream", m, 4);
    const double per_minibatch = (f + b) * p / std::min(p, cores > 0 ? cores : p);
    const Report r = simtest::Simulate(s);
    EXPECT_LT(RelativeError(r.iteration_s, m * per_minibatch), 2e-2)
        << cores << " cores: " << r.iteration_s << " vs " << m * per_minibatch;
  }
  // GPipe on 1 shared core is sequential: m (f + b) per stage, p stages, no overlap at all.
  Cluster one = TwoLevelCluster(p, 1, 800, 0, 0, 0);
  one.shared_cores = 1;
  const Scenario g = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6), one,
                                  EvenPlan(p, 1, 1), "gpipe", m, 1);
  EXPECT_LT(RelativeError(simtest::Simulate(g).iteration_s, p * m * (f + b)), kTolerance);
}

// More workers than cores: the cores serve them first come, first served, each op run to its
// end on one core (the executor's workers run under SCHED_RR there, exec/cpu_policy.h), not
// shared among all who have work. Three replicas of a 1 ms forward and 2 ms backward on 2
// cores: two forwards run from 0 to 1 ms while the third waits; at 1 ms the third forward and
// one backward start, at 2 ms the second backward, at 3 ms the last, which ends at 5 ms. Shared
// fairly, every op would run at 2/3 speed and all would end at 4.5 ms.
TEST(SimClosedForm, WorkersBeyondTheCoresTakeThemFirstComeFirstServed) {
  Cluster cluster = TwoLevelCluster(3, 1, 800, 0, 0, 0);
  cluster.shared_cores = 2;
  const Scenario s = MakeScenario(EqualLayers(1, 1, 2, 0, 4), cluster, EvenPlan(1, 1, 3),
                                  "flush", 1, 1);
  const Report r = simtest::Simulate(s);
  EXPECT_LT(RelativeError(r.iteration_s, 5e-3), kTolerance) << r.iteration_s;
  // The last replica computes 3 ms; its 2 ms of waiting for a core are idle time.
  EXPECT_NEAR(r.workers[2].busy_s, 3e-3, 1e-6);
  EXPECT_NEAR(r.workers[2].idle_s, 2e-3, 1e-6);
  // With a core each, 3 ms.
  cluster.shared_cores = 3;
  EXPECT_LT(RelativeError(simtest::Simulate(MakeScenario(EqualLayers(1, 1, 2, 0, 4), cluster,
                                                         EvenPlan(1, 1, 3), "flush", 1, 1))
                              .iteration_s,
                          3e-3),
            kTolerance);
}

// With the executor's SCHED_RR slice in the cluster (round_robin_slice_ms), a worker keeps the
// core it took until it waits, and gives it up inside an op once it has run a slice while
// another waits. The three replicas above (1 ms forward, 2 ms backward, 2 cores): with a 100 ms
// slice the first two run their forward and backward from 0 to 3 ms, the third waits for a core
// until then and ends at 6 ms; each keeps its core for its backward (2 of its 3 ms). With a
// 0.5 ms slice the 18 slices of work rotate over the two cores first come, first served, every
// slice a whole one, and the last ends at 4.5 ms.
TEST(SimClosedForm, UnderRoundRobinAWorkerKeepsItsCoreUntilItWaitsAndSharesItBySlices) {
  Cluster cluster = TwoLevelCluster(3, 1, 800, 0, 0, 0);
  cluster.shared_cores = 2;
  auto simulate = [&](double slice_ms) {
    cluster.round_robin_slice_ms = slice_ms;
    return simtest::Simulate(
        MakeScenario(EqualLayers(1, 1, 2, 0, 4), cluster, EvenPlan(1, 1, 3), "flush", 1, 1));
  };
  const Report held = simulate(100);
  EXPECT_LT(RelativeError(held.iteration_s, 6e-3), kTolerance) << held.iteration_s;
  EXPECT_NEAR(held.workers[2].busy_s, 3e-3, 1e-6);
  EXPECT_NEAR(held.workers[2].idle_s, 3e-3, 1e-6);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(held.workers[k].kept_core_share, 2.0 / 3, 1e-6) << k;
  const Report sliced = simulate(0.5);
  EXPECT_LT(RelativeError(sliced.iteration_s, 4.5e-3), kTolerance) << sliced.iteration_s;
  // Without the slice, one op at a time (the test above): 5 ms.
  EXPECT_LT(RelativeError(simulate(0).iteration_s, 5e-3), kTolerance);
}

// Under round robin c10d Gloo's thread of the receiver reads each message off its socket, a
// thread of its own that waits for a core like the workers (sim/actors.cc, ReadMessages), and
// the receive returns once it has and the worker's thread holds a core again. GPipe on 2
// workers sharing 1 core, a message's CPU 4 ms (2 ms at each end), one micro-batch: worker 0
// computes its forward (0-1 ms) and its half of the send (1-3), then waits for the gradient and
// gives the core up; worker 1's Gloo thread reads the activation (3-5); worker 1 computes from 5
// to 8 and sends (8-10); worker 0's Gloo thread reads the gradient (10-12); worker 0's backward
// ends at 14 ms. Each receive is exposed from its message's sending to 5 and 12 ms: 2 ms each.
// Without the slice the receiver reads its message itself after the receive, as idle time.
TEST(SimClosedForm, UnderRoundRobinGloosThreadReadsTheMessageOnACoreItWaitsFor) {
  Cluster cluster = TwoLevelCluster(2, 1, 800, 0, 0, 0);
  cluster.shared_cores = 1;
  cluster.oversubscribed_message_us = 4000;
  auto simulate = [&](double slice_ms) {
    cluster.round_robin_slice_ms = slice_ms;
    return simtest::Simulate(
        MakeScenario(EqualLayers(2, 1, 2, 0, 4e6), cluster, EvenPlan(2, 1, 1), "gpipe", 1, 1));
  };
  const Report gloo = simulate(100);
  EXPECT_LT(RelativeError(gloo.iteration_s, 14e-3), kTolerance) << gloo.iteration_s;
  EXPECT_NEAR(gloo.workers[0].exposed_communication_s, 2e-3, 1e-6);
  EXPECT_NEAR(gloo.workers[1].exposed_communication_s, 2e-3, 1e-6);
  const Report itself = simulate(0);
  EXPECT_LT(RelativeError(itself.iteration_s, 14e-3), kTolerance) << itself.iteration_s;
  EXPECT_NEAR(itself.workers[1].exposed_communication_s, 0, 1e-6);
}

// A profile taken on shared cores carries what an op costs on a core of its own
// (Workload::own_core): the simulator charges that share where the op's worker was the last to
// run on its core, the full time where another worker ran there in between. Two stages on one
// core, one micro-batch, f = 1 ms and b = 2 ms, both shares 0.5, eight iterations: stage 0's
// forward follows its own backward of the iteration before (0.5 ms, the first one excepted);
// stage 1's forward follows stage 0's forward (1 ms); stage 1's backward its own forward
// (1 ms); stage 0's backward stage 1's backward (2 ms): 4.5 ms an iteration against 6 ms.
TEST(SimClosedForm, AnOpOnTheCoreItsWorkerRanOnLastTakesTheOwnCoreShare) {
  Cluster cluster = TwoLevelCluster(2, 1, 800, 0, 0, 0);
  cluster.shared_cores = 1;
  const int iterations = 8;
  Workload w = EqualLayers(2, 1, 2, 0, 4e6);
  const Report shared = simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", 1,
                                                       iterations));
  EXPECT_LT(RelativeError(shared.iteration_s, 6e-3), kTolerance) << shared.iteration_s;
  // Which ops kept their core (kept_core.h): stage 0's forwards but the first (1 ms each), of
  // 8 x 3 ms; stage 1's backwards, 2 of its 3 ms an iteration.
  EXPECT_NEAR(shared.workers[0].kept_core_share, 7.0 / 24, 1e-6);
  EXPECT_NEAR(shared.workers[1].kept_core_share, 2.0 / 3, 1e-6);
  w.own_core = {0.5, 0.5, 0};
  const Report own = simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", 1,
                                                    iterations));
  EXPECT_LT(RelativeError(own.iteration_s, 4.5e-3), kTolerance) << own.iteration_s;
  // Each stage's busy time an iteration: stage 0 0.5 + 2 ms, stage 1 1 + 1 ms (the first
  // iteration's forward of stage 0 took its whole 1 ms).
  EXPECT_NEAR(own.workers[0].busy_s, iterations * 2.5e-3 + 0.5e-3, 1e-6);
  EXPECT_NEAR(own.workers[1].busy_s, iterations * 2e-3, 1e-6);
  // Per iteration after the first (the throughput's): stage 0's forward 0.5 ms, its backward
  // 2 ms; over every iteration its forward averages 0.5625 ms.
  EXPECT_NEAR(own.workers[0].steady_busy_by_op_s.at("forward"), 0.5e-3, 1e-9);
  EXPECT_NEAR(own.workers[0].steady_busy_by_op_s.at("backward"), 2e-3, 1e-9);
  EXPECT_NEAR(own.workers[0].busy_by_op_s.at("forward") / iterations, 0.5625e-3, 1e-9);
  // With a core each (no shared cores), the shares are not charged: the profile was not
  // time-shared there.
  cluster.shared_cores = 0;
  const Report apart =
      simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", 1, iterations));
  EXPECT_NEAR(apart.iteration_s, 6e-3, 6e-3 * kTolerance);
  EXPECT_EQ(apart.workers[0].kept_core_share, -1);  // no cores to keep
}

// CPU worker processes with a core each post each receive at its op (ReceivePostingOf), and c10d
// Gloo moves a message only once its receive is posted, after the receiver's notification has
// crossed to the sender (a rendezvous). GPipe on two stages, the second three times slower:
// every activation but the first is sent before the second stage asks for it, so each of those
// m - 1 forwards waits one latency L for the notification and L + bytes / bandwidth for the
// bytes, which eager sends (GPUs) had delivered while it computed. The gradients come every 6 ms
// to a first stage that takes 2 ms over each, so it is waiting for every one, as before.
TEST(SimClosedForm, AReceivePostedAtItsOpWaitsForTheRendezvous) {
  const int m = 4;
  const double latency = 100e-6, bytes = 1e6, gbps = 8;  // 1e6 bytes: 1 ms at 8 Gbit/s
  Workload w = EqualLayers(2, 1, 2, bytes, 4e6);
  w.layers[1].forward_ms = 3;
  w.layers[1].backward_ms = 6;
  auto simulate = [&](int shared_cores) {
    Cluster cluster = TwoLevelCluster(2, 1, gbps, latency * 1e6, 0, 0);
    cluster.shared_cores = shared_cores;
    return simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", m, 1));
  };
  const Report eager = simulate(0), rendezvous = simulate(2);
  const double transfer = latency + bytes * 8 / (gbps * 1e9);
  EXPECT_LT(RelativeError(rendezvous.iteration_s - eager.iteration_s, (m - 1) * (latency + transfer)),
            kTolerance)
      << rendezvous.iteration_s << " against " << eager.iteration_s;
  // The wait is the second stage's exposed communication.
  EXPECT_NEAR(rendezvous.workers[1].exposed_communication_s - eager.workers[1].exposed_communication_s,
              (m - 1) * (latency + transfer), 1e-7);
  // With more workers than cores the receives are posted ahead: eager again.
  EXPECT_NEAR(simulate(1).workers[1].exposed_communication_s,
              eager.workers[1].exposed_communication_s, 1e-9);
}

// A message that moves while its sender computes waits cluster.busy_sender_message_us more
// (workers with a core each: c10d Gloo's thread of the sender shares its core). The GPipe of
// the test above, a 0.1 ms wait: the first activation moves while stage 0 computes its second
// forward (1 to 2 ms); stage 1 asks for the next one after its first forward, past 5 ms, when
// stage 0 has done its forwards (at 4 ms). Three gradients move while stage 1 computes the next
// backward, the last one after its last. The first activation's wait delays stage 1 and the
// iteration; stage 0 waits for gradients anyway. GPUs (eager sends, no shared cores) charge
// nothing.
TEST(SimClosedForm, AMessageMovingWhileItsSenderComputesWaitsTheBusySendersCharge) {
  const int m = 4;
  const double wait = 1e-4;
  Workload w = EqualLayers(2, 1, 2, 1e6, 4e6);
  w.layers[1].forward_ms = 3;
  w.layers[1].backward_ms = 6;
  auto simulate = [&](int shared_cores, double busy_sender_s) {
    Cluster cluster = TwoLevelCluster(2, 1, 8, 100, 0, 0);
    cluster.shared_cores = shared_cores;
    cluster.busy_sender_message_us = busy_sender_s * 1e6;
    return simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", m, 1));
  };
  const Report without = simulate(2, 0), with = simulate(2, wait);
  EXPECT_NEAR(with.workers[1].exposed_communication_s - without.workers[1].exposed_communication_s,
              wait, 1e-9);
  EXPECT_NEAR(with.workers[0].exposed_communication_s - without.workers[0].exposed_communication_s,
              3 * wait, 1e-9);
  EXPECT_NEAR(with.iteration_s - without.iteration_s, wait, 1e-9);
  const Report gpu = simulate(0, wait), gpu_without = simulate(0, 0);
  EXPECT_DOUBLE_EQ(gpu.iteration_s, gpu_without.iteration_s);
  EXPECT_DOUBLE_EQ(gpu.workers[0].exposed_communication_s,
                   gpu_without.workers[0].exposed_communication_s);
}

// With a core per worker, c10d Gloo's threads share their worker's core (the executor pins each
// worker's process there): half of oversubscribed_message_us comes out of the sender's compute
// running as the bytes arrive, and the other half out of the receiver's compute running when a
// message is sent before its receive is posted (its announcement is handled then); a worker that
// waits loses nothing. The GPipe above, a 0.1 ms latency and 1 ms of bytes: the first activation,
// sent at 1 ms to a stage already waiting, arrives at 2.1 ms, during stage 0's third forward (2
// to 3 ms); the third and the fourth are sent during stage 1's first forward (from 2.1 ms), and
// move later, while stage 0 waits for its gradients. Each gradient but the last moves while
// stage 1 computes the next backward and is received by a stage 0 that waits for it (2 ms a
// backward against 6). Stage 1, the pipeline's critical path, runs five halves longer, and so
// does the iteration.
TEST(SimClosedForm, AMessagesCpuComesOutOfTheComputeRunningAtEitherEndOnItsCore) {
  const int m = 4;
  const double half = 0.25e-3;
  Workload w = EqualLayers(2, 1, 2, 1e6, 4e6);
  w.layers[1].forward_ms = 3;
  w.layers[1].backward_ms = 6;
  auto simulate = [&](int shared_cores, double message_s) {
    Cluster cluster = TwoLevelCluster(2, 1, 8, 100, 0, 0);
    cluster.shared_cores = shared_cores;
    cluster.oversubscribed_message_us = message_s * 1e6;
    return simtest::Simulate(MakeScenario(w, cluster, EvenPlan(2, 1, 1), "gpipe", m, 1));
  };
  const Report without = simulate(2, 0), with = simulate(2, 2 * half);
  EXPECT_NEAR(with.workers[0].busy_s - without.workers[0].busy_s, half, 1e-9);
  EXPECT_NEAR(with.workers[1].busy_s - without.workers[1].busy_s, 5 * half, 1e-9);
  EXPECT_NEAR(with.iteration_s - without.iteration_s, 5 * half, 1e-9);
  // GPUs: no shared cores, nothing charged.
  EXPECT_DOUBLE_EQ(simulate(0, 2 * half).iteration_s, simulate(0, 0).iteration_s);
}

// More workers than cores (cluster.oversubscribed_message_us): every message delivered to a
// worker there costs that much of a core. GPipe on 1 shared core stays sequential, now with the
// 2 (p - 1) m messages' cost on top; with a core per worker the same setting charges only the
// halves that meet a computing worker at their end (the test above), spread over the workers:
// less than half of that.
TEST(SimClosedForm, MessagesToAnOversubscribedServerCostCpu) {
  const int p = 4, m = 8;
  const double f = 1e-3, b = 2e-3, per_message = 5e-4;
  for (int cores : {1, 4}) {
    Cluster cluster = TwoLevelCluster(p, 1, 800, 0, 0, 0);
    cluster.shared_cores = cores;
    const Scenario without = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6), cluster,
                                          EvenPlan(p, 1, 1), "gpipe", m, 1);
    cluster.oversubscribed_message_us = per_message * 1e6;
    const Scenario with = MakeScenario(EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6), cluster,
                                       EvenPlan(p, 1, 1), "gpipe", m, 1);
    const double base = simtest::Simulate(without).iteration_s;
    const double cost = 2.0 * (p - 1) * m * per_message;
    const Report r = simtest::Simulate(with);
    if (cores == 1) {
      EXPECT_LT(RelativeError(r.iteration_s, base + cost), kTolerance);
    } else {
      EXPECT_GT(r.iteration_s, base * (1 + kTolerance));
      EXPECT_LT(r.iteration_s, base + cost / 2);
    }
    // More workers than cores: the report says what the model leaves out.
    if (cores == 1) {
      ASSERT_EQ(r.warnings.size(), 1u);
      EXPECT_EQ(r.warnings[0].rfind("server 0 runs 4 workers on 1 shared cores", 0), 0u)
          << r.warnings[0];
    } else {
      EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
    }
  }
}

// A measured optimizer step (Layer::update_ms, CPU workers) runs on the worker at each Update:
// GPipe's iteration grows by the slowest stage's step (the last stage's comes last); without
// update_ms (GPUs) nothing is charged.
TEST(SimClosedForm, TheOptimizerStepIsChargedAtEachUpdate) {
  const int p = 2, m = 4;
  const double f = 1e-3, b = 2e-3, update = 0.5e-3;
  Workload w = EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6);
  const Scenario without = MakeScenario(w, TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1),
                                        "gpipe", m, 3);
  const double base = (m + p - 1) * (f + b);
  EXPECT_LT(RelativeError(simtest::Simulate(without).iteration_s, base), kTolerance);
  for (Layer& l : w.layers) l.update_ms = update * 1e3;
  const Scenario with = MakeScenario(w, TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1),
                                     "gpipe", m, 3);
  const Report r = simtest::Simulate(with);
  // Stage 0 updates after its last backward, which ends the iteration; stage 1's update
  // overlaps stage 0's last backward.
  EXPECT_LT(RelativeError(r.iteration_s, base + update), kTolerance) << r.iteration_s;
  EXPECT_NEAR(r.workers[0].busy_s, 3 * (m * (f + b) + update), 1e-9);
  // The same time split by op kind (what `compare` sets against the executor's).
  for (const WorkerReport& worker : r.workers) {
    ASSERT_EQ(worker.busy_by_op_s.size(), 3u) << "worker " << worker.worker;
    EXPECT_NEAR(worker.busy_by_op_s.at("forward"), 3 * m * f, 1e-9);
    EXPECT_NEAR(worker.busy_by_op_s.at("backward"), 3 * m * b, 1e-9);
    EXPECT_NEAR(worker.busy_by_op_s.at("update"), 3 * update, 1e-9);
  }
}

// Of each backward, a = gradient_add_ms adds the gradients into the sums, which the first
// backward after an update does not (op.h, AddsToGradientSums). GPipe, 2 stages, m micro-batches:
// each stage's first backward of the iteration is a shorter, and the backward wave ends with
// stage 1's m backwards then stage 0's last, (m + 1) b - a, so an iteration takes a less than
// (m + 1)(f + b). PipeDream updates after every minibatch: every backward is a shorter, and
// asynchronous 1F1B runs at f + b - a a minibatch.
TEST(SimClosedForm, ABackwardAfterAnUpdateSkipsTheGradientAddition) {
  const int p = 2, m = 4;
  const double f = 1e-3, b = 2e-3, a = 0.4e-3;
  Workload w = EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6);
  for (Layer& l : w.layers) l.gradient_add_ms = a * 1e3;
  const Cluster cluster = TwoLevelCluster(p, 1, 800, 0, 0, 0);
  const Report gpipe = simtest::Simulate(MakeScenario(w, cluster, EvenPlan(p, 1, 1), "gpipe", m, 3));
  EXPECT_LT(RelativeError(gpipe.iteration_s, (m + p - 1) * (f + b) - a), kTolerance)
      << gpipe.iteration_s;
  for (const WorkerReport& worker : gpipe.workers)
    EXPECT_NEAR(worker.busy_by_op_s.at("backward"), 3 * (m * b - a), 1e-9);
  const int minibatches = 8;
  const Report pipedream =
      simtest::Simulate(MakeScenario(w, cluster, EvenPlan(p, 1, 1), "pipedream", minibatches, 4));
  EXPECT_LT(RelativeError(pipedream.iteration_s, minibatches * (f + b - a)), kTolerance)
      << pipedream.iteration_s;
  // An update that copies the weights first (update_copy_ms c of its u): PipeDream's last stage
  // never copies (nothing else in flight), stage 0 (one minibatch ahead) at every update but the
  // one after the last backward (asynchronous 1F1B runs its 4 x 8 minibatches without a flush).
  const double u = 0.5e-3, c = 0.2e-3;
  for (Layer& l : w.layers) l.update_ms = u * 1e3, l.update_copy_ms = c * 1e3;
  const Report copying =
      simtest::Simulate(MakeScenario(w, cluster, EvenPlan(p, 1, 1), "pipedream", minibatches, 4));
  EXPECT_NEAR(copying.workers[1].busy_by_op_s.at("update"), 4 * minibatches * (u - c), 1e-9);
  EXPECT_NEAR(copying.workers[0].busy_by_op_s.at("update"), 4 * minibatches * u - c, 1e-9);
  for (Layer& l : w.layers) l.update_ms.reset(), l.update_copy_ms.reset();
  // Without the figure (a published profile), the backward is charged whole.
  for (Layer& l : w.layers) l.gradient_add_ms.reset();
  const Report whole =
      simtest::Simulate(MakeScenario(w, cluster, EvenPlan(p, 1, 1), "pipedream", minibatches, 4));
  EXPECT_LT(RelativeError(whole.iteration_s, minibatches * (f + b)), kTolerance);
}

// Without weight stashing (training.weight_stashing false, schedule/spec.h) each backward first
// reruns its forward on the latest weights, and no version is kept beside the current one, so no
// update copies the weights: on two equal stages asynchronous 1F1B runs at f + (f + b) + (u - c)
// a minibatch on each stage, where with stashing stage 0 copies at every update but the last.
TEST(SimClosedForm, WithoutWeightStashingEachBackwardRecomputesAndNoUpdateCopies) {
  const int p = 2, minibatches = 8, iterations = 4;
  const double f = 1e-3, b = 2e-3, u = 0.5e-3, c = 0.2e-3;
  Workload w = EqualLayers(p, f * 1e3, b * 1e3, 0, 4e6);
  for (Layer& l : w.layers) l.update_ms = u * 1e3, l.update_copy_ms = c * 1e3;
  Scenario s = MakeScenario(w, TwoLevelCluster(p, 1, 800, 0, 0, 0), EvenPlan(p, 1, 1), "pipedream",
                            minibatches, iterations);
  s.training.weight_stashing = false;
  const Report r = simtest::Simulate(s);
  const int total = iterations * minibatches;
  for (const WorkerReport& worker : r.workers) {
    EXPECT_NEAR(worker.busy_by_op_s.at("recompute"), total * f, 1e-9);
    EXPECT_NEAR(worker.busy_by_op_s.at("update"), total * (u - c), 1e-9);
  }
  EXPECT_LT(RelativeError(r.iteration_s, minibatches * (2 * f + b + u - c)), kTolerance)
      << r.iteration_s;
}

// Pure data parallelism over r servers: forward, backward, then the ring all-reduce of the
// gradients in one bucket: 2(r-1)/r S/B + 2(r-1) latencies.
TEST(SimClosedForm, RingAllReduceOverServers) {
  const int r = 4;
  const double bytes = 1e9, gbps = 100, latency_us = 10;
  const Scenario s = MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes),
                                  TwoLevelCluster(1, r, 800, 0, gbps, latency_us),
                                  EvenPlan(1, 1, r), "flush", 1, 1);
  const Report report = simtest::Simulate(s);
  const double ring =
      2.0 * (r - 1) / r * bytes / (gbps * 1e9 / 8) + 2 * (r - 1) * latency_us * 1e-6;
  EXPECT_LT(RelativeError(report.iteration_s, 3e-3 + ring), kTolerance) << report.iteration_s;
  // Every ring step's payload counted on the level it crosses.
  EXPECT_DOUBLE_EQ(report.communication[1].allreduce_bytes, r * 2.0 * (r - 1) / r * bytes);
}

// A measured all-reduce table (cluster.h, `pipetwin calibrate`) replaces the ring for groups of
// its size inside one server: the iteration is forward + backward + the table's time at the
// gradient bytes (interpolated between the probe's sizes); other group sizes keep the ring.
TEST(SimClosedForm, MeasuredAllReduceTableReplacesTheRingForItsGroupSize) {
  const double bytes = 3e6, gbps = 100, latency_us = 10;
  Cluster cluster = TwoLevelCluster(2, 1, gbps, latency_us, 0, 0);
  cluster.levels[0].allreduce = {2, {1e6, 4e6}, {2e-3, 8e-3}};  // 3e6 bytes: 6 ms
  const Scenario s = MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes), cluster, EvenPlan(1, 1, 2),
                                  "flush", 1, 1);
  const Report report = simtest::Simulate(s);
  EXPECT_LT(RelativeError(report.iteration_s, 3e-3 + 6e-3), kTolerance) << report.iteration_s;
  EXPECT_DOUBLE_EQ(report.communication[0].allreduce_bytes, 2 * bytes);  // as the ring counts
  // A table for 4 ranks says nothing of a group of 2: the ring over the links.
  cluster.levels[0].allreduce.ranks = 4;
  const Scenario ring = MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes), cluster,
                                     EvenPlan(1, 1, 2), "flush", 1, 1);
  const double expected = 3e-3 + bytes / (gbps * 1e9 / 8) + 2 * latency_us * 1e-6;
  EXPECT_LT(RelativeError(simtest::Simulate(ring).iteration_s, expected), kTolerance);
}

// A worker that holds several model stages all-reduces the gradients of every one of them (the
// executor: one all-reduce per chunk, in turn, at the AllReduce op), not its first chunk's alone.
// DualPipe on 2 ranks: each rank holds both stages, one copy each, so each all-reduces two
// stages' gradients of P bytes; the measured table's time at P is charged twice per iteration.
TEST(SimClosedForm, MultiChunkWorkerAllReducesTheGradientsOfEveryChunk) {
  const double p_bytes = 1.5e6;
  auto iteration = [&](double scale, double* allreduce_bytes) {
    Cluster cluster = TwoLevelCluster(2, 1, 800, 0, 0, 0);
    cluster.levels[0].allreduce = {2, {1e6, 4e6}, {2e-3 * scale, 8e-3 * scale}};  // at P: 3 ms
    const Report r = simtest::Simulate(MakeScenario(EqualLayers(2, 1, 2, 0, p_bytes), cluster,
                                                    EvenPlan(2, 1, 1), "dualpipe", 4, 3));
    if (allreduce_bytes) *allreduce_bytes = r.communication[0].allreduce_bytes;
    return r.iteration_s;
  };
  double bytes = 0;
  const double slow = iteration(2, &bytes), fast = iteration(1, nullptr);
  // Counted per member as for one stage: 3 iterations x 2 members x 2 stages x P.
  EXPECT_DOUBLE_EQ(bytes, 3 * 2 * 2 * p_bytes);
  // Both stages' all-reduces follow the last backward, one after the other: doubling the table
  // adds 2 x 3 ms to the iteration.
  EXPECT_LT(RelativeError(slow - fast, 2 * 3e-3), kTolerance) << slow << " against " << fast;
}

// Where a server's workers outnumber its cores the executor runs them under SCHED_RR, and the
// all-reduce measured that way (allreduce_round_robin) replaces the default policy's: two
// replicas on one shared core reduce in the round-robin table's 3 ms instead of 6 ms; on two
// cores (one worker each) the round-robin table is not theirs.
TEST(SimClosedForm, AnOversubscribedServerTakesTheRoundRobinAllReduceTable) {
  const double bytes = 3e6;
  auto iteration = [&](int cores, bool round_robin_table) {
    Cluster cluster = TwoLevelCluster(2, 1, 100, 10, 0, 0);
    cluster.shared_cores = cores;
    cluster.levels[0].allreduce = {2, {1e6, 4e6}, {2e-3, 8e-3}};  // 3e6 bytes: 6 ms
    if (round_robin_table) cluster.levels[0].allreduce_round_robin = {2, {1e6, 4e6}, {1e-3, 4e-3}};
    return simtest::Simulate(MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes), cluster,
                                          EvenPlan(1, 1, 2), "flush", 1, 1))
        .iteration_s;
  };
  EXPECT_NEAR(iteration(1, false) - iteration(1, true), 3e-3, 1e-9);
  EXPECT_NEAR(iteration(2, false), iteration(2, true), 1e-12);
}

// Two servers of two replicas: a ring inside each server reduce-scatters (S/2 each way over
// the devices' own links), then the two members holding the same half ring across the servers;
// both of a server's rings go through its one NIC, which so carries S per direction; then the
// all-gathers mirror. The planners' PipelineCostModel::AllReduceCost charges the same.
TEST(SimClosedForm, HierarchicalAllReduceSharesTheServersNic) {
  const double bytes = 4e8, b0 = 400e9 / 8, b1 = 25e9 / 8, latency1 = 5e-6;
  const Cluster cluster = TwoLevelCluster(2, 2, 400, 0, 25, 5);
  const Scenario s = MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes), cluster, EvenPlan(1, 1, 4),
                                  "flush", 1, 1);
  const Report report = simtest::Simulate(s);
  const double inside = 2 * (bytes / 2) / b0;              // reduce-scatter + all-gather
  const double across = 2 * (bytes / 2) / b1 + 2 * latency1;  // two half-shards share the NIC
  EXPECT_LT(RelativeError(report.iteration_s, 3e-3 + inside + across), kTolerance)
      << report.iteration_s << " vs " << 3e-3 + inside + across;
  EXPECT_GT(report.communication[0].allreduce_bytes, 0);
  EXPECT_GT(report.communication[1].allreduce_bytes, 0);
}

// Buckets launched during the backward hide part of the all-reduce behind it. The bucket count is
// the scenario's (training.allreduce_buckets), carried by the op lists' AllReduce ops; one by
// default, after the backward.
TEST(SimClosedForm, BucketsOverlapTheAllReduceWithTheBackward) {
  Scenario s = MakeScenario(EqualLayers(4, 1, 20, 1e6, 1e8),
                            TwoLevelCluster(1, 4, 800, 0, 100, 0), EvenPlan(1, 4, 4), "flush",
                            1, 1);
  const double after = simtest::Simulate(s).iteration_s;
  s.training.allreduce_buckets = 4;
  const double overlapped = simtest::Simulate(s).iteration_s;
  // Four 100 MB buckets of 2 (3/4) 100 MB / 12.5 GB/s = 12 ms each; the first three hide
  // behind the backward still running (20 ms per layer).
  EXPECT_LT(RelativeError(after, 84e-3 + 4 * 12e-3), kTolerance) << after;
  EXPECT_LT(RelativeError(overlapped, 84e-3 + 12e-3), kTolerance) << overlapped;
}

}  // namespace
}  // namespace pipetwin
