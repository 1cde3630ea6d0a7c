// Inputs a hostile user sends (issue: no input crashes it, none is misread): every integer is
// range-checked before it is narrowed, JSON numbers beyond a double and repeated keys are bad
// input, and each is refused on one line naming the file and the JSON path, with exit 2. Each
// case here crashed, was silently truncated or ended as an internal error (exit 3) before.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "partition/planners/min_max_partition.h"
#include "partition/util/error.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

// A small scenario: GPT of 4 blocks (6 layers) with `training` members (micro-batches and
// iterations unless given) and the `rest` of the scenario's members spliced in.
std::string ScenarioText(const std::string& training, const std::string& rest) {
  std::string t = training.empty() ? R"("microbatches": 4, "iterations": 2)" : training;
  return R"({"name": "hostile",
  "workload": {"generator": "gpt", "layers": 4, "hidden": 256, "heads": 4, "sequence": 128,
               "vocabulary": 1000},
  "schedule": "flush",
  "training": {"microbatch_size": 1, )" + t + "}, " + rest + "}";
}

// Whether `pipetwin simulate` can run here (the simulator is built beside the front end).
bool SimulatorBuilt() { return testing::BackEndBuilt("pipetwin-sim"); }

const char* kPlannerMember = R"("cluster": {"preset": "cluster-a", "servers": 1}, "planner": "flush")";

// Writes the scenario, runs `command FILE`, and expects exit 2 with one line naming the file and
// `where` and saying `what`.
void ExpectRefused(const std::string& command, const std::string& text, const std::string& where,
                   const std::string& what) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string file = dir + "/s.json";
  testing::WriteFile(file, text);
  const testing::CommandResult r = testing::RunPipetwin(command + " " + file);
  EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err << r.out;
  ASSERT_FALSE(r.err.empty()) << command;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find(file + ": " + where + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  if (r.err.find(where) == std::string::npos) ADD_FAILURE() << r.err;
}

TEST(HostileInput, IntegersBeyondTheirLimitAreRefusedNotWrapped) {
  // Was: 4294967304 micro-batches ran 8, 4294967297 iterations ran 1.
  ExpectRefused("plan", ScenarioText(R"("microbatches": 4294967304)", kPlannerMember),
                "training.microbatches", "got 4294967304");
  ExpectRefused("plan", ScenarioText(R"("iterations": 4294967297)", kPlannerMember),
                "training.iterations", "to 1048576");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 4294967298,
                "bandwidth_gbps": 10}]}, "planner": "flush")"),
                "cluster.levels[0].count", "limit for devices in a cluster");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 1048576,
                "bandwidth_gbps": 10}, {"count": 2, "bandwidth_gbps": 1}]}, "planner": "flush")"),
                "cluster.levels", "multiply to more than 1048576 devices");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"preset": "cluster-a", "servers": 2.5},
                "planner": "flush")"), "cluster.servers", "got 2.5");
}

TEST(HostileInput, PlanDeviceIdsAndReplicasAreCheckedBeforeUse) {
  const std::string cluster = R"("cluster": {"preset": "cluster-a", "servers": 1}, )";
  // Was: a segfault (2147483648 read as a negative id) and heap corruption (4294967295).
  std::vector<std::string> commands = {"plan"};
  if (SimulatorBuilt()) commands.push_back("simulate");
  for (const char* id : {"2147483648", "4294967295", "-1"})
    for (const std::string& command : commands)
      ExpectRefused(command,
                    ScenarioText("", cluster + R"("plan": {"stages": [
                      {"first_layer": 0, "last_layer": 5, "replicas": 1, "devices": [)" +
                                         std::string(id) + "]}]}"),
                    "plan.stages[0].devices[0]", "expected an integer from 0 to 1048576");
  // Was: 4294967297 replicas read as 1; two stages of 2147483647 passed the device check as -2.
  ExpectRefused("plan", ScenarioText("", cluster + R"("plan": {"stages": [
                  {"first_layer": 0, "last_layer": 5, "replicas": 4294967297}]})"),
                "plan.stages[0].replicas", "got 4294967297");
  ExpectRefused("plan", ScenarioText("", cluster + R"("plan": {"stages": [
                  {"first_layer": 0, "last_layer": 2, "replicas": 1048576},
                  {"first_layer": 3, "last_layer": 5, "replicas": 1048576}]})"),
                "plan.stages[1].replicas", "expected at most 1048576");
}

TEST(HostileInput, GeneratorSizesFromTheCommandLineAreChecked) {
  // Was: --layers 4294967297 built one block.
  const testing::CommandResult r = testing::RunPipetwin("workload gpt --layers 4294967297");
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  // Said in terms of the option typed (was "command line: layers: ...").
  EXPECT_NE(r.err.find("pipetwin workload gpt: --layers: expected an integer from 1 to 65536"),
            std::string::npos) << r.err;
  const testing::CommandResult seq = testing::RunPipetwin("workload gpt --seq 0");
  EXPECT_EQ(seq.exit_code, 2);
  EXPECT_NE(seq.err.find("pipetwin workload gpt: --seq: "), std::string::npos) << seq.err;
}

TEST(HostileInput, NumbersBeyondADoubleAndRepeatedKeysAreBadInput) {
  // Was: exit 3, "internal error: [json.exception.out_of_range.406] number overflow".
  ExpectRefused("plan", ScenarioText(R"("learning_rate": 1e400)", kPlannerMember),
                "training.learning_rate", "number overflow parsing '1e400'");
  // Was: the last of two keys won, exit 0.
  ExpectRefused("plan", ScenarioText("", std::string(kPlannerMember) +
                                             R"(, "schedule": "bogus")"),
                "schedule", "duplicate key");
  ExpectRefused("plan", ScenarioText(R"("iterations": 2, "iterations": 3)", kPlannerMember),
                "training.iterations", "duplicate key");
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every output option refuses to replace an existing file unless --force, and never replaces
// one of the command's own inputs, even with --force. Was: 9 of 14 output options replaced the
// file, and `simulate s.json --trace s.json` replaced the scenario with a trace.
TEST(HostileInput, OutputsNeverReplaceAFileWithoutForceNorAnInputEver) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string scenario = dir + "/s.json", mine = dir + "/mine.txt";
  testing::WriteFile(scenario, ScenarioText("", kPlannerMember));
  const std::string kept = "a file the user wrote\n";
  struct Case {
    std::string command, option;
  };
  const std::vector<Case> cases = {
      {"simulate " + scenario, "--trace"},
      {"simulate " + scenario, "--svg"},
      {"sweep " + scenario + " --vary training.microbatches=4,8", "--csv"},
      {"plan " + scenario, "--output"},
      {"workload gpt --layers 2", "--output"},
      {"schedule --kind flush --stages 2 --microbatches 2 --format csv", "--output"},
      {"run " + scenario + " --check", "--trace"},
      {"compare " + scenario, "--trace"},
      {"compare " + scenario, "--svg"},
      {"profile " + scenario, "--output"},
  };
  for (const Case& c : cases) {
    testing::WriteFile(mine, kept);
    testing::CommandResult r = testing::RunPipetwin(c.command + " " + c.option + " " + mine);
    EXPECT_EQ(r.exit_code, 2) << c.command << " " << c.option << ": " << r.err;
    EXPECT_NE(r.err.find("exists already; pipetwin does not overwrite files without --force"),
              std::string::npos) << c.command << ": " << r.err;
    EXPECT_EQ(Read(mine), kept) << c.command << " " << c.option;
    if (c.command.rfind("workload", 0) != 0 && c.command.rfind("schedule", 0) != 0) {
      // The scenario (or the workload file profile reads) is an input: never replaced.
      const std::string before = Read(scenario);
      r = testing::RunPipetwin(c.command + " " + c.option + " " + scenario + " --force");
      EXPECT_EQ(r.exit_code, 2) << c.command << " " << c.option << ": " << r.err;
      EXPECT_NE(r.err.find("never replaces an input, even with --force"), std::string::npos)
          << c.command << ": " << r.err;
      EXPECT_EQ(Read(scenario), before) << c.command << " " << c.option;
    }
  }
  // With --force the file is replaced, and a user's file named like a temporary is left alone.
  testing::WriteFile(mine, kept);
  testing::WriteFile(mine + ".tmp-pipetwin", kept);
  const testing::CommandResult r =
      testing::RunPipetwin("plan " + scenario + " --output " + mine + " --force");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Read(mine).find("\"stages\""), std::string::npos);
  EXPECT_EQ(Read(mine + ".tmp-pipetwin"), kept);
  // And nothing is left behind in the folder but what was there and the plan.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.exists() ? 1 : 0;
  EXPECT_EQ(entries, 3);
}

// Was: exit 3 (nlohmann's invalid-UTF-8 error) for a graph.txt layer name with a byte that is not
// UTF-8 shown with --json, and a value cut inside a UTF-8 character in an error message.
TEST(HostileInput, WhatPipetwinWritesIsValidUtf8WhateverTheInputHeld) {
  const std::string dir = testing::TemporaryDirectory();
  std::string graph = Read(std::string(PIPETWIN_FIXTURES_DIR) + "/pipedream/chain4/graph.txt");
  const size_t at = graph.find("Conv2d");
  ASSERT_NE(at, std::string::npos);
  graph.insert(at + 4, "\xff");
  testing::WriteFile(dir + "/graph.txt", graph);
  testing::CommandResult r = testing::RunPipetwin("workload show " + dir + "/graph.txt --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);  // throws on invalid UTF-8
  EXPECT_NE(r.out.find("Conv\xef\xbf\xbd" "2d"), std::string::npos);  // U+FFFD for the byte
  std::string value;
  for (int i = 0; i < 30; ++i) value += "\xc3\xa9";  // "é" x 30: byte 37 is inside an é
  testing::WriteFile(dir + "/s.json",
                     ScenarioText("", R"("cluster": {"preset": "cluster-a"}, "planner": ")" +
                                          value + "\""));
  r = testing::RunPipetwin("plan " + dir + "/s.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("planner: expected one of"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("...\""), std::string::npos) << "the value is cut: " << r.err;
  EXPECT_NO_THROW(nlohmann::json(r.err).dump()) << "the message is valid UTF-8: " << r.err;
}

// Finite values whose results overflow, or that SimGrid cannot take, are refused the same way.
// Was: forward_ms 1e308 printed inf with exit 0; bandwidth_gbps 1e308 aborted SimGrid ("The
// Impossible Did Happen"), 1e-308 printed inf; sweep --jobs -1 was accepted; plan --bench
// 1000000000 never ended.
TEST(HostileInput, ExtremeFiniteValuesAndCountsOfWorkAreRefused) {
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 2,
                "bandwidth_gbps": 1e308}]}, "planner": "flush")"),
                "cluster.levels[0].bandwidth_gbps", "at most 1e18 in size");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 2,
                "bandwidth_gbps": 1e9}]}, "planner": "flush")"),
                "cluster.levels[0].bandwidth_gbps", "from 1e-06 to 1e+06 Gbit/s");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 2,
                "bandwidth_gbps": 1e-308}]}, "planner": "flush")"),
                "cluster.levels[0].bandwidth_gbps", "from 1e-06 to 1e+06 Gbit/s");
  ExpectRefused("plan", ScenarioText("", R"("cluster": {"levels": [{"count": 2,
                "bandwidth_gbps": 10, "latency_us": 1e300}]}, "planner": "flush")"),
                "cluster.levels[0].latency_us", "at most 1e18 in size");
  const std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/w.json", R"({"name": "w", "layers": [{"id": "a",
      "forward_ms": 1e308, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1}]})");
  testing::CommandResult r = testing::RunPipetwin("workload show " + dir + "/w.json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find(dir + "/w.json: layers[0].forward_ms: "), std::string::npos) << r.err;
  testing::WriteFile(dir + "/s.json", ScenarioText("", kPlannerMember));
  r = testing::RunPipetwin("sweep " + dir + "/s.json --vary training.microbatches=4 --jobs -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--jobs must be from 0"), std::string::npos) << r.err;
  if (SimulatorBuilt()) {
    // Was: six --vary lists of ten values listed 10^6 points before the first ran.
    std::string vary;
    for (const char* path : {"training.microbatches", "training.iterations",
                             "training.microbatch_size", "training.allreduce_buckets",
                             "training.chunks", "training.learning_rate"})
      vary += std::string(" --vary ") + path + "=1,2,3,4,5,6,7,8,9,10";
    r = testing::RunPipetwin("sweep " + dir + "/s.json" + vary);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the --vary lists make 1e+06 points, more than pipetwin's limit"),
              std::string::npos) << r.err;
  }
  r = testing::RunPipetwin("plan --profile " + std::string(PIPETWIN_FIXTURES_DIR) +
                           "/pipedream/chain4/graph.txt --workers 2 --bandwidth 1e9 --bench "
                           "1000000000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bench must be from 1 to 10000"), std::string::npos) << r.err;
}

// A run's size is checked before its lists are built: passes x micro-batches x stages of
// compute ops, at most 4,000,000. Was: 2^20 iterations of a 2-stage flush built every pass's
// lists and allocated until SimGrid's uncaught bad_alloc (exit 134); `plan` accepted it.
TEST(HostileInput, RunsTooLargeForTheirListsAreRefusedBeforeTheyAreBuilt) {
  const std::string text = ScenarioText(R"("microbatches": 8, "iterations": 1048576)",
                                        kPlannerMember);
  ExpectRefused("plan", text, "training.iterations", "too large a run: 1048576 x ");
  if (SimulatorBuilt())
    ExpectRefused("simulate", text, "training.iterations", "more than pipetwin's limit of 4000000");
  const std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/s.json", ScenarioText(R"("microbatches": 8, "iterations": 10000)",
                                                   kPlannerMember));
  const testing::CommandResult r = testing::RunPipetwin("plan " + dir + "/s.json");
  EXPECT_EQ(r.exit_code, 0) << "a run within the limit: " << r.err;
}

// Was: `plan` accepted a 2bw plan with fewer micro-batches than stages, which `simulate` refuses.
TEST(HostileInput, PlanRefusesWhatTheBackEndsWouldRefuse) {
  ExpectRefused("plan", R"({"workload": {"generator": "gpt", "layers": 4, "hidden": 256,
      "heads": 4, "sequence": 128, "vocabulary": 1000},
    "cluster": {"preset": "cluster-a", "servers": 1}, "schedule": "2bw",
    "plan": {"stages": [{"first_layer": 0, "last_layer": 1}, {"first_layer": 2, "last_layer": 3},
                        {"first_layer": 4, "last_layer": 5}]},
    "training": {"microbatches": 2, "iterations": 2}})",
                "training.microbatches", "needs at least as many micro-batches per batch as are "
                "in flight (m >= d = 3), got m = 2");
}

// Cheap checks come before expensive ones: a scenario's keys are checked before its generator
// builds or its workload file is read, and a workload's layer count before its layers are.
// Was: a typo at the root was reported only after the generator had run (6 GB for 10^9 blocks).
TEST(HostileInput, CheapChecksComeBeforeTheWorkloadIsBuilt) {
  ExpectRefused("plan", R"({"workload": {"file": "no-such-workload.json"},
    "cluster": {"preset": "cluster-a", "servers": 1}, "planner": "flush", "trainin": {}})",
                "trainin", "unknown key");
  const std::string dir = testing::TemporaryDirectory();
  std::string layers;
  for (int i = 0; i <= 65536; ++i)
    layers += std::string(i ? "," : "") + R"({"forward_ms": 1, "backward_ms": 1})";
  testing::WriteFile(dir + "/w.json", R"({"name": "w", "layers": [)" + layers + "]}");
  const testing::CommandResult r = testing::RunPipetwin("workload show " + dir + "/w.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/w.json: layers: expected at most 65536 layers"),
            std::string::npos) << r.err;
}

// The PipeDream partitioner estimates its work before it allocates: n^3 M^2 / 6 steps per lower
// level. Was: a 20,000-node graph.txt (4 MB) took it past 4.7 GB and then "out of memory" with
// no file named.
TEST(HostileInput, ThePipeDreamPartitionerRefusesWorkItCannotDo) {
  const std::string dir = testing::TemporaryDirectory();
  std::string graph;
  for (int i = 0; i < 20000; ++i)
    graph += "node" + std::to_string(i) + " -- Linear -- forward_compute_time=0.100, "
             "backward_compute_time=0.200, activation_size=1000.000, parameter_size=4096.000\n";
  for (int i = 0; i + 1 < 20000; ++i)
    graph += "\tnode" + std::to_string(i) + " -- node" + std::to_string(i + 1) + "\n";
  testing::WriteFile(dir + "/graph.txt", graph);
  const testing::CommandResult r = testing::RunPipetwin(
      "plan --profile " + dir + "/graph.txt --workers 4 4 --bandwidth 1e9 1e8");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find(dir + "/graph.txt: pipedream: up to 20000 states (one per layer) on "
                       "levels of 4 x 4 machines would take about 2.13e+13 steps"),
            std::string::npos) << r.err;
  ExpectRefused("plan", R"({"workload": {"generator": "gpt", "layers": 20000, "hidden": 64,
      "heads": 1, "sequence": 8, "vocabulary": 10},
    "cluster": {"preset": "cluster-a", "servers": 4}, "planner": "pipedream"})",
                "planner", "more than pipetwin's limits of 1e+11 steps");
}

// The planners' split (the min-max partition every planner but PipeDream's runs) bounds its
// work: its table is checked before it is allocated and its steps are capped. Was: the 2bw
// planner on 1,024 layers and 1,024 GPUs ran for more than 100 s; on 2^16 layers, for hours.
TEST(HostileInput, ThePlannersSplitBoundsItsWork) {
  auto cost = [](int, int i, int j) { return static_cast<double>(j - i + 1); };
  auto lower = [](int, int) { return 0.0; };
  std::vector<StageRange> ranges;
  MinMaxPartitioner big;
  try {
    big.Solve(65536, 2048, cost, lower, kInfinity, &ranges);
    ADD_FAILURE() << "a table of 2^27 cells was allocated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("splitting 65536 layers into 2048 stages needs a table "
                                         "of 134217728 cells, more than pipetwin's limit"),
              std::string::npos) << e.what();
  }
  MinMaxPartitioner budgeted(1000);
  EXPECT_EQ(budgeted.Solve(8, 2, cost, lower, kInfinity, &ranges), 4);  // within the budget
  try {
    budgeted.Solve(400, 20, cost, lower, kInfinity, &ranges);
    ADD_FAILURE() << "the step budget was not enforced";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("more than pipetwin's limit of 1000 steps"),
              std::string::npos) << e.what();
  }
  EXPECT_LE(budgeted.Steps(), 1001);
}

// A schedule CSV is refused as soon as it passes its limits, not after it is held whole, and
// every error about it names it. Was: a 100 MB CSV was refused for its ranks after 1.3 GB; the
// deadlock of an imported CSV named no file.
TEST(HostileInput, ScheduleCsvLimitsAreCheckedWhileReadingAndErrorsNameTheFile) {
  const std::string dir = testing::TemporaryDirectory();
  std::string tall;
  for (int r = 0; r < 5000; ++r) tall += "0F0\n";
  testing::WriteFile(dir + "/tall.csv", tall);
  testing::CommandResult r = testing::RunPipetwin("schedule --import " + dir + "/tall.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/tall.csv: line 4097: more than 4096 ranks"), std::string::npos)
      << r.err;
  std::string wide = "0F0";
  for (int c = 0; c < 4000000; ++c) wide += ",0F0";
  testing::WriteFile(dir + "/wide.csv", wide + "\n");
  r = testing::RunPipetwin("schedule --import " + dir + "/wide.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/wide.csv: line 1: more than 4000000 actions"), std::string::npos)
      << r.err;
  testing::WriteFile(dir + "/deadlock.csv", "0F0,0B0\n1B0,1F0\n");
  r = testing::RunPipetwin("schedule --import " + dir + "/deadlock.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(dir + "/deadlock.csv: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("cannot complete"), std::string::npos) << r.err;
}

// Nothing a scenario replaces in a plan goes unsaid. Was: a plan's schedule and a planner's
// micro-batch settings replaced the other's without a word.
TEST(HostileInput, WhatAScenarioReplacesInAPlanIsSaid) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string gpt = R"("workload": {"generator": "gpt", "layers": 4, "hidden": 256,
      "heads": 4, "sequence": 128, "vocabulary": 1000},
    "cluster": {"preset": "cluster-a", "servers": 1})";
  testing::WriteFile(dir + "/inline.json", "{" + gpt + R"(, "schedule": "gpipe",
    "plan": {"schedule": "flush", "stages": [{"first_layer": 0, "last_layer": 5}]},
    "training": {"microbatches": 4, "iterations": 2}})");
  testing::CommandResult r = testing::RunPipetwin("plan " + dir + "/inline.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pipetwin plan: warning: the scenario's schedule gpipe (" + dir +
                       "/inline.json: schedule) replaces the plan's flush (" + dir +
                       "/inline.json: plan.schedule)"), std::string::npos) << r.err;
  // A planner's plan keeps its own micro-batch count over the scenario's.
  testing::WriteFile(dir + "/planned.json", "{" + gpt + R"(, "planner": "gpipe",
    "training": {"microbatches": 8, "iterations": 2}})");
  r = testing::RunPipetwin("plan " + dir + "/planned.json --output " + dir + "/p.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "nothing replaced";
  testing::WriteFile(dir + "/from_file.json", "{" + gpt + R"(, "plan_file": "p.json",
    "training": {"microbatches": 3, "iterations": 2}})");
  r = testing::RunPipetwin("plan " + dir + "/from_file.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pipetwin plan: warning: the gpipe plan's microbatches_per_update 8 (" +
                       dir +
                       "/p.json: microbatches_per_update) replaces the scenario's 3 (" + dir +
                       "/from_file.json: training.microbatches)"), std::string::npos) << r.err;
}

// Inputs are regular files of a bounded size, said as such before anything is read. Was:
// /dev/zero read until memory ran out, a FIFO blocked forever.
TEST(HostileInput, InputsMustBeRegularFilesOfBoundedSize) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& input : {std::string("/dev/zero"), fifo})
    for (const std::string& command : {"plan ", "schedule --import ", "workload show "}) {
      const testing::CommandResult r = testing::RunPipetwin(command + input);
      EXPECT_EQ(r.exit_code, 2) << command << input << ": " << r.err;
      EXPECT_NE(r.err.find(input + ": is not a regular file"), std::string::npos) << r.err;
    }
  const testing::CommandResult r = testing::RunPipetwin("plan " + dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + ": is a directory, expected a file"), std::string::npos) << r.err;
  // Beyond the cap (a sparse file: no disk is used).
  const std::string big = dir + "/big.json";
  testing::WriteFile(big, "");
  ASSERT_EQ(truncate(big.c_str(), (int64_t{256} << 20) + 1), 0);
  const testing::CommandResult b = testing::RunPipetwin("plan " + big);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("input files of at most 268435456 bytes"), std::string::npos) << b.err;
}

// The simulator runs under an address-space limit (`ulimit -v`, as clusters set): its actors'
// stacks are sized to what the limit leaves, and when even the smallest do not fit it says how
// to raise it. Was: 1,024 workers aborted inside SimGrid ("Failed to allocate stack", exit 134)
// under any limit up to 16 GB: 8 MiB of stack per actor.
TEST(HostileInput, TheSimulatorRunsUnderAnAddressSpaceLimit) {
  if (!SimulatorBuilt()) GTEST_SKIP() << "the simulator is not built";
#ifdef PIPETWIN_ASAN
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow: no ulimit -v under it";
#endif
  const std::string scenario = std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/sim-gpt3-1024.json";
  // Every replica simulated (--no-symmetry): 1,024 workers' actors.
  const std::string full = "simulate " + scenario + " --no-timeline --no-symmetry";
  testing::CommandResult r = testing::RunPipetwin(full, "ulimit -v 4000000; ");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1024 workers"), std::string::npos) << r.out.substr(0, 2000);
  // By default two of the 64 replicas stand for all (sim/symmetry.h): it fits where the full
  // one does not.
  r = testing::RunPipetwin("simulate " + scenario + " --no-timeline", "ulimit -v 300000; ");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1024 workers"), std::string::npos) << r.out.substr(0, 2000);
  r = testing::RunPipetwin(full, "ulimit -v 300000; ");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find("(ulimit -v) leaves"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raise it (ulimit -v unlimited) or simulate fewer workers"),
            std::string::npos) << r.err;
}

// Out of memory is said in one line naming what the command was working on, also when it
// happens inside a SimGrid actor. Was: "out of memory" naming nothing, or SimGrid's abort on
// the uncaught bad_alloc (exit 134).
TEST(HostileInput, OutOfMemoryNamesTheInput) {
  if (!SimulatorBuilt()) GTEST_SKIP() << "the simulator is not built";
#ifdef PIPETWIN_ASAN
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow: no ulimit -v under it";
#endif
  const std::string dir = testing::TemporaryDirectory();
  const std::string file = dir + "/s.json";
  // Within the run-size limit, beyond 400 MB of address space (about 7 kB per iteration).
  testing::WriteFile(file, R"({"workload": {"generator": "mlp", "layers": 4, "input": 784,
      "width": 1024, "classes": 10, "batch": 32},
    "cluster": {"device": {"name": "CPU", "memory_bytes": 8e9},
                "levels": [{"count": 2, "bandwidth_gbps": 40, "latency_us": 20}]},
    "plan": {"schedule": "flush", "stages": [{"first_layer": 0, "last_layer": 1},
                                             {"first_layer": 2, "last_layer": 3}]},
    "training": {"microbatch_size": 32, "microbatches": 8, "iterations": 80000}})");
  const testing::CommandResult r =
      testing::RunPipetwin("simulate " + file + " --no-timeline", "ulimit -v 400000; ");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find("pipetwin simulate: out of memory while working on " + file),
            std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipetwin
