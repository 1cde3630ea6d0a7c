#include "workloads/scenario/scenario.h"

#include <algorithm>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/model/cluster.h"
#include "workloads/scenario/schedule_for_scenario.h"
#include "workloads/scenario/workload_source.h"
#include "partition/schedule/format.h"
#include "partition/util/files.h"

namespace pipetwin {

int ChunksPerWorker(ScheduleKind schedule, const TrainingSettings& training) {
  if (IsVShaped(schedule)) return 2;
  if (schedule == ScheduleKind::kInterleaved) return std::max(training.chunks, 2);
  return TakesChunkCount(schedule) || schedule == ScheduleKind::kImported ? training.chunks : 1;
}

int PlanChunksPerWorker(ScheduleKind schedule, const TrainingSettings& training) {
  return schedule == ScheduleKind::kDualPipe ? 1 : ChunksPerWorker(schedule, training);
}

const std::vector<std::string>& PlannerNames() {
  static const std::vector<std::string> names = {
      "pipedream", "pipedream-compat", "2bw", "data-parallel", "gpipe", "flush", "uniform",
      "balanced"};
  return names;
}

std::string PlannerKindName(PlannerKind kind) { return PlannerNames()[static_cast<int>(kind)]; }

PlannerKind ParsePlannerKind(const std::string& name) {
  const auto& names = PlannerNames();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    throw InputError("unknown planner '" + name + "' (expected one of " + all + ")");
  }
  return static_cast<PlannerKind>(it - names.begin());
}

const char* DefaultScenarioJson() {
  // A 1.3B-parameter GPT decoder on two PipeDream-2BW p3.16xlarge servers (16 V100-16GB): too
  // big for data parallelism with Adam (16 bytes per parameter), the question a user asks
  // before renting the servers.
  return R"({
  "name": "default: GPT 1.3B (24 x 2048) on 2 x p3.16xlarge (16 V100-16GB), PipeDream-2BW",
  "workload": {"generator": "gpt", "layers": 24, "hidden": 2048, "heads": 16,
               "sequence": 1024, "vocabulary": 50257, "microbatch": 1, "dtype_bytes": 2},
  "cluster": {"preset": "p3.16xlarge", "servers": 2},
  "planner": "2bw",
  "schedule": "2bw",
  "training": {"global_batch_size": 512, "iterations": 4, "optimizer": "adam",
               "optimizer_bytes_per_parameter": 8}
}
)";
}

namespace {

TrainingSettings ReadTraining(JsonReader& t) {
  TrainingSettings s;
  s.global_batch_size = t.OptionalInteger("global_batch_size", 0, kMaxSamples, 0);
  s.microbatch_size = t.OptionalInteger("microbatch_size", 1, kMaxSamples, 1);
  s.microbatches = t.OptionalInteger("microbatches", 1, kMaxMicrobatches, 8);
  s.iterations = t.OptionalInteger("iterations", 1, kMaxIterations, 4);
  s.optimizer = t.OptionalChoice("optimizer", {"sgd", "momentum", "adam"}, "adam");
  double default_state = s.optimizer == "adam" ? 8 : s.optimizer == "momentum" ? 4 : 0;
  s.optimizer_bytes_per_parameter =
      t.OptionalNonNegativeNumber("optimizer_bytes_per_parameter", default_state);
  s.learning_rate = t.OptionalPositiveNumber("learning_rate", 1e-3);
  s.vertical_sync = t.OptionalBool("vertical_sync", false);
  s.weight_stashing = t.OptionalBool("weight_stashing", true);
  s.recompute = t.OptionalBool("recompute", false);
  s.recompute_timing = *ParseRecomputeTiming(
      t.OptionalChoice("recompute_timing", {"in_backward", "early"}, "in_backward"));
  s.data_loading = *ParseDataLoading(
      t.OptionalChoice("data_loading", {"overlapped", "serial"}, "overlapped"));
  s.chunks = t.OptionalInteger("chunks", 1, kMaxLayers, 1);
  s.allreduce_buckets =
      t.OptionalInteger("allreduce_buckets", 1, kMaxCount, kDefaultAllReduceBuckets);
  s.send_mode = *ParseSendMode(t.OptionalChoice("p2p", {"eager", "blocking"}, "eager"));
  s.distributed_optimizer = t.OptionalBool("distributed_optimizer", false);
  s.overlap_param_gather = t.OptionalBool("overlap_param_gather", false);
  if (s.overlap_param_gather && !s.distributed_optimizer)
    t.FailAt("overlap_param_gather",
             "expected false without \"distributed_optimizer\": true (only a sharded optimizer "
             "all-gathers the weights)");
  t.Finish();
  return s;
}

}  // namespace

Scenario ScenarioFromJson(const nlohmann::json& doc, const std::string& file,
                          const std::string& base_dir) {
  JsonReader root(doc, file);
  Scenario s;
  s.file = file;
  s.source = doc;
  s.name = root.OptionalString("name", "scenario");
  // Cheap checks first: everything but the workload is read, and the root's keys checked,
  // before a generator builds or a file is read (a typo is not reported after gigabytes).
  s.cluster = ClusterFromJson(root.Member("cluster").value(), file, "cluster");
  if (root.Has("schedule")) s.schedule = ParseScheduleKind(root.Choice("schedule", ScheduleKindNames()));
  if (auto t = root.OptionalMember("training")) s.training = ReadTraining(*t);
  if (root.Has("schedule_csv")) {
    if (root.Has("schedule"))
      root.Fail("expected \"schedule\" or \"schedule_csv\", not both");
    std::string csv = root.String("schedule_csv");
    if (!csv.empty() && csv[0] != '/' && !base_dir.empty()) csv = base_dir + "/" + csv;
    s.imported = ScheduleFromCsv(ReadTextFile(csv), csv);  // its faults name the CSV
    s.schedule = ScheduleKind::kImported;
    s.training.chunks = s.imported->chunks;
  }
  const int sources = root.Has("planner") + root.Has("plan") + root.Has("plan_file");
  if (sources != 1)
    root.Fail("expected exactly one of \"planner\", \"plan\" or \"plan_file\", got " +
              std::to_string(sources));
  if (root.Has("planner")) s.planner = ParsePlannerKind(root.Choice("planner", PlannerNames()));
  std::string plan_file = file, plan_path = "plan";
  if (auto p = root.OptionalMember("plan")) {
    s.plan = PlanFromJson(p->value(), file, "plan");
  } else if (root.Has("plan_file")) {
    plan_file = root.String("plan_file");
    if (plan_file[0] != '/' && !base_dir.empty()) plan_file = base_dir + "/" + plan_file;
    s.plan = LoadPlanFile(plan_file);
    plan_path = "";
  }
  root.Accept("workload");
  root.Finish();
  // Generators time their layers on the cluster's device.
  s.workload = WorkloadFromSource(root.Member("workload"), s.cluster, base_dir);
  // A tensor-parallel workload's layers are one rank's share: the plan places groups.
  s.cluster = TensorParallelView(s.cluster, s.workload.tensor_parallel, file);
  if (s.plan) {
    // The scenario's schedule governs; without one, the plan's own.
    s.notes = OverriddenPlanSettings(s, *s.plan, plan_file, plan_path);
    if (s.schedule) s.plan->schedule = *s.schedule;
    ValidatePlan(*s.plan, s.workload, s.cluster.DeviceCount(), plan_file, plan_path,
                 PlanChunksPerWorker(s.plan->schedule, s.training));
  }
  return s;
}

Scenario LoadScenarioFile(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string base_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return ScenarioFromJson(ParseJsonFile(path), path, base_dir);
}

Scenario DefaultScenario() {
  return ScenarioFromJson(ParseJsonText(DefaultScenarioJson(), "<embedded default>"),
                          "<embedded default>", ".");
}

}  // namespace pipetwin
