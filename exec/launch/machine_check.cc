#include "exec/launch/machine_check.h"

#include <algorithm>
#include <iostream>

#include "partition/schedule/replay.h"
#include "partition/util/error.h"
#include "partition/util/host.h"

namespace pipetwin::exec {

RunDemand RunDemandOf(const ExecutorJob& job, double process_bytes) {
  RunDemand need;
  need.processes = job.WorkerCount();
  need.peer_timeout_s = job.options.timeout_s;
  const int cpus = static_cast<int>(AllowedCpus().size());
  const int intra_op = job.options.threads > 0 ? job.options.threads
                                               : std::max(1, cpus / std::max(1, need.processes));
  // The intra-op pool counts the main thread; Gloo's loop thread besides.
  need.threads_per_process = 1 + intra_op;
  const std::vector<StageSummary> stages = AnalyzeSchedule(job.schedule);
  constexpr double kFp32 = 4;  // the executor keeps weights, gradients and state in fp32
  const Workload& workload = job.scenario.workload;
  double bytes = 0;
  for (const WorkerProgram& w : job.schedule.workers) {
    const int versions =
        w.stage < static_cast<int>(stages.size()) ? std::max(1, stages[w.stage].max_weight_versions)
                                                  : 1;
    double parameters = 0;
    for (int g : w.model_stages) {
      const StagePlan& stage = job.plan.stages[g];
      for (int p = stage.first_layer; p <= stage.last_layer; ++p)
        parameters += workload.LayerParameters(job.plan.LayerAt(p));
    }
    bytes += parameters * (kFp32 * versions + kFp32 +
                           job.scenario.training.optimizer_bytes_per_parameter);
  }
  need.process_bytes = process_bytes;
  // With --device cuda the model's tensors live on the GPUs, not in this machine's memory.
  need.model_bytes = job.options.device == "cuda" ? 0 : bytes;
  return need;
}

void CheckMachineHoldsRun(const ExecutorJob& job) {
  const MachineCapacity here = ThisMachineCapacity();
  const RunDemand need = RunDemandOf(job, ProcessPrivateBytes());
  const std::string why = WhyMachineCannotHold(need, here);
  if (!why.empty())
    throw InputError(job.scenario.file, "plan",
                     "expected a run this machine can hold (pipetwin run starts every worker "
                     "here): " + why);
  if (here.available_memory_bytes > 0 && need.MemoryBytes() > here.available_memory_bytes)
    std::cerr << "pipetwin run: warning: the workers need at least "
              << need.MemoryBytes() / (1 << 20) << " MiB, more than the "
              << here.available_memory_bytes / (1 << 20)
              << " MiB available now: other processes hold the rest\n";
}

}  // namespace pipetwin::exec
