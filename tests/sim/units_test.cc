// The SimGrid-free pieces: gradient buckets, report JSON and CSV, sweep variations, repeated schedules,
// the child process a simulation runs in.
#include <new>
#include <stdexcept>

#include <unistd.h>

#include <gtest/gtest.h>

#include "partition/util/error.h"
#include "partition/report/report.h"
#include "sim/child_process.h"
#include "sim/collective.h"
#include "sim/setup.h"
#include "sim/sweep.h"
#include "tests/sim/sim_test_support.h"
#include "partition/report/csv.h"
#include "partition/util/schema_version.h"
#include "partition/schedule/check.h"
#include "partition/util/format.h"

namespace pipetwin {
namespace {

using simtest::TwoLevelCluster;

// A zero-bubble schedule's BackwardInput (I) and BackwardWeight (W) split a stage's backward in
// halves (Qi et al. 2024), except on the model's first stage, whose input is data: its I computes
// nothing and its W the whole backward, as the executor and torch.distributed.pipelining run it.
TEST(SimSetup, FirstStageBackwardIsAllWeightGradient) {
  const Scenario s = simtest::MakeScenario(simtest::EqualLayers(2, 1, 4, 1e3, 1e3),
                                           TwoLevelCluster(2, 1, 800, 0, 0, 0),
                                           simtest::EvenPlan(2, 1, 1), "zb-h1", 4, 1);
  const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
  int seen = 0;
  for (const WorkerProgram& w : setup.schedule.workers)
    for (const Op& op : w.ops) {
      if (op.kind != OpKind::kBackwardInput && op.kind != OpKind::kBackwardWeight) continue;
      const double b = setup.model_stages[op.stage].backward_ms * 1e-3;
      const bool input = op.kind == OpKind::kBackwardInput;
      const double expected = op.stage == 0 ? (input ? 0 : b) : b / 2;
      EXPECT_NEAR(setup.ComputeSeconds(op), expected + (expected > 0 ? setup.launch_overhead_s : 0),
                  1e-15)
          << OpKindName(op.kind) << " of stage " << op.stage;
      ++seen;
    }
  EXPECT_EQ(seen, 2 * 2 * 4);  // I and W of 4 micro-batches on 2 stages
}

// A layer that gives its own I/W split (an analytic Megatron layer) keeps it on every stage, the
// first included, and its collectives go with the pass it names; the two passes may add up to
// more than the backward (collectives that ran beside the other pass's kernels run alone).
TEST(SimSetup, LayersOwnBackwardSplitReachesTheZeroBubbleOps) {
  Workload w = simtest::EqualLayers(2, 1, 4, 1e3, 1e3);
  for (Layer& l : w.layers) {
    l.backward_input_ms = 2.8;  // 0.7 of the backward
    l.backward_weight_ms = 1.8;  // 0.45
    GroupCollectives c;
    c.backward_exposed_ms = 0.2;
    c.backward_bytes = 300;
    c.input_exposed_ms = 0.5;
    c.input_bytes = 250;
    c.weight_exposed_ms = 0.3;
    c.weight_bytes = 50;
    l.collectives = c;
  }
  const Scenario s = simtest::MakeScenario(w, TwoLevelCluster(2, 1, 800, 0, 0, 0),
                                           simtest::EvenPlan(2, 1, 1), "zb-h1", 4, 1);
  const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
  int seen = 0;
  for (const WorkerProgram& worker : setup.schedule.workers)
    for (const Op& op : worker.ops) {
      if (op.kind != OpKind::kBackwardInput && op.kind != OpKind::kBackwardWeight) continue;
      const bool input = op.kind == OpKind::kBackwardInput;
      const double b = setup.model_stages[op.stage].backward_ms * 1e-3;  // 4 ms, scaled
      EXPECT_NEAR(setup.ComputeSeconds(op), b * (input ? 0.7 : 0.45) + setup.launch_overhead_s,
                  1e-15)
          << OpKindName(op.kind) << " of stage " << op.stage;
      const sim::SimulationSetup::GroupCollectiveWork g = setup.GroupCollectivesOf(op);
      EXPECT_NEAR(g.exposed_s, b * (input ? 0.5 : 0.3) / 4, 1e-15);
      EXPECT_DOUBLE_EQ(g.overlapped_s, 0);
      // Bytes scale with the samples of a micro-batch (here the reference's one).
      EXPECT_DOUBLE_EQ(g.bytes, input ? 250 : 50);
      ++seen;
    }
  EXPECT_EQ(seen, 2 * 2 * 4);
}

TEST(SimCollective, GradientBucketsOfAboutEqualBytes) {
  const auto buckets = sim::GradientBuckets({4, 1, 1, 1, 1, 4}, {1, 1, 1, 1, 1, 1}, 3);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_DOUBLE_EQ(buckets[0].bytes, 4);   // reaches a third of 12 at once
  EXPECT_DOUBLE_EQ(buckets[1].bytes, 4);
  EXPECT_DOUBLE_EQ(buckets[2].bytes, 4);
  EXPECT_DOUBLE_EQ(buckets[0].backward_fraction + buckets[1].backward_fraction +
                       buckets[2].backward_fraction, 1);
  EXPECT_EQ(sim::GradientBuckets({1, 1}, {1, 1}, 8).size(), 2u);  // never more than layers
  EXPECT_EQ(sim::GradientBuckets({1, 1, 1}, {1, 1, 1}, 1).size(), 1u);
}

TEST(SimReport, JsonRoundTripAndCsvQuoting) {
  Report r;
  r.scenario = "a, \"quoted\" name";
  r.samples_per_s = 12.5;
  r.iteration_s = 0.25;
  r.workers.push_back({0, 3, 0, 0, 1, 2, 0.5, 0.1});
  DeviceReport d;
  d.device = 3;
  d.worker = 0;
  d.capacity_bytes = 10;
  d.peak_memory_bytes = 12;
  d.over_capacity = true;
  d.timeline = {{0, {1, 2, 3, 4, 0}}, {0.5, {1, 2, 3, 6, 1}}};
  r.devices.push_back(d);
  r.stages.push_back({0, 0, 0.5, 1, 2, 3, 4});
  r.communication.push_back({1, "cluster", "ethernet", 100, 50, 7});
  const Report back = ReportFromJson(ReportToJson(r), "r.json");
  EXPECT_EQ(ReportToJson(back), ReportToJson(r));
  EXPECT_EQ(back.devices[0].timeline[1].bytes.activations, 6);
  EXPECT_EQ(CsvField(r.scenario), "\"a, \"\"quoted\"\" name\"");
  const std::string header = ReportCsvHeader({"x"}), row = ReportCsvRow(r, {"x"}, {"1"});
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 19);
  EXPECT_EQ(std::count(row.begin(), row.end(), ','), 20);  // one more inside the quoted name
  EXPECT_EQ(header.substr(0, 17), "x,schema_version,");
  EXPECT_EQ(row.substr(0, 4), "1,2,");
  EXPECT_EQ(ReportCsvErrorRow({"x"}, {"1"}, "bad").substr(0, 4), "1,2,");
  // A varied setting that is also a report column is written once, where the varied ones are.
  const std::string varied = ReportCsvHeader({"schedule"});
  EXPECT_EQ(varied.find("schedule"), varied.rfind("schedule")) << varied;
  EXPECT_EQ(std::count(varied.begin(), varied.end(), ','), 18);
  const std::string varied_row = ReportCsvRow(r, {"schedule"}, {"flush"});
  EXPECT_EQ(std::count(varied_row.begin(), varied_row.end(), ','), 19);
  nlohmann::json future = ReportToJson(r);
  EXPECT_EQ(future["schema_version"], kSchemaVersion);
  future["schema_version"] = kSchemaVersion + 1;
  try {
    ReportFromJson(future, "r.json");
    ADD_FAILURE() << "a report of a newer schema was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("r.json: schema_version: expected at most"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(ReportFromJson(nlohmann::json{{"source", "oracle"}}, "r.json"), InputError);
}

TEST(SimSweep, VariationsAndTheirProduct) {
  const sim::Variation v = sim::ParseVariation("cluster.levels[1].bandwidth_gbps=1,10,25");
  EXPECT_EQ(v.values[1], 10);
  EXPECT_EQ(v.labels[2], "25");
  const sim::Variation k = sim::ParseVariation("schedule=gpipe,flush");
  EXPECT_EQ(k.values[0], "gpipe");
  EXPECT_EQ(sim::CartesianProduct({v, k}).size(), 6u);
  EXPECT_THROW(sim::ParseVariation("schedule"), InputError);
  EXPECT_THROW(sim::ParseVariation("a[x]=1"), InputError);
}

TEST(SimSweep, PresetClustersAreWrittenOutBeforeTheirLevelsVary) {
  Scenario s = DefaultScenario();
  ASSERT_TRUE(s.source["cluster"].contains("preset"));
  const sim::Variation v = sim::ParseVariation("cluster.levels[1].bandwidth_gbps=1,100");
  const nlohmann::json doc = sim::ApplyPoint(s, {v}, {1});
  EXPECT_EQ(doc["cluster"]["levels"][1]["bandwidth_gbps"], 100);
  EXPECT_EQ(doc["cluster"]["levels"][0]["count"], 8);
  const sim::Variation bad = sim::ParseVariation("cluster.levels[5].count=1");
  EXPECT_THROW(sim::ApplyPoint(s, {bad}, {0}), InputError);
}

TEST(SimSetup, RepeatedSchedulesStayValid) {
  const Scenario s = simtest::MakeScenario(simtest::EqualLayers(4, 1, 2, 1, 4),
                                           TwoLevelCluster(4, 1, 100, 1, 0, 0),
                                           simtest::EvenPlan(2, 2, 2), "flush", 4, 3);
  const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
  EXPECT_EQ(setup.schedule.microbatches, 3 * 8);  // 4 per pipeline x 2 replicas x 3 iterations
  EXPECT_NO_THROW(ValidateSchedule(setup.schedule));
  EXPECT_EQ(setup.worker_device, (std::vector<int>{0, 2, 1, 3}));  // stage s of replica k: 2k + s
}

// A simulation's child reports bad input as InputError (exit 2), a failed run, a system fault or
// its own death as RunError (exit 1), and anything else as an internal error (exit 3): the
// mapping of cli/run_main.h survives the fork.
TEST(SimChildProcess, KeepsTheKindOfFaultAcrossTheFork) {
  EXPECT_EQ(sim::RunInChild([] { return std::string("done"); }), "done");
  EXPECT_THROW(sim::RunInChild([]() -> std::string { throw InputError("f.json", "x", "bad"); }),
               InputError);
  EXPECT_THROW(sim::RunInChild([]() -> std::string { throw RunError("a link went down"); }),
               RunError);
  EXPECT_THROW(sim::RunInChild([]() -> std::string { throw std::bad_alloc(); }), RunError);
  EXPECT_THROW(sim::RunInChild([]() -> std::string { ::_exit(9); }), RunError);
  try {
    sim::RunInChild([]() -> std::string { throw std::logic_error("deadlock"); });
    ADD_FAILURE() << "no exception";
  } catch (const RunError&) {
    ADD_FAILURE() << "an internal error came back as a failed run";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "deadlock");
  }
}

}  // namespace
}  // namespace pipetwin
