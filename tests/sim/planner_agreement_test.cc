// The planners' predictions against the simulator on the plan they pick, within 5%: a subset of
// scripts/planner_sweep.py's configurations, as a guard against regressions. Among them the
// ones that once disagreed: a depth that does not divide the server (replicas spread unevenly,
// so the simulator runs one flat ring; the cost model runs the same ring plan, PlanAllReduce),
// and 2BW bound by its all-reduces (every stage's ring at once: the busiest NIC's work). It is
// not the whole claim: the sweep also finds gaps the cost model does not close (deep 2BW
// pipelines whose transfers cross NICs the rings load, PipeDream's paper model on ResNet-50),
// recorded with its table in the communication-order issue's note.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/sim/sim_test_support.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin {
namespace {

nlohmann::json Gpt(int hidden, int servers, int batch, const std::string& planner,
                   const std::string& schedule, bool recompute = false, int iterations = 4) {
  return {{"name", "agreement"},
          {"workload", {{"generator", "gpt"}, {"layers", 32}, {"hidden", hidden}, {"heads", 32},
                        {"sequence", 512}, {"vocabulary", 51200}, {"microbatch", 1},
                        {"dtype_bytes", 2}}},
          {"cluster", {{"preset", "p3.16xlarge"}, {"servers", servers}}},
          {"planner", planner},
          {"schedule", schedule},
          {"training", {{"global_batch_size", batch}, {"microbatch_size", 1},
                        {"microbatches", 32}, {"iterations", iterations}, {"optimizer", "adam"},
                        {"optimizer_bytes_per_parameter", 8}, {"recompute", recompute}}}};
}

void ExpectAgreement(const nlohmann::json& doc, const std::string& what) {
  Scenario s = ScenarioFromJson(doc, what, ".");
  const Plan plan = PlanForScenario(s);
  s.plan = plan;
  s.planner.reset();
  const Report r = simtest::Simulate(s);
  EXPECT_LT(simtest::RelativeError(plan.predicted_samples_per_s, r.samples_per_s), 0.05)
      << what << ": planned " << plan.predicted_samples_per_s << " samples/s, simulated "
      << r.samples_per_s;
}

TEST(SimPlannerAgreement, FlushGPipeAndTwoBWOnV100Servers) {
  ExpectAgreement(Gpt(3072, 8, 512, "flush", "flush"), "gpt-3.8b 64 V100 flush batch 512");
  ExpectAgreement(Gpt(3072, 4, 64, "flush", "flush"), "gpt-3.8b 32 V100 flush batch 64");
  ExpectAgreement(Gpt(2304, 8, 512, "gpipe", "gpipe", true),
                  "gpt-2.2b 64 V100 gpipe with recomputation batch 512");
  ExpectAgreement(Gpt(3072, 8, 2048, "2bw", "2bw"), "gpt-3.8b 64 V100 2bw batch 2048");
  ExpectAgreement(Gpt(2304, 8, 64, "2bw", "2bw"), "gpt-2.2b 64 V100 2bw batch 64");
}

TEST(SimPlannerAgreement, ReplicasSpreadUnevenlyRunOneFlatRing) {
  // Depth 3 on servers of 8: each stage's 10 or 21 replicas sit 3, 3, 2, 2... to a server.
  ExpectAgreement(Gpt(2304, 4, 64, "flush", "flush"), "gpt-2.2b 32 V100 flush batch 64");
  ExpectAgreement(Gpt(2304, 8, 64, "gpipe", "gpipe"), "gpt-2.2b 64 V100 gpipe batch 64");
}

TEST(SimPlannerAgreement, TwoBWBoundByItsAllReducesTakesTheBusiestNic) {
  // Depth 4, width 8: the four stages' rings carry about as many bytes through each NIC per
  // update as the update computes for; 16 iterations let the rings' phases settle.
  ExpectAgreement(Gpt(2304, 4, 512, "2bw", "2bw", false, 16), "gpt-2.2b 32 V100 2bw batch 512");
}

TEST(SimPlannerAgreement, DataParallelOnClusterA) {
  ExpectAgreement({{"name", "vgg16"},
                   {"workload", {{"generator", "vgg16"}, {"image_size", 224}, {"batch", 64},
                                 {"dtype_bytes", 4}}},
                   {"cluster", {{"preset", "cluster-a"}, {"servers", 4}}},
                   {"planner", "data-parallel"},
                   {"schedule", "flush"},
                   {"training", {{"microbatch_size", 64}, {"microbatches", 16},
                                 {"iterations", 4}, {"optimizer", "momentum"}}}},
                  "vgg16 cluster-a 4x4 data parallel");
}

}  // namespace
}  // namespace pipetwin
