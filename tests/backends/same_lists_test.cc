// Both back ends run one list per worker for one scenario: the lists the simulator's setup builds
// (sim::PrepareSimulation) equal the ones the executor's job builds (exec::PrepareJob), op for op,
// on every checked-in scenario both accept; and what each back end then runs, read back from its
// Chrome trace, follows those lists in the same order on every worker.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/job.h"
#include "partition/schedule/format.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/timeline.h"
#include "partition/util/error.h"
#include "sim/setup.h"
#include "test_support.h"
#include "workloads/scenario/plan_for_scenario.h"

namespace pipetwin {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> CheckedInScenarios() {
  std::vector<std::string> files;
  for (const char* folder : {"scenarios", "scenarios/validation", "tests/golden/scenarios"})
    for (const auto& entry : fs::directory_iterator(fs::path(PIPETWIN_SOURCE_DIR) / folder))
      if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string Describe(const Op& op) {
  return ActionName(op) + " (weight version " + std::to_string(op.weight_version) + ", buckets " +
         std::to_string(op.buckets) + ")";
}

// The first op where two workers' lists part, or "" when they are equal.
std::string FirstDifference(const PipelineSchedule& a, const PipelineSchedule& b) {
  if (a.WorkerCount() != b.WorkerCount())
    return std::to_string(a.WorkerCount()) + " workers against " +
           std::to_string(b.WorkerCount());
  for (int w = 0; w < a.WorkerCount(); ++w) {
    const auto& x = a.workers[w].ops;
    const auto& y = b.workers[w].ops;
    for (size_t i = 0; i < std::max(x.size(), y.size()); ++i)
      if (i >= x.size() || i >= y.size() || !(x[i] == y[i]))
        return "worker " + std::to_string(w) + ", op " + std::to_string(i) + ": " +
               (i < x.size() ? Describe(x[i]) : "(end)") + " against " +
               (i < y.size() ? Describe(y[i]) : "(end)");
  }
  return a == b ? "" : "the lists' headers (stages, replicas, chunks)";
}

TEST(BackEnds, BuildIdenticalListsForEveryScenarioBothRun) {
  int compared = 0;
  for (const std::string& file : CheckedInScenarios()) {
    SCOPED_TRACE(file);
    exec::RunOptions options;
    options.scenario = file;
    exec::ExecutorJob job;
    try {
      job = exec::PrepareJob(options);
    } catch (const InputError&) {
      continue;  // not a generator's network, or a schedule the executor does not run
    }
    const sim::SimulationSetup setup =
        sim::PrepareSimulation(job.scenario, PlanForScenario(job.scenario), {});
    EXPECT_EQ(FirstDifference(setup.schedule, job.schedule), "");
    EXPECT_TRUE(setup.schedule == job.schedule);
    EXPECT_EQ(setup.microbatches_per_iteration, job.microbatches_per_iteration);
    EXPECT_EQ(setup.microbatch_size, job.microbatch_size);
    ++compared;
  }
  // The twelve validation scenarios at least; the others where the executor can build the model.
  EXPECT_GE(compared, 12);
}

// Per worker, the compute ops (forward, backward, recompute) of a trace in time order, each with
// the weight version it used.
std::vector<std::vector<std::string>> ComputeOrder(const std::string& trace_file) {
  std::ifstream in(trace_file);
  const Timeline timeline = TimelineFromChromeTrace(nlohmann::json::parse(in), trace_file);
  std::vector<TimelineEvent> events = timeline.events;
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.start_s < b.start_s;
  });
  std::vector<std::vector<std::string>> order;
  for (const TimelineEvent& e : events) {
    if (e.lane != kComputeLane) continue;
    if (e.worker >= static_cast<int>(order.size())) order.resize(e.worker + 1);
    order[e.worker].push_back(e.name + "@v" + std::to_string(e.op.weight_version));
  }
  return order;
}

// The lists' compute ops, in list order.
std::vector<std::vector<std::string>> ListOrder(const PipelineSchedule& s) {
  std::vector<std::vector<std::string>> order(s.WorkerCount());
  for (int w = 0; w < s.WorkerCount(); ++w)
    for (const Op& op : s.workers[w].ops)
      if (IsComputeOp(op.kind))
        order[w].push_back(ActionName(op) + "@v" + std::to_string(op.weight_version));
  return order;
}

// Simulates and runs `scenario` with Chrome traces and checks that each back end ran the
// compute ops of the executor's job's lists (with `run_options` applied), worker by worker, in
// list order and on the lists' weight versions.
void ExpectBothRunTheLists(const std::string& scenario, const std::string& simulate_options,
                           const std::string& run_options, exec::RunOptions options,
                           size_t workers) {
  const std::string dir = fs::path(scenario).parent_path().string();
  const testing::CommandResult simulated = testing::RunPipetwin(
      "simulate " + scenario + simulate_options + " --trace " + dir + "/sim.json --force");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  const testing::CommandResult ran = testing::RunPipetwin(
      "run " + scenario + run_options + " --trace " + dir + "/run.json --force");
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  options.scenario = scenario;
  const auto lists = ListOrder(exec::PrepareJob(options).schedule);
  ASSERT_EQ(lists.size(), workers);
  EXPECT_EQ(ComputeOrder(dir + "/sim.json"), lists);
  EXPECT_EQ(ComputeOrder(dir + "/run.json"), lists);
}

TEST(BackEnds, RunTheirListsInOneOrder) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string scenario = dir + "/mlp.json";
  // Two stages, the second replicated (all-reduce), PipeDream-Flush: sends, receives, an
  // all-reduce and updates on every worker; two iterations.
  testing::WriteFile(scenario, R"({
    "name": "back ends' order",
    "workload": {"generator": "mlp", "layers": 4, "input": 64, "width": 64, "classes": 10,
                 "batch": 8},
    "cluster": {"name": "local", "device": {"name": "CPU", "memory_bytes": 8e9},
                "levels": [{"name": "host", "count": 3, "bandwidth_gbps": 40, "latency_us": 20}]},
    "plan": {"planner": "manual", "schedule": "flush", "microbatch_size": 8,
             "microbatches_per_update": 4,
             "stages": [{"first_layer": 0, "last_layer": 1, "replicas": 1, "devices": [0]},
                        {"first_layer": 2, "last_layer": 3, "replicas": 2, "devices": [1, 2]}]},
    "schedule": "flush",
    "training": {"microbatch_size": 8, "microbatches": 4, "iterations": 2, "optimizer": "sgd",
                 "learning_rate": 0.01}})");
  ExpectBothRunTheLists(scenario, "", "", {}, 3);
}

// PipeDream without weight stashing: both back ends rerun each forward on the latest weights
// before its backward (Recompute ops on the version the lists name), whether the scenario says
// so (training.weight_stashing) or `run --no-weight-stashing` does.
TEST(BackEnds, RunPipeDreamWithoutStashingFromTheSameLists) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string body = R"(
    "workload": {"generator": "mlp", "layers": 3, "input": 32, "width": 32, "classes": 10,
                 "batch": 4},
    "cluster": {"name": "local", "device": {"name": "CPU", "memory_bytes": 8e9},
                "levels": [{"name": "host", "count": 3, "bandwidth_gbps": 40, "latency_us": 20}]},
    "plan": {"planner": "manual", "schedule": "pipedream", "microbatch_size": 4,
             "microbatches_per_update": 1,
             "stages": [{"first_layer": 0, "last_layer": 0, "replicas": 1, "devices": [0]},
                        {"first_layer": 1, "last_layer": 1, "replicas": 1, "devices": [1]},
                        {"first_layer": 2, "last_layer": 2, "replicas": 1, "devices": [2]}]},
    "schedule": "pipedream",)";
  const std::string scenario = dir + "/pipedream.json";
  testing::WriteFile(scenario, "{" + body + R"(
    "training": {"microbatch_size": 4, "microbatches": 4, "iterations": 2, "optimizer": "sgd",
                 "learning_rate": 0.01, "weight_stashing": false}})");
  ExpectBothRunTheLists(scenario, "", "", {}, 3);
  exec::RunOptions options;
  options.scenario = scenario;
  const PipelineSchedule& lists = exec::PrepareJob(options).schedule;
  int recomputes = 0, newer = 0;
  for (const Op& op : lists.workers[0].ops)
    if (op.kind == OpKind::kRecompute) ++recomputes, newer += op.weight_version > 0;
  EXPECT_EQ(recomputes, 8);  // every backward of stage 0's 2 x 4 minibatches
  EXPECT_GT(newer, 0);
  // The run's flag gives the same lists as the scenario's field.
  const std::string stashing = dir + "/stashing/pipedream.json";
  fs::create_directories(dir + "/stashing");
  testing::WriteFile(stashing, "{" + body + R"(
    "training": {"microbatch_size": 4, "microbatches": 4, "iterations": 2, "optimizer": "sgd",
                 "learning_rate": 0.01}})");
  options.scenario = stashing;
  options.weight_stashing = false;
  EXPECT_EQ(FirstDifference(exec::PrepareJob(options).schedule, lists), "");
  ExpectBothRunTheLists(stashing, " --no-weight-stashing",
                        " --no-weight-stashing", options, 3);
}

}  // namespace
}  // namespace pipetwin
