// What lets the simulator reach 16,384 GPUs (issue: cost that grows with the work): ring
// collectives as one flow per member and phase instead of one message per step, checked against
// the stepped ring, the core's closed form and a shared NIC; and identical data-parallel
// replicas simulated once per group (sim/symmetry.h), checked against the full simulation.
#include <gtest/gtest.h>

#include <string>

#include "partition/cost/communication.h"
#include "partition/report/report.h"
#include "sim/setup.h"
#include "sim/symmetry.h"
#include "tests/sim/sim_test_support.h"

namespace pipetwin {
namespace {

using simtest::EqualLayers;
using simtest::EvenPlan;
using simtest::MakeScenario;
using simtest::RelativeError;
using simtest::TwoLevelCluster;

sim::SimOptions Options(sim::CollectiveModel collectives, bool symmetry) {
  sim::SimOptions o;
  o.collectives = collectives;
  o.symmetry = symmetry;
  o.record_memory_timeline = true;
  return o;
}

struct Case {
  std::string name;
  Scenario scenario;
};

// Replicated pipelines whose all-reduces meet pipeline traffic on the same NICs: one device per
// server (every message and every ring hop crosses a NIC), two per server (a hierarchical ring,
// two rings through each NIC), buckets overlapping the backward, a sharded optimizer.
std::vector<Case> ReplicatedCases() {
  std::vector<Case> cases;
  const Workload w = EqualLayers(4, 1.0, 2.0, 4e7, 2e8);
  auto add = [&](const std::string& name, int per_server, int servers, int stages, int replicas,
                 const std::string& schedule, int buckets, bool sharded) {
    Scenario s = MakeScenario(w, TwoLevelCluster(per_server, servers, 400, 1, 25, 5),
                              EvenPlan(stages, 4 / stages, replicas), schedule, 4, 2);
    s.training.allreduce_buckets = buckets;
    s.training.distributed_optimizer = sharded;
    cases.push_back({name, s});
  };
  add("flat ring, flush", 1, 8, 2, 4, "flush", 1, false);
  add("flat ring, 1f1b buckets", 1, 8, 2, 4, "flush", 4, false);
  add("flat ring, gpipe", 1, 6, 2, 3, "gpipe", 2, false);
  add("hierarchical ring, flush", 2, 4, 2, 4, "flush", 2, false);
  add("hierarchical, 4 per server, 2bw", 4, 4, 2, 8, "2bw", 1, false);
  add("one stage, 8 replicas over 4 servers", 2, 4, 1, 8, "flush", 3, false);
  add("sharded optimizer", 1, 8, 2, 4, "flush", 2, true);
  return cases;
}

TEST(SimCollectiveModel, PhasesMatchTheSteppedRingWithinOnePercent) {
  int fewer = 0;
  for (const Case& c : ReplicatedCases()) {
    const Report steps = simtest::Simulate(c.scenario, Options(sim::CollectiveModel::kSteps, false));
    const Report phases =
        simtest::Simulate(c.scenario, Options(sim::CollectiveModel::kPhases, false));
    EXPECT_LT(RelativeError(phases.iteration_s, steps.iteration_s), 0.01)
        << c.name << ": " << phases.iteration_s << " vs " << steps.iteration_s;
    for (size_t l = 0; l < steps.communication.size(); ++l) {
      EXPECT_NEAR(phases.communication[l].allreduce_bytes, steps.communication[l].allreduce_bytes,
                  1e-6 * steps.communication[l].allreduce_bytes + 1)
          << c.name;
      EXPECT_EQ(phases.communication[l].messages, steps.communication[l].messages) << c.name;
    }
    // No more SimGrid activities (a ring of 3 has 2 steps a phase: a flow and a latency's
    // sleep against two messages), and fewer over the cases.
    const long long a = phases.details["activities"], b = steps.details["activities"];
    EXPECT_LE(a, b) << c.name;
    fewer += a < b;
  }
  EXPECT_GE(fewer, 6);
}

// Data parallelism alone on an idle network: the iteration is forward + backward + the core's
// closed form of the ring (RingAllReduceCost: 2(g-1)/g S over the slowest hop's share, plus a
// latency and a per-message overhead per step), flat and hierarchical.
TEST(SimCollectiveModel, PhasesMeetTheRingClosedFormOnAnIdleNetwork) {
  const double bytes = 4e8;
  for (const auto& [per_server, servers] : {std::pair{1, 4}, {1, 7}, {2, 4}, {4, 2}, {8, 1}}) {
    Cluster cluster = TwoLevelCluster(per_server, servers, 400, 2, 25, 10);
    cluster.communication_overhead_us = 30;
    const int g = per_server * servers;
    const Scenario s = MakeScenario(EqualLayers(1, 1, 2, 1e6, bytes), cluster, EvenPlan(1, 1, g),
                                    "flush", 1, 1);
    const Report r = simtest::Simulate(s, Options(sim::CollectiveModel::kPhases, false));
    std::vector<int> devices;
    for (int d = 0; d < g; ++d) devices.push_back(d);
    const double ring_s = RingAllReduceCost(cluster, devices).Ms(bytes) * 1e-3;
    // One micro-batch: its forward, its backward and a message's overhead nowhere else.
    EXPECT_LT(RelativeError(r.iteration_s, 3e-3 + ring_s), 1e-6)
        << per_server << " x " << servers << ": " << r.iteration_s << " vs " << 3e-3 + ring_s;
  }
}

// Two stages' rings through every server's NIC at once (servers of two devices, one replica per
// server, gradients large against the compute): each gets half the NIC, so the all-reduces take
// twice as long as one ring alone, in both models.
TEST(SimCollectiveModel, TwoRingsOnOneNicTakeTwiceAsLong) {
  const double bytes = 1e9, b1 = 25e9 / 8, latency_s = 5e-6;
  const int replicas = 4;
  const double ring = 2.0 * (replicas - 1) / replicas * bytes / b1;
  const Cluster cluster = TwoLevelCluster(2, replicas, 4000, 0, 25, 5);
  const Scenario s = MakeScenario(EqualLayers(2, 1e-3, 1e-3, 1e3, bytes), cluster,
                                  EvenPlan(2, 1, replicas), "flush", 1, 1);
  for (auto model : {sim::CollectiveModel::kPhases, sim::CollectiveModel::kSteps}) {
    const Report r = simtest::Simulate(s, Options(model, false));
    const double expected = 2 * ring + 2 * (replicas - 1) * latency_s;
    EXPECT_LT(RelativeError(r.iteration_s, expected), 0.01) << r.iteration_s << " vs " << expected;
    EXPECT_GT(r.iteration_s, 1.9 * ring);
  }
}

TEST(SimSymmetry, IdenticalReplicasOnIdenticalLinksReduceToOneGroup) {
  const Workload w = EqualLayers(4, 1.0, 2.0, 4e7, 2e8);
  auto reduce = [&](const Cluster& cluster, const Plan& plan, bool symmetry = true) {
    sim::SimOptions o;
    o.symmetry = symmetry;
    const Scenario s = MakeScenario(w, cluster, plan, "flush", 4, 1);
    return sim::ReduceReplicas(sim::PrepareSimulation(s, plan, o));
  };
  // A replica per server pair: two replicas (a ring needs a hop that leaves its server).
  sim::ReplicaReduction r = reduce(TwoLevelCluster(2, 8, 400, 1, 25, 5), EvenPlan(2, 2, 8));
  EXPECT_EQ(r.replicas, 8);
  EXPECT_EQ(r.simulated, 2);
  EXPECT_TRUE(r.Simulated(0));
  EXPECT_TRUE(r.Simulated(1));
  EXPECT_FALSE(r.Simulated(2));
  EXPECT_EQ(r.representative[8 + 5], 8 + 1);  // stage 1, replica 5: replica 1's
  // Two replicas per server: whole servers, two of them.
  r = reduce(TwoLevelCluster(4, 8, 400, 1, 25, 5), EvenPlan(2, 2, 16));
  EXPECT_EQ(r.simulated, 4);
  // Not where it would not be exact.
  EXPECT_EQ(reduce(TwoLevelCluster(2, 8, 400, 1, 25, 5), EvenPlan(2, 2, 8), false).simulated, 8);
  // Megatron-LM's order (data-parallel before pipeline: stage s, replica r on device 8s + r):
  // a stage's replicas fill servers of their own; its hierarchical ring needs two servers of
  // each stage for a folded hop to leave its server.
  const Cluster pairs = TwoLevelCluster(2, 8, 400, 1, 25, 5);
  r = reduce(pairs, EvenPlan(2, 2, 8, {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}));
  EXPECT_EQ(r.simulated, 4) << r.why_not;
  // Two devices swapped: no shift keeps every device's place in its server.
  r = reduce(pairs, EvenPlan(2, 2, 8, {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 15, 14}}));
  EXPECT_EQ(r.simulated, 8);
  EXPECT_FALSE(r.why_not.empty());
  Cluster shared = TwoLevelCluster(8, 1, 400, 1, 25, 5);
  shared.shared_cores = 2;
  r = reduce(shared, EvenPlan(2, 2, 4));
  EXPECT_EQ(r.simulated, 4);
  EXPECT_NE(r.why_not.find("CPU cores"), std::string::npos) << r.why_not;
  // 3 replicas of 2 stages on servers of 4: the last server half used.
  r = reduce(TwoLevelCluster(4, 2, 400, 1, 25, 5), EvenPlan(2, 2, 3));
  EXPECT_EQ(r.simulated, 3);
}

// The reduced simulation's report is the full one's, worker by worker, memory and communication
// counts included: only the simulator's own bookkeeping (activities, wall times) differs.
TEST(SimSymmetry, TheReducedSimulationReportsWhatTheFullOneDoes) {
  std::vector<Case> cases = ReplicatedCases();
  {
    Scenario s = MakeScenario(EqualLayers(4, 1.0, 2.0, 4e7, 2e8),
                              TwoLevelCluster(2, 8, 400, 1, 25, 5), EvenPlan(2, 2, 8),
                              "interleaved", 4, 2);
    s.training.chunks = 2;
    s.plan = EvenPlan(4, 1, 4);
    s.plan->schedule = ScheduleKind::kInterleaved;
    cases.push_back({"interleaved, 2 chunks", s});
  }
  for (const char* v : {"zb-v", "dualpipe-v"}) {
    Scenario s = MakeScenario(EqualLayers(4, 1.0, 2.0, 4e7, 2e8),
                              TwoLevelCluster(2, 8, 400, 1, 25, 5), EvenPlan(4, 1, 8), v, 4, 2);
    s.plan = EvenPlan(4, 1, 8);
    s.plan->schedule = ParseScheduleKind(v);
    cases.push_back({v, s});
  }
  {
    Scenario s = MakeScenario(EqualLayers(4, 1.0, 2.0, 4e7, 2e8),
                              TwoLevelCluster(2, 8, 400, 1, 25, 5),
                              EvenPlan(2, 2, 8, {{0, 1, 2, 3, 4, 5, 6, 7},
                                                 {8, 9, 10, 11, 12, 13, 14, 15}}),
                              "flush", 4, 2);
    s.training.allreduce_buckets = 2;
    cases.push_back({"Megatron-LM's order", s});
  }
  int reduced = 0;
  for (const Case& c : cases) {
    const sim::SimOptions on = Options(sim::CollectiveModel::kPhases, true);
    const sim::SimOptions off = Options(sim::CollectiveModel::kPhases, false);
    const Report a = simtest::Simulate(c.scenario, on);
    const Report b = simtest::Simulate(c.scenario, off);
    nlohmann::json ja = ReportToJson(a), jb = ReportToJson(b);
    EXPECT_EQ(jb["details"]["simulated_replicas"], c.scenario.plan->stages[0].replicas);
    if (ja["details"]["simulated_replicas"] < jb["details"]["simulated_replicas"]) ++reduced;
    for (const char* k : {"activities", "platform_wall_s", "run_wall_s", "activities_per_s",
                          "simulated_replicas"}) {
      ja["details"].erase(k);
      jb["details"].erase(k);
    }
    EXPECT_EQ(ja.dump(), jb.dump()) << c.name;
  }
  EXPECT_GE(reduced, 9);  // most cases were reduced, so the comparison says something
}

}  // namespace
}  // namespace pipetwin
