// `pipetwin simulate` and `pipetwin sweep` as a user meets them: the hand-over to pipetwin-sim,
// one-line errors with exit 2, the JSON report, the Chrome trace, the SVG, CSV rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "partition/util/schema_version.h"
#include "tests/sim/sim_test_support.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

using simtest::EqualLayers;
using simtest::EvenPlan;
using simtest::MakeScenario;
using simtest::TwoLevelCluster;
using testing::RunPipetwin;

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Two servers of two devices, two stages of two replicas.
std::string SmallScenarioFile(const std::string& kind = "flush") {
  return simtest::WriteScenario(MakeScenario(EqualLayers(4, 1, 2, 1e6, 4e6),
                                             TwoLevelCluster(2, 2, 800, 1, 100, 5),
                                             EvenPlan(2, 2, 2), kind, 4, 2));
}

TEST(SimCli, HelpComesFromTheSimulator) {
  for (const char* command : {"simulate", "sweep"}) {
    auto r = RunPipetwin(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("usage: pipetwin ") + command), std::string::npos);
    EXPECT_NE(r.out.find("--json"), std::string::npos) << command;
  }
}

TEST(SimCli, BadInputIsOneLineAndExit2) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string scenario = SmallScenarioFile();
  for (const std::string& args : {
           std::string("simulate ") + dir + "/missing.json",
           std::string("simulate ") + scenario + " --frobnicate",
           std::string("simulate ") + scenario + " --allreduce-buckets 0",
           std::string("sweep ") + scenario,
           std::string("sweep ") + scenario + " --vary schedule",
           std::string("sweep ") + scenario + " --vary cluster.levels[7].count=1,2",
       }) {
    auto r = RunPipetwin(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(Lines(r.err), 1) << args << ": " << r.err;
  }
}

// Weight stashing is PipeDream's to leave out: the flag and the scenario's field are refused on
// another schedule, each naming what was asked.
TEST(SimCli, WeightStashingIsLeftOutOfPipeDreamOnly) {
  auto r = RunPipetwin("simulate " + SmallScenarioFile() + " --no-weight-stashing");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin simulate: --no-weight-stashing applies to the pipedream schedule only\n");
  Scenario flush = MakeScenario(EqualLayers(4, 1, 2, 1e6, 4e6), TwoLevelCluster(2, 2, 800, 1, 100, 5),
                                EvenPlan(2, 2, 2), "flush", 4, 2);
  flush.source["training"]["weight_stashing"] = false;  // the file WriteScenario writes
  const std::string file = simtest::WriteScenario(flush);
  r = RunPipetwin("simulate " + file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, file + ": training.weight_stashing: schedule flush: only pipedream can run "
                          "without weight stashing (expected true)\n");
  r = RunPipetwin("simulate " + SmallScenarioFile("pipedream") + " --no-weight-stashing --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["workers"][0]["busy_by_op_s"].value("recompute", 0.0), 0);
}

TEST(SimCli, APlanThatDoesNotFitIsOneLineAndExit2) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string scenario = SmallScenarioFile();
  const std::string past_the_end = dir + "/past.json";
  testing::WriteFile(past_the_end, R"({"stages": [{"first_layer": 0, "last_layer": 1},
                                                 {"first_layer": 2, "last_layer": 9}]})");
  auto r = RunPipetwin("simulate " + scenario + " --plan " + past_the_end);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, past_the_end +
                       ": stages[1].last_layer: expected 3 (the workload has 4 layers), got 9\n");
  const std::string too_many = dir + "/many.json";
  testing::WriteFile(too_many, R"({"stages": [{"first_layer": 0, "last_layer": 3,
                                              "replicas": 5}]})");
  r = RunPipetwin("simulate " + scenario + " --plan " + too_many);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("5 workers but the cluster has 4 devices"), std::string::npos) << r.err;
}

TEST(SimCli, JsonReportHasTheSharedSchema) {
  auto r = RunPipetwin("simulate " + SmallScenarioFile() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source"], "simulator");
  for (const char* key : {"samples_per_s", "iteration_s", "workers", "devices", "stages",
                          "communication", "measurement"})
    EXPECT_TRUE(doc.contains(key)) << key;
  ASSERT_EQ(doc["workers"].size(), 4u);
  for (const char* key : {"busy_s", "idle_s", "bubble_fraction", "exposed_communication_s"})
    EXPECT_TRUE(doc["workers"][0].contains(key)) << key;
  const auto& device = doc["devices"][0];
  EXPECT_TRUE(device.contains("peak_memory_bytes"));
  EXPECT_TRUE(device.contains("over_capacity"));
  for (const char* category : {"weights", "optimizer", "gradients", "activations", "recompute"})
    EXPECT_EQ(device["timeline"][category].size(), device["timeline"]["time_s"].size());
  EXPECT_TRUE(doc["stages"][0]["staleness"].contains("mean"));
  EXPECT_GT(doc["communication"][1]["allreduce_bytes"].get<double>(), 0);  // across servers
  EXPECT_GT(doc["samples_per_s"].get<double>(), 0);
}

TEST(SimCli, TraceIsChromeTraceEventJson) {
  const std::string trace = testing::TemporaryDirectory() + "/trace.json";
  auto r = RunPipetwin("simulate " + SmallScenarioFile() + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(Slurp(trace));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  int complete = 0, counters = 0, names = 0;
  std::set<int> threads;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e.dump();
    if (e["ph"] == "X") {
      ++complete;
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e.contains("tid")) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0);
      threads.insert(e["tid"].get<int>());
    }
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "memory");
      EXPECT_TRUE(e["args"].contains("activations"));
    }
    if (e["ph"] == "M" && e["name"] == "process_name") ++names;
  }
  EXPECT_GT(complete, 0);
  EXPECT_GT(counters, 0);
  EXPECT_EQ(names, 4);
  EXPECT_EQ(threads, (std::set<int>{0, 1, 2, 3}));  // compute, send, receive, all-reduce
}

// Where a server's workers outnumber its cores, the trace says which core each compute op ran
// on. Three replicas on 2 cores under a 100 ms round-robin slice, one micro-batch (f = 1 ms,
// b = 2 ms): a worker keeps the core it took until it waits, so each one's backward runs on its
// forward's core, and the two that start at once take different cores. With a core per worker
// (no shared cores) there is no core to tell.
TEST(SimCli, TraceTellsTheCoreOfEachComputeOpOnSharedCores) {
  Cluster cluster = TwoLevelCluster(3, 1, 800, 0, 0, 0);
  cluster.shared_cores = 2;
  cluster.round_robin_slice_ms = 100;
  auto trace_of = [&](const Cluster& c) {
    const std::string scenario = simtest::WriteScenario(
        MakeScenario(EqualLayers(1, 1, 2, 0, 4), c, EvenPlan(1, 1, 3), "flush", 1, 1));
    const std::string trace = testing::TemporaryDirectory() + "/trace.json";
    auto r = RunPipetwin("simulate " + scenario + " --trace " + trace);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(Slurp(trace));
  };
  std::map<int, std::map<std::string, int>> core;  // worker -> op kind -> core
  std::map<int, double> forward_start;
  const nlohmann::json shared = trace_of(cluster);
  for (const auto& e : shared["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (e["ph"] != "X" || (cat != "forward" && cat != "backward")) continue;
    ASSERT_TRUE(e["args"].contains("core")) << e;
    const int c = e["args"]["core"];
    EXPECT_TRUE(c == 0 || c == 1) << e;
    core[e["pid"]][cat] = c;
    if (cat == "forward") forward_start[e["pid"]] = e["ts"];
  }
  ASSERT_EQ(core.size(), 3u);
  std::vector<int> first_two;
  for (const auto& [worker, kinds] : core) {
    EXPECT_EQ(kinds.at("forward"), kinds.at("backward")) << "worker " << worker;
    if (forward_start.at(worker) < 1) first_two.push_back(kinds.at("forward"));  // at 0 us
  }
  ASSERT_EQ(first_two.size(), 2u);
  EXPECT_NE(first_two[0], first_two[1]);
  cluster.shared_cores = 0;
  const nlohmann::json apart = trace_of(cluster);
  for (const auto& e : apart["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_FALSE(e["args"].contains("core")) << e;
    }
  }
}

// A message between workers of an oversubscribed server costs its CPU half at each end
// (runner.cc, ChargeMessageCpu): GPipe on 2 workers sharing 1 core, 4 ms a message. Worker 0's
// first send takes the sender's 2 ms before the message leaves (1 to 3 ms); worker 1's receive
// ends after its own 2 ms (5 ms), when its forward starts. Charged wholly at the receiver, the
// send would take no time and the receive end at the same 5 ms.
TEST(SimCli, AMessageToAnOversubscribedServerCostsCpuAtBothEnds) {
  Cluster cluster = TwoLevelCluster(2, 1, 800, 0, 0, 0);
  cluster.shared_cores = 1;
  cluster.oversubscribed_message_us = 4000;
  const std::string scenario = simtest::WriteScenario(
      MakeScenario(EqualLayers(2, 1, 2, 0, 4e6), cluster, EvenPlan(2, 1, 1), "gpipe", 1, 1));
  const std::string trace = testing::TemporaryDirectory() + "/trace.json";
  auto r = RunPipetwin("simulate " + scenario + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(Slurp(trace));
  double send_start = -1, send_end = -1, receive_end = -1;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    if (e["pid"] == 0 && name.find("SEND_F") != std::string::npos) {
      send_start = e["ts"].get<double>();
      send_end = send_start + e["dur"].get<double>();
    }
    if (e["pid"] == 1 && name.find("RECV_F") != std::string::npos)
      receive_end = e["ts"].get<double>() + e["dur"].get<double>();
  }
  EXPECT_NEAR(send_start, 1000, 1);  // microseconds
  EXPECT_NEAR(send_end, 3000, 1);
  EXPECT_NEAR(receive_end, 5000, 1);
}

TEST(SimCli, SvgDrawsTheSimulatedTimeline) {
  const std::string svg = testing::TemporaryDirectory() + "/timeline.svg";
  auto r = RunPipetwin("simulate " + SmallScenarioFile("gpipe") + " --svg " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = Slurp(svg);
  EXPECT_EQ(text.rfind("<?xml", 0), 0u);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  // Two stages of two data-parallel replicas: one row per stage, with the replicas' all-reduce,
  // their sends and receives, the device's memory and GPipe's two phases.
  EXPECT_NE(text.find("4 workers in 2 rows"), std::string::npos) << text;
  EXPECT_NE(text.find(">stage 1 x2 (workers 2, 3)<title>"), std::string::npos) << text;
  EXPECT_NE(text.find("<title>all-reduce: "), std::string::npos);
  EXPECT_NE(text.find("<title>send_activation micro-batch 0 to worker "), std::string::npos);
  EXPECT_NE(text.find("<title>device memory, peak "), std::string::npos);
  EXPECT_NE(text.find(" of 931.3 GiB<"), std::string::npos);  // the peak of the 1e12-byte device
  EXPECT_NE(text.find("<title>warm-up: 0-"), std::string::npos);
  EXPECT_NE(text.find("<title>cool-down: "), std::string::npos);
  EXPECT_EQ(text.find("<title>steady: "), std::string::npos);
}

TEST(SimCli, CsvIsAHeaderAndOneRow) {
  auto r = RunPipetwin("simulate " + SmallScenarioFile() + " --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream in(r.out);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(Lines(r.out), 2);
  EXPECT_EQ(header.rfind("schema_version,scenario,schedule,planner,", 0), 0u) << header;
  EXPECT_EQ(row.rfind(std::to_string(kSchemaVersion) + ",", 0), 0u) << row;
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), std::count(row.begin(), row.end(), ','));
}

// A misspelled --vary path is said before any point runs, naming it; progress lines (stderr is
// not a terminal here) say how long so far and about how long is left; shards' CSVs merge into
// the whole sweep's table, and a shard missing or given twice is named.
TEST(SimCli, SweepChecksPathsFirstShowsTimeAndMergesShards) {
  const std::string scenario = SmallScenarioFile();
  auto r = RunPipetwin("sweep " + scenario + " --vary training.microbatchs=2,4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--vary training.microbatchs: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown key"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("points"), std::string::npos) << "nothing ran: " << r.err;
  const std::string dir = testing::TemporaryDirectory();
  const std::string vary = " --vary schedule=gpipe,flush --vary training.microbatches=2,4,8";
  r = RunPipetwin("sweep " + scenario + vary + " --csv " + dir + "/whole.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sweep: 1/6 points, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" s so far, about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep: 6/6 points in "), std::string::npos) << r.err;
  for (int i = 0; i < 4; ++i) {
    r = RunPipetwin("sweep " + scenario + vary + " -q --shard " + std::to_string(i) + "/4 --csv " +
                    dir + "/shard" + std::to_string(i) + ".csv");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(Slurp(dir + "/shard3.csv").substr(0, 6), "point,");
  const std::string shards = dir + "/shard2.csv " + dir + "/shard0.csv " + dir + "/shard3.csv ";
  r = RunPipetwin("sweep --merge " + shards + dir + "/shard1.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Slurp(dir + "/whole.csv"));
  r = RunPipetwin("sweep --merge " + shards);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("point 1 is in none of the 3 shards"), std::string::npos) << r.err;
  r = RunPipetwin("sweep --merge " + shards + dir + "/shard0.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("shard0.csv: line 2: point 0 is in another shard too"), std::string::npos)
      << r.err;
  r = RunPipetwin("sweep --merge " + dir + "/whole.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("whole.csv: line 1: expected the header of a `pipetwin sweep --shard`"),
            std::string::npos) << r.err;
}

TEST(SimCli, SweepWritesOneRowPerPointInOrder) {
  const std::string csv = testing::TemporaryDirectory() + "/sweep.csv";
  auto r = RunPipetwin("sweep " + SmallScenarioFile() +
                       " --vary schedule=gpipe,flush --vary cluster.levels[1].bandwidth_gbps=1,100"
                       " --csv " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("4/4 points"), std::string::npos) << r.err;
  std::stringstream in(Slurp(csv));
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 5u);
  // The varied schedule is the report's schedule: one column, not two.
  EXPECT_EQ(rows[0].rfind("schedule,cluster.levels[1].bandwidth_gbps,schema_version,scenario,"
                          "planner,", 0), 0u) << rows[0];
  EXPECT_EQ(rows[1].rfind("gpipe,1," + std::to_string(kSchemaVersion) + ",", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("gpipe,100,", 0), 0u);
  EXPECT_EQ(rows[3].rfind("flush,1,", 0), 0u);
  EXPECT_EQ(rows[4].rfind("flush,100,", 0), 0u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].back(), ',') << rows[i];  // no error
}

TEST(SimCli, DefaultScenarioRunsWithoutArguments) {
  auto r = RunPipetwin("simulate --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out), 2);
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// The shipped benchmark scenarios (docs/benchmarks.md) run; the 64-GPU one in well under a
// second. GPT-3 without tensor parallelism does not fit an A100: a what-if, flagged.
TEST(SimCli, ShippedSimScenariosRun) {
  const std::string scenario = std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/sim-gpt3-64.json";
  auto r = testing::RunPipetwin("simulate " + scenario + " --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",flush,manual,16,64,1,256,"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("warning: 64 of 64 devices exceed their memory"), std::string::npos)
      << r.err;
  const Scenario big = LoadScenarioFile(std::string(PIPETWIN_SOURCE_DIR) +
                                        "/scenarios/sim-gpt3-1024.json");
  EXPECT_EQ(big.cluster.DeviceCount(), 1024);
  EXPECT_EQ(big.plan->WorkerCount(), 1024);
}

}  // namespace
}  // namespace pipetwin
