// Scenarios: the shipped ones load, the embedded default equals scenarios/default.json, and bad
// scenarios fail with one line naming file and JSON path.
#include "workloads/scenario/scenario.h"

#include <gtest/gtest.h>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "tests/test_support.h"
#include "workloads/scenario/schedule_for_scenario.h"

namespace pipetwin {
namespace {

std::string ScenarioPath(const std::string& name) {
  return std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/" + name;
}

TEST(Scenario, EmbeddedDefaultEqualsTheShippedFile) {
  EXPECT_EQ(ParseJsonText(DefaultScenarioJson(), "embedded"),
            ParseJsonFile(ScenarioPath("default.json")));
  Scenario s = DefaultScenario();
  EXPECT_EQ(s.cluster.DeviceCount(), 16);
  EXPECT_EQ(s.workload.LayerCount(), 24 + 2);  // embedding, 24 blocks, head
  EXPECT_EQ(s.planner, PlannerKind::kTwoBW);
}

TEST(Scenario, ShippedScenariosLoad) {
  Scenario vgg = LoadScenarioFile(ScenarioPath("vgg16-cluster-a-4x4.json"));
  EXPECT_EQ(vgg.cluster.DeviceCount(), 16);
  EXPECT_EQ(vgg.cluster.levels[0].count, 4);
  EXPECT_NEAR(vgg.workload.TotalParameters(), 138357544, 0.5);
  EXPECT_EQ(vgg.schedule, ScheduleKind::kPipeDream);
  Scenario gpt = LoadScenarioFile(ScenarioPath("gpt-3.8b-64xv100-2bw.json"));
  EXPECT_EQ(gpt.cluster.DeviceCount(), 64);
  EXPECT_NEAR(gpt.workload.TotalParameters() / 1e9, 3.8, 0.05);
  EXPECT_EQ(gpt.training.optimizer, "adam");
}

TEST(Scenario, ExplicitPlanIsCheckedAgainstWorkloadAndCluster) {
  std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/s.json", R"({
    "workload": {"generator": "gpt", "layers": 4, "hidden": 64, "heads": 4, "sequence": 32,
                 "vocabulary": 100},
    "cluster": {"levels": [{"count": 2, "bandwidth_gbps": 10}]},
    "plan": {"stages": [{"first_layer": 0, "last_layer": 2}, {"first_layer": 3, "last_layer": 5}]},
    "schedule": "gpipe"})");
  Scenario s = LoadScenarioFile(dir + "/s.json");
  ASSERT_TRUE(s.plan.has_value());
  EXPECT_EQ(s.plan->StageCount(), 2);
  EXPECT_EQ(s.plan->schedule, ScheduleKind::kGPipe);
}

// Interleaved 1F1B lists every model chunk as a stage: 4 stages on 2 workers with 2 chunks each.
TEST(Scenario, InterleavedPlanCountsWorkersNotChunks) {
  std::string dir = testing::TemporaryDirectory();
  const std::string body = R"(
    "workload": {"generator": "gpt", "layers": 6, "hidden": 64, "heads": 4, "sequence": 32,
                 "vocabulary": 100},
    "cluster": {"levels": [{"count": 2, "bandwidth_gbps": 10}]},
    "plan": {"stages": [{"first_layer": 0, "last_layer": 1}, {"first_layer": 2, "last_layer": 3},
                        {"first_layer": 4, "last_layer": 5}, {"first_layer": 6, "last_layer": 7}]},
    "schedule": )";
  testing::WriteFile(dir + "/i.json", "{" + body + R"("interleaved", "training": {"chunks": 2,
      "microbatches": 4}})");
  Scenario s = LoadScenarioFile(dir + "/i.json");
  EXPECT_EQ(s.plan->StageCount(), 4);
  EXPECT_EQ(ChunksPerWorker(s.plan->schedule, s.training), 2);
  // The same plan without interleaving needs 4 workers on 2 devices.
  testing::WriteFile(dir + "/f.json", "{" + body + R"("flush"})");
  EXPECT_THROW(LoadScenarioFile(dir + "/f.json"), InputError);
  // A schedule's rule broken by a setting names the scenario's field, not a flag of `pipetwin
  // schedule`: interleaving needs micro-batches in rounds of equal size (torch's rule: 5 on 2
  // workers would be 2 rounds of 2.5).
  testing::WriteFile(dir + "/m.json", "{" + body + R"("interleaved", "training": {"chunks": 2,
      "microbatches": 5}})");
  const Scenario odd = LoadScenarioFile(dir + "/m.json");
  try {
    ScheduleForScenario(odd, *odd.plan, 1);
    ADD_FAILURE() << "5 micro-batches on 2 workers were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir + "/m.json: training.microbatches: schedule "
                                                "interleaved: needs each replica's micro-batches in rounds",
                                          0),
              0u)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
  }
}

std::string ErrorOf(const std::string& text) {
  std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/scenario.json", text);
  try {
    LoadScenarioFile(dir + "/scenario.json");
  } catch (const InputError& e) {
    std::string m = e.what();
    auto at = m.find(dir + "/");
    if (at != std::string::npos) m.erase(at, dir.size() + 1);
    return m;
  }
  return "(no error)";
}

// "schedule_csv": a torch action CSV beside the scenario is the plan's schedule (kind imported,
// its stages per rank the chunks), repeated per iteration; one that does not fit the plan, or
// given with "schedule" too, is refused naming the field.
TEST(Scenario, ATorchScheduleCsvIsThePlansSchedule) {
  const std::string dir = testing::TemporaryDirectory();
  // torch ScheduleZBVZeroBubble's order for 2 ranks and 2 micro-batches (a V: rank 0 holds
  // stages 0 and 3).
  const std::string csv = "0F0,0F1,3F0,3I0,3W0,3F1,3I1,3W1,0I0,0W0,0I1,0W1\n"
                          "1F0,2F0,1F1,2F1,2I0,2W0,1I0,1W0,2I1,2W1,1I1,1W1\n";
  testing::WriteFile(dir + "/v.csv", csv);
  const std::string body = R"({
    "workload": {"generator": "gpt", "layers": 2, "hidden": 64, "heads": 4, "sequence": 32,
                 "vocabulary": 100},
    "cluster": {"levels": [{"count": 2, "bandwidth_gbps": 10}]},
    "plan": {"stages": [{"first_layer": 0, "last_layer": 0}, {"first_layer": 1, "last_layer": 1},
                        {"first_layer": 2, "last_layer": 2}, {"first_layer": 3, "last_layer": 3}]},
    "schedule_csv": "v.csv", "training": {"microbatches": )";
  testing::WriteFile(dir + "/s.json", body + "2}}");
  const Scenario s = LoadScenarioFile(dir + "/s.json");
  ASSERT_TRUE(s.imported.has_value());
  EXPECT_EQ(ChunksPerWorker(s.plan->schedule, s.training), 2);
  const PipelineSchedule lists = ScheduleForScenario(s, *s.plan, 3);
  EXPECT_EQ(lists.kind, ScheduleKind::kImported);
  EXPECT_EQ(lists.microbatches, 6);  // 3 iterations of 2
  EXPECT_EQ(lists.workers[0].model_stages, (std::vector<int>{0, 3}));
  testing::WriteFile(dir + "/m.json", body + "3}}");
  const Scenario three = LoadScenarioFile(dir + "/m.json");
  try {
    ScheduleForScenario(three, *three.plan, 1);
    ADD_FAILURE() << "a CSV of 2 micro-batches ran 3";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "m.json: schedule_csv: the imported schedule does not fit the plan: it has 2 "
                  "micro-batches per iteration, the training 3"),
              std::string::npos)
        << e.what();
  }
  testing::WriteFile(dir + "/both.json", body + R"(2}, "schedule": "flush"})");
  EXPECT_THROW(LoadScenarioFile(dir + "/both.json"), InputError);
}

TEST(ScenarioBadInput, NamesFileAndJsonPath) {
  const std::string gpt =
      R"("workload": {"generator": "gpt", "layers": 4, "hidden": 64, "heads": 4, "sequence": 32, "vocabulary": 100})";
  const std::string cluster = R"("cluster": {"levels": [{"count": 2, "bandwidth_gbps": 10}]})";
  EXPECT_EQ(ErrorOf(R"({"cluster": {"levels": [{"count": 4, "bandwidth_gbps": 100},
      {"count": 4, "bandwidth_gbps": -5}]}, )" + gpt + R"(, "planner": "2bw"})"),
            "scenario.json: cluster.levels[1].bandwidth_gbps: expected a number > 0, got -5");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + "}"),
            "scenario.json: (root): expected exactly one of \"planner\", \"plan\" or "
            "\"plan_file\", got 0");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + R"(, "planner": "magic"})").substr(0, 42),
            "scenario.json: planner: expected one of pi");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + R"(, "planner": "2bw", "schedule": "1f1b"})")
                .substr(0, 43),
            "scenario.json: schedule: expected one of gp");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster +
                    R"(, "planner": "2bw", "training": {"microbatches": 0}})"),
            "scenario.json: training.microbatches: expected an integer from 1 to 16777216 "
            "(pipetwin's limit for micro-batches per iteration), got 0");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster +
                    R"(, "planner": "2bw", "training": {"overlap_param_gather": true}})"),
            "scenario.json: training.overlap_param_gather: expected false without "
            "\"distributed_optimizer\": true (only a sharded optimizer all-gathers the weights)");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster +
                    R"(, "planner": "2bw", "training": {"p2p": "rendezvous"}})")
                .substr(0, 44),
            "scenario.json: training.p2p: expected one of");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster +
                    R"(, "planner": "2bw", "training": {"learning_rate": "NaN"}})"),
            "scenario.json: training.learning_rate: expected a number > 0, got \"NaN\"");
  EXPECT_EQ(ErrorOf(R"({"workload": {"generator": "gpt", "hidden": 100, "heads": 16}, )" +
                    cluster + R"(, "planner": "2bw"})")
                .substr(0, 26),
            "scenario.json: workload: t");
  EXPECT_EQ(ErrorOf(R"({"workload": {"file": "missing.json"}, )" + cluster +
                    R"(, "planner": "2bw"})"),
            "missing.json: no such file");
  EXPECT_EQ(ErrorOf(R"({"workload": {"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1,
      "activation_bytes": 1, "parameter_bytes": 1, "inputs": ["z"]}]}, )" +
                    cluster + R"(, "planner": "2bw"})"),
            "scenario.json: workload.layers[0].inputs[0]: dangling edge: no layer has id \"z\"");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + R"(, "plan": {"stages": [
      {"first_layer": 0, "last_layer": 2}, {"first_layer": 3, "last_layer": 9}]}})"),
            "scenario.json: plan.stages[1].last_layer: expected 5 (the workload has 6 layers), got 9");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + R"(, "plan": {"stages": [
      {"first_layer": 0, "last_layer": 2, "replicas": 2}, {"first_layer": 3, "last_layer": 5}]}})"),
            "scenario.json: plan.stages: the plan needs 3 workers but the cluster has 2 devices");
  EXPECT_EQ(ErrorOf("{" + gpt + "," + cluster + R"(, "plan": {"stages": [
      {"first_layer": 0, "last_layer": 2}, {"first_layer": 4, "last_layer": 5}]}})"),
            "scenario.json: plan.stages[1].first_layer: expected 3 (stages cover the layers in "
            "order without gaps), got 4");
  EXPECT_EQ(ErrorOf("{\"workload\": "), "scenario.json: line 1 column 14: malformed JSON: "
                                        "syntax error while parsing value - unexpected end of "
                                        "input; expected '[', '{', or a literal");
}

}  // namespace
}  // namespace pipetwin
