// The simulator against an independent list-scheduling replay (tests/oracle/list_schedule.h):
// with contention-free links, every schedule kind on random unequal stages must take the time
// list scheduling gives (each op as soon as its worker is free and its inputs have arrived),
// within 0.1%. This is what the lists' order of communication (partition/schedule/op.h) is for;
// the cases follow the communication-order issue: 2 to 8 stages, 1 to 4p micro-batches, each
// stage's forward and backward drawn from 1 to 10 ms, each cut's transfer from 0 to 2 ms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>

#include "sim/setup.h"
#include "tests/oracle/list_schedule.h"
#include "tests/sim/sim_test_support.h"

namespace pipetwin {
namespace {

constexpr double kTolerance = 1e-3;
constexpr double kGbps = 100;  // 12.5 GB/s: a transfer of t seconds is t * 12.5e9 bytes

struct Case {
  ScheduleKind kind;
  int p = 2, m = 1, chunks = 1;
  bool recompute = false;
  RecomputeTiming timing = RecomputeTiming::kInBackward;
  double latency_us = 0;
  oracle::ListScheduleCase costs;

  std::string Describe() const {
    std::ostringstream out;
    out << ScheduleKindName(kind) << " p=" << p << " m=" << m << " chunks=" << chunks
        << (recompute ? std::string(" recompute ") + RecomputeTimingName(timing) : "")
        << " latency " << latency_us << " us; F/B/transfer ms:";
    for (size_t g = 0; g < costs.forward.size(); ++g)
      out << " " << costs.forward[g] * 1e3 << "/" << costs.backward[g] * 1e3 << "/"
          << costs.transfer[g] * 1e3;
    return out.str();
  }
};

Case RandomCase(ScheduleKind kind, std::mt19937& rng) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng); };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng); };
  Case c;
  c.kind = kind;
  c.p = integer(2, 8);
  c.chunks = kind == ScheduleKind::kInterleaved ? 2 : 1;
  if (kind == ScheduleKind::kInterleaved) c.m = c.p * integer(1, 4);  // Megatron-LM: m % p == 0
  else if (kind == ScheduleKind::kTwoBW) c.m = integer(c.p, 4 * c.p);  // 2BW: m >= p in flight
  else c.m = integer(1, 4 * c.p);
  c.recompute = integer(0, 3) == 0;
  c.timing = integer(0, 1) ? RecomputeTiming::kInBackward : RecomputeTiming::kEarly;
  c.latency_us = uniform(0, 20);
  c.costs.recompute_in_backward = c.timing == RecomputeTiming::kInBackward;
  for (int g = 0; g < c.p * c.chunks; ++g) {
    c.costs.forward.push_back(uniform(1, 10) * 1e-3);
    c.costs.backward.push_back(uniform(1, 10) * 1e-3);
    c.costs.transfer.push_back(uniform(0, 2) * 1e-3);
  }
  return c;
}

Scenario ScenarioOf(const Case& c) {
  const int G = c.p * c.chunks;
  Workload w = simtest::EqualLayers(G, 1, 1, 0, 4e3);
  const double bandwidth = kGbps * 1e9 / 8;
  for (int g = 0; g < G; ++g) {
    w.layers[g].forward_ms = c.costs.forward[g] * 1e3;
    w.layers[g].backward_ms = c.costs.backward[g] * 1e3;
    // The transfer drawn for the cut, less the latency every message pays.
    w.layers[g].activation_bytes =
        std::max(0.0, c.costs.transfer[g] - c.latency_us * 1e-6) * bandwidth;
  }
  Cluster cluster = simtest::TwoLevelCluster(c.p, 1, kGbps, c.latency_us, 0, 0);
  cluster.network_model = "contention_free";
  Scenario s = simtest::MakeScenario(w, cluster, simtest::EvenPlan(G, 1, 1),
                                     ScheduleKindName(c.kind), c.m,
                                     c.kind == ScheduleKind::kTwoBW ? 2 : 1);
  s.training.chunks = c.chunks;
  s.training.recompute = c.recompute;
  s.training.recompute_timing = c.timing;
  s.training.send_mode = c.costs.blocking_sends ? SendMode::kBlocking : SendMode::kEager;
  return s;
}

// Under the sanitizers (scripts/sanitize.sh) a tenth of the cases: that build looks for memory
// errors and undefined behaviour, which the first cases drive through the same code; the plain
// build checks every case against the oracle.
#ifdef PIPETWIN_ASAN
constexpr int kCaseDivisor = 10;
#else
constexpr int kCaseDivisor = 1;
#endif

// `cases` random cases of `kind` (a fixed seed per kind; a tenth under the sanitizers): the
// simulated makespan against the oracle's; with `blocking`, every worker waits for its sends
// before its next compute op.
void CheckKind(ScheduleKind kind, int cases, bool blocking = false) {
  cases = std::max(1, cases / kCaseDivisor);
  std::mt19937 rng(20261201u + static_cast<unsigned>(kind) + (blocking ? 7919u : 0u));
  int checked = 0;
  double worst = 0;
  for (int i = 0; i < cases; ++i) {
    Case c = RandomCase(kind, rng);
    c.costs.blocking_sends = blocking;
    const Scenario s = ScenarioOf(c);
    const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
    // The oracle's transfer is what the message costs: latency plus bytes over bandwidth.
    for (size_t g = 0; g < c.costs.transfer.size(); ++g)
      c.costs.transfer[g] = c.latency_us * 1e-6 +
                            s.workload.layers[g].activation_bytes / (kGbps * 1e9 / 8);
    const double expected = oracle::ListScheduleMakespan(setup.schedule, c.costs);
    sim::SimOptions options;
    options.record_memory_timeline = false;
    const double got = simtest::Simulate(s, options).makespan_s;
    const double error = simtest::RelativeError(got, expected);
    worst = std::max(worst, error);
    EXPECT_LT(error, kTolerance) << "case " << i << ": " << c.Describe() << ": simulated "
                                 << got << " s, list schedule " << expected << " s";
    ++checked;
  }
  std::printf("%s%s: %d random cases, worst relative difference %.2e\n",
              ScheduleKindName(kind).c_str(), blocking ? " (blocking sends)" : "", checked, worst);
}

TEST(SimListSchedule, GPipe) { CheckKind(ScheduleKind::kGPipe, 1000); }
TEST(SimListSchedule, Flush) { CheckKind(ScheduleKind::kFlush, 1000); }
TEST(SimListSchedule, PipeDream) { CheckKind(ScheduleKind::kPipeDream, 1000); }
TEST(SimListSchedule, TwoBW) { CheckKind(ScheduleKind::kTwoBW, 1000); }
TEST(SimListSchedule, Interleaved) { CheckKind(ScheduleKind::kInterleaved, 1000); }
TEST(SimListSchedule, ZeroBubbleH1) { CheckKind(ScheduleKind::kZeroBubbleH1, 1000); }
// Megatron-LM's blocking pipeline sends (schedule/op.h, SendMode::kBlocking), every kind.
TEST(SimListSchedule, BlockingSends) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kPipeDream,
                            ScheduleKind::kTwoBW, ScheduleKind::kInterleaved,
                            ScheduleKind::kZeroBubbleH1})
    CheckKind(kind, 150, /*blocking=*/true);
}

// The smallest case, by hand: GPipe, 3 stages, 2 micro-batches, forwards 5, 1 and
// 10 ms, backwards 1 ms, free transfers. Stage 2 starts micro-batch 0 at 6 ms and 1 at 16 ms,
// its backwards end at 27 and 28; stage 1's at 28 and 29; stage 0's at 29 and 30 ms.
TEST(SimListSchedule, TheSmallestCaseByHand) {
  Case c;
  c.kind = ScheduleKind::kGPipe;
  c.p = 3;
  c.m = 2;
  c.costs.forward = {5e-3, 1e-3, 10e-3};
  c.costs.backward = {1e-3, 1e-3, 1e-3};
  c.costs.transfer = {0, 0, 0};
  const Scenario s = ScenarioOf(c);
  const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
  EXPECT_NEAR(oracle::ListScheduleMakespan(setup.schedule, c.costs), 30e-3, 1e-12);
  EXPECT_NEAR(simtest::Simulate(s).makespan_s, 30e-3, 30e-6);
}

}  // namespace
}  // namespace pipetwin
