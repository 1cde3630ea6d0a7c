#include "exec/job.h"

#include <algorithm>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "workloads/cluster_device.h"
#include "workloads/scenario_plan.h"
#include "workloads/scenario_schedule.h"
#include "workloads/workload_source.h"
#include "partition/schedule/build.h"
#include "partition/schedule/spec.h"

namespace pipetwin::exec {

namespace {

// The simulator's very spec (workloads/scenario_schedule.h), so both run the same lists.
ScheduleSpec SpecFor(const ExecutorJob& job, const std::string& file) {
  const ScheduleSpec spec = ScheduleSpecFor(job.scenario, job.plan, job.iterations, file);
  if (spec.kind == ScheduleKind::kInterleaved)
    throw InputError(file, "schedule",
                     "the executor does not run interleaved 1F1B (a worker would hold several "
                     "layer ranges, which a plan does not give); it runs gpipe, flush, pipedream, "
                     "2bw and zb-h1");
  return spec;
}

void CheckData(const ExecutorJob& job) {
  if (job.options.data != "fashion-mnist") return;
  const MlpConfig& m = job.model.mlp;
  if (job.model.generator != "mlp" || m.input != 784 || m.classes != 10)
    throw InputError(job.scenario.file, "workload",
                     "--data fashion-mnist needs an mlp with input 784 and classes 10");
}

}  // namespace

const std::vector<std::string>& ExecutableGenerators() {
  static const std::vector<std::string> names = {"mlp", "gpt", "bert", "vgg16", "resnet50"};
  return names;
}

ModelSpec ModelSpecFromSource(const nlohmann::json& source, const std::string& file,
                              const std::string& path) {
  JsonReader spec(source, file, path);
  if (!source.is_object() || !spec.Has("generator"))
    spec.Fail("the executor builds models from a generator (mlp, gpt, bert, vgg16, resnet50); "
              "a workload file or inline layers carry no model to build");
  ModelSpec m;
  m.generator = spec.Choice("generator", ExecutableGenerators());
  if (m.generator == "mlp") m.mlp = MlpConfigFromSpec(spec);
  else if (m.generator == "gpt" || m.generator == "bert")
    m.transformer = TransformerConfigFromSpec(spec, m.generator);
  else m.cnn = CnnConfigFromSpec(spec);
  return m;
}

ExecutorJob PrepareJob(const RunOptions& options) {
  ExecutorJob job;
  job.options = options;
  job.scenario = LoadScenarioFile(options.scenario);
  const std::string& file = job.scenario.file;
  job.model = ModelSpecFromSource(job.scenario.source["workload"], file, "workload");
  if (!options.plan_file.empty()) {
    job.plan = LoadPlanFile(options.plan_file);
    ValidatePlan(job.plan, job.scenario.workload, job.scenario.cluster.DeviceCount(),
                 options.plan_file);
    if (job.scenario.source.contains("schedule")) job.plan.schedule = job.scenario.schedule;
  } else {
    job.plan = PlanForScenario(job.scenario);
  }
  const TrainingSettings& t = job.scenario.training;
  job.iterations = options.iterations > 0 ? options.iterations : t.iterations;
  const ScheduleSpec spec = SpecFor(job, file);
  const MicrobatchSettings micro = MicrobatchSettingsFor(job.scenario, job.plan);
  job.microbatches_per_iteration = micro.microbatches * spec.replicas[0];
  job.microbatch_size = micro.microbatch_size;
  if (!options.weight_stashing && spec.kind != ScheduleKind::kPipeDream)
    throw InputError("pipetwin run: --no-weight-stashing applies to the pipedream schedule only");
  job.schedule = BuildSchedule(spec);
  job.programs = FlushesEveryIteration(spec.kind) ? job.iterations : 1;
  job.updates_per_program = 0;
  for (const Op& op : job.schedule.workers[0].ops)
    job.updates_per_program += op.kind == OpKind::kUpdate;
  if (options.warmup_iterations >= job.iterations && job.iterations > 1)
    throw InputError("pipetwin run: --warmup (" + std::to_string(options.warmup_iterations) +
                     ") must be below the iterations (" + std::to_string(job.iterations) + ")");
  CheckData(job);
  return job;
}

}  // namespace pipetwin::exec
