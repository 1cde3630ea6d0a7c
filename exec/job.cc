#include "exec/job.h"

#include <algorithm>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/model/cluster.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "workloads/scenario/schedule_for_scenario.h"
#include "workloads/scenario/workload_source.h"
#include "partition/schedule/build.h"
#include "partition/schedule/spec.h"

namespace pipetwin::exec {

namespace {

// The simulator's very spec (workloads/scenario_schedule.h), so both run the same lists.
ScheduleSpec SpecFor(const ExecutorJob& job, const std::string& file) {
  const ScheduleSpec spec = ScheduleSpecFor(job.scenario, job.plan, job.iterations, file);
  if (spec.chunks > 1 && job.options.evaluate)
    throw InputError("pipetwin run: --evaluate passes the test set through one stage per worker; "
                     "the " + ScheduleKindName(spec.kind) + " schedule puts " +
                     std::to_string(spec.chunks) + " on each");
  return spec;
}

void CheckData(const ExecutorJob& job) {
  if (job.options.data != "fashion-mnist") return;
  const NetworkInput& in = job.network.input;
  if (job.network.generator != "mlp" || in.sample_shape != std::vector<int64_t>{784} ||
      in.classes != 10)
    throw InputError(job.scenario.file, "workload",
                     "--data fashion-mnist needs an mlp with input 784 and classes 10");
}

}  // namespace

Network NetworkFromSource(const nlohmann::json& source, const std::string& file,
                          const std::string& path) {
  JsonReader spec(source, file, path);
  if (!source.is_object() || !spec.Has("generator"))
    spec.Fail("the executor builds models from a generator (mlp, gpt, bert, vgg16, resnet50); "
              "a workload file or inline layers carry no model to build");
  try {
    return DescribeNetwork(ReadGeneratorSpec(spec));
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    spec.Fail(e.what());
  }
}

ExecutorJob PrepareJob(const RunOptions& options) {
  ExecutorJob job;
  job.options = options;
  job.scenario = LoadScenarioFile(options.scenario);
  const std::string& file = job.scenario.file;
  job.network = NetworkFromSource(job.scenario.source["workload"], file, "workload");
  if (!options.plan_file.empty()) {
    job.plan = LoadPlanFile(options.plan_file);
    ValidatePlan(job.plan, job.scenario.workload, job.scenario.cluster.DeviceCount(),
                 options.plan_file);
    job.scenario.notes = PlanWarnings(job.scenario, job.plan, options.plan_file);
    if (job.scenario.schedule) job.plan.schedule = *job.scenario.schedule;
  } else {
    job.plan = PlanForScenario(job.scenario);
    job.scenario.notes = PlanWarnings(job.scenario, job.plan, "");
  }
  if (!options.weight_stashing) TurnOffWeightStashing(job.scenario, job.plan, "run");
  const TrainingSettings& t = job.scenario.training;
  job.iterations = options.iterations > 0 ? options.iterations : t.iterations;
  SpecFor(job, file);  // refuses --evaluate on a schedule of several chunks per worker
  const MicrobatchSettings micro = MicrobatchSettingsFor(job.scenario, job.plan);
  job.microbatches_per_iteration = MicrobatchesPerIteration(job.scenario, job.plan);
  job.microbatch_size = micro.microbatch_size;
  job.schedule = ScheduleForScenario(job.scenario, job.plan, job.iterations, file);
  const bool replicated = job.schedule.WorkerCount() > job.schedule.stages;
  if (replicated && t.allreduce_buckets > 1)
    throw InputError(file, "training.allreduce_buckets",
                     "the executor all-reduces a replicated stage's gradients in one bucket, "
                     "after its last backward: expected 1, got " +
                         std::to_string(t.allreduce_buckets) +
                         " (buckets that overlap the backward are the simulator's model only)");
  if (replicated && t.distributed_optimizer)
    throw InputError(file, "training.distributed_optimizer",
                     "the executor keeps the whole optimizer state on every replica: expected "
                     "false (a sharded optimizer is the simulator's and the planners' model only)");
  if (options.warmup_iterations >= job.iterations && job.iterations > 1)
    throw InputError("pipetwin run: --warmup (" + std::to_string(options.warmup_iterations) +
                     ") must be below the iterations (" + std::to_string(job.iterations) + ")");
  CheckData(job);
  return job;
}

}  // namespace pipetwin::exec
