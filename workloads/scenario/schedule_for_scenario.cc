#include "workloads/scenario/schedule_for_scenario.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "partition/cost/stage_costs.h"
#include "partition/schedule/build.h"
#include "partition/util/error.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

ScheduleKind ScheduleFor(const Scenario& scenario, const Plan& plan) {
  return scenario.schedule.value_or(plan.schedule);
}

MicrobatchSettings MicrobatchSettingsFor(const Scenario& scenario, const Plan& plan) {
  if (plan.IsHandWritten())
    return {scenario.training.microbatch_size, scenario.training.microbatches};
  return {plan.microbatch_size, plan.microbatches_per_update};
}

int MicrobatchesPerIteration(const Scenario& scenario, const Plan& plan) {
  return MicrobatchSettingsFor(scenario, plan).microbatches *
         (plan.stages.empty() ? 1 : plan.stages[0].replicas);
}

namespace {

// The scenario's training.microbatch_size and training.microbatches, where its file gives them
// and the plan has others, one line each; `plan_at(key)` says where the plan's value comes from.
void SayMicrobatchesReplaced(const Scenario& scenario, const Plan& plan,
                             const std::function<std::string(const char*)>& plan_at,
                             std::vector<std::string>& notes) {
  struct Setting {
    const char* key;       // under the scenario's "training"
    const char* plan_key;  // the plan's
    int scenario_value, plan_value;
  };
  const Setting settings[] = {
      {"microbatch_size", "microbatch_size", scenario.training.microbatch_size,
       plan.microbatch_size},
      {"microbatches", "microbatches_per_update", scenario.training.microbatches,
       plan.microbatches_per_update}};
  const auto training = scenario.source.find("training");
  if (training == scenario.source.end() || !training->is_object()) return;
  for (const Setting& s : settings)
    if (training->contains(s.key) && s.scenario_value != s.plan_value)
      notes.push_back("the " + plan.planner + " plan's " + s.plan_key + " " +
                      std::to_string(s.plan_value) + " (" + plan_at(s.plan_key) +
                      ") replaces the scenario's " + std::to_string(s.scenario_value) + " (" +
                      scenario.file + ": training." + s.key + ")");
}

}  // namespace

std::vector<std::string> OverriddenPlanSettings(const Scenario& scenario, const Plan& plan,
                                                const std::string& plan_file,
                                                const std::string& plan_path) {
  std::vector<std::string> notes;
  const std::string at = plan_file + ": " + (plan_path.empty() ? "" : plan_path + ".");
  if (scenario.schedule && plan.schedule_stated && *scenario.schedule != plan.schedule)
    notes.push_back("the scenario's schedule " + ScheduleKindName(*scenario.schedule) + " (" +
                    scenario.file + (scenario.imported ? ": schedule_csv" : ": schedule") +
                    ") replaces the plan's " +
                    ScheduleKindName(plan.schedule) + " (" + at + "schedule)");
  if (plan.IsHandWritten()) return notes;
  SayMicrobatchesReplaced(scenario, plan, [&](const char* key) { return at + key; }, notes);
  return notes;
}

std::vector<std::string> PlannerOverrides(const Scenario& scenario, const Plan& plan) {
  std::vector<std::string> notes;
  const std::string planner = "the " + plan.planner + " planner";
  const ScheduleKind runs = ScheduleFor(scenario, plan);
  if (runs != plan.schedule)
    notes.push_back("the scenario's schedule " + ScheduleKindName(runs) + " (" + scenario.file +
                    (scenario.imported ? ": schedule_csv" : ": schedule") + ") replaces " +
                    ScheduleKindName(plan.schedule) + ", the schedule " + planner +
                    " planned for: its partition and micro-batches are chosen for " +
                    ScheduleKindName(plan.schedule) + (plan.predicted_samples_per_s > 0
                                                           ? ", and so is its prediction"
                                                           : ""));
  SayMicrobatchesReplaced(scenario, plan,
                          [&](const char*) { return planner + "'s choice"; }, notes);
  // The samples per update the plan takes: data parallel x micro-batch x micro-batches.
  const long long global = plan.stages.empty() ? 0
                           : static_cast<long long>(plan.stages[0].replicas) *
                                 plan.microbatch_size * plan.microbatches_per_update;
  if (scenario.training.global_batch_size > 0 && global != scenario.training.global_batch_size)
    notes.push_back("the " + plan.planner + " plan's global batch of " + std::to_string(global) +
                    " samples (" + std::to_string(plan.stages[0].replicas) + " replicas x " +
                    std::to_string(plan.microbatch_size) + " x " +
                    std::to_string(plan.microbatches_per_update) + ") replaces the scenario's " +
                    std::to_string(scenario.training.global_batch_size) + " (" + scenario.file +
                    ": training.global_batch_size)");
  // A schedule of several chunks per worker folds the planner's stages onto fewer workers.
  const int chunks = PlanChunksPerWorker(runs, scenario.training);
  if (chunks > 1 && plan.StageCount() % chunks == 0) {
    int workers = 0;
    for (int s = 0; s < plan.StageCount() / chunks; ++s) workers += plan.stages[s].replicas;
    if (workers < plan.WorkerCount())
      notes.push_back(ScheduleKindName(runs) + " with " + std::to_string(chunks) +
                      " chunks per worker (" + scenario.file + ": training.chunks) runs " +
                      planner + "'s " + std::to_string(plan.StageCount()) + " stages on " +
                      std::to_string(workers) + " workers: " +
                      std::to_string(plan.WorkerCount() - workers) + " of the " +
                      std::to_string(plan.WorkerCount()) + " devices it planned for stay idle");
  }
  return notes;
}

std::vector<std::string> PlanWarnings(const Scenario& scenario, const Plan& plan,
                                      const std::string& plan_file) {
  if (!plan_file.empty()) return OverriddenPlanSettings(scenario, plan, plan_file, "");
  if (scenario.plan) return scenario.notes;
  return PlannerOverrides(scenario, plan);
}

void TurnOffWeightStashing(Scenario& scenario, const Plan& plan, const std::string& command) {
  if (ScheduleFor(scenario, plan) != ScheduleKind::kPipeDream)
    throw InputError("pipetwin " + command +
                     ": --no-weight-stashing applies to the pipedream schedule only");
  scenario.training.weight_stashing = false;
}

ScheduleSpec ScheduleSpecFor(const Scenario& scenario, const Plan& plan, int iterations,
                             const std::string& file, const std::string& path) {
  const MicrobatchSettings micro = MicrobatchSettingsFor(scenario, plan);
  ScheduleSpec spec;
  spec.kind = ScheduleFor(scenario, plan);
  spec.chunks = ChunksPerWorker(spec.kind, scenario.training);
  if (plan.StageCount() % spec.chunks != 0)
    throw InputError(file, path.empty() ? "stages" : path + ".stages",
                     ScheduleKindName(spec.kind) + " with " + std::to_string(spec.chunks) +
                         " chunks per worker needs a multiple of " + std::to_string(spec.chunks) +
                         " stages (model chunks), got " + std::to_string(plan.StageCount()));
  spec.stages = plan.StageCount() / spec.chunks;
  std::vector<int> stage_replicas;
  for (const StagePlan& s : plan.stages) stage_replicas.push_back(s.replicas);
  try {
    spec.replicas = PositionReplicas(spec.kind, spec.chunks, stage_replicas);
  } catch (const ScheduleSpecError& e) {
    throw InputError(file.empty() ? scenario.file : file,
                     scenario.plan || !path.empty() ? (path.empty() ? "stages" : path + ".stages")
                                                    : "planner",
                     e.what());
  }
  spec.microbatches = MicrobatchesPerIteration(scenario, plan);
  if (spec.kind == ScheduleKind::kPipeDream) spec.microbatches *= iterations;
  if (spec.kind == ScheduleKind::kTwoBW) spec.batches = iterations;
  spec.vertical_sync = plan.vertical_sync || scenario.training.vertical_sync;
  spec.weight_stashing = scenario.training.weight_stashing;
  spec.recompute = plan.recompute || scenario.training.recompute;
  spec.recompute_timing = scenario.training.recompute_timing;
  spec.send_mode = scenario.training.send_mode;
  spec.allreduce_buckets = scenario.training.allreduce_buckets;
  spec.layer_count = scenario.workload.LayerCount();
  spec.worker_count = std::accumulate(spec.replicas.begin(), spec.replicas.end(), 0);
  return spec;
}

namespace {

// The scenario's JSON path of a spec field (ScheduleSpecError::field), so that a broken rule
// names what the user wrote: the plan's stages, the training settings, the schedule.
std::string ScenarioPathOf(const std::string& field, const Scenario& scenario,
                           const std::string& plan_path) {
  if (field == "stages" || field == "replicas")
    return scenario.plan ? (plan_path.empty() ? "stages" : plan_path + ".stages") : "planner";
  if (field == "batches") return "training.iterations";
  if (field == "kind") return "schedule";
  return "training." + field;  // microbatches, chunks, vertical_sync, weight_stashing, ...
}

}  // namespace

namespace {

// An imported schedule's lists against the plan and the training settings they run with.
void CheckImported(const Scenario& scenario, const ScheduleSpec& spec) {
  const PipelineSchedule& s = *scenario.imported;
  std::string why;
  auto counts = [](const std::vector<int>& v) {
    std::string out;
    for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
  };
  if (s.ModelStageCount() != spec.stages * spec.chunks)
    why = std::to_string(s.ModelStageCount()) + " model stages, the plan " +
          std::to_string(spec.stages * spec.chunks);
  else if (s.replicas != spec.replicas)
    why = "workers per position " + counts(s.replicas) + ", the plan " + counts(spec.replicas);
  else if (s.microbatches != spec.microbatches)
    why = std::to_string(s.microbatches) + " micro-batches per iteration, the training " +
          std::to_string(spec.microbatches);
  if (!why.empty())
    throw InputError(scenario.file, "schedule_csv",
                     "the imported schedule does not fit the plan: it has " + why);
}

}  // namespace

void CheckScheduleForScenario(const Scenario& scenario, const Plan& plan, int iterations,
                              const std::string& file, const std::string& path) {
  const ScheduleSpec spec = ScheduleSpecFor(scenario, plan, iterations, file, path);
  if (scenario.imported) return CheckImported(scenario, spec);
  try {
    CheckScheduleSpec(spec, IsAsynchronous(spec.kind) ? 1 : iterations);
  } catch (const ScheduleSpecError& e) {
    throw InputError(file.empty() ? scenario.file : file, ScenarioPathOf(e.field(), scenario, path),
                     e.what());
  }
}

PipelineSchedule ScheduleForScenario(const Scenario& scenario, const Plan& plan, int iterations,
                                     const std::string& file, const std::string& path) {
  const ScheduleSpec spec = ScheduleSpecFor(scenario, plan, iterations, file, path);
  if (scenario.imported) {
    CheckImported(scenario, spec);
    return RepeatSchedule(*scenario.imported, iterations);
  }
  try {
    CheckScheduleSpec(spec, IsAsynchronous(spec.kind) ? 1 : iterations);
    const PipelineSchedule once = BuildSchedule(spec);
    return IsAsynchronous(spec.kind) ? once : RepeatSchedule(once, iterations);
  } catch (const ScheduleSpecError& e) {
    throw InputError(file.empty() ? scenario.file : file, ScenarioPathOf(e.field(), scenario, path),
                     e.what());
  }
}

}  // namespace pipetwin
