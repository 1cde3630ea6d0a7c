// What a run launched here needs of this machine, at least, from its job: the demand
// `pipetwin run` (and `run --check`, and `compare` through it) holds against the machine's
// capacity (partition/util/machine.h) before any worker starts.
//
//   RunDemand need = RunDemandOf(job, ProcessPrivateBytes());
//   std::string why = WhyMachineCannotHold(need, ThisMachineCapacity());
//
// Free of LibTorch.
#pragma once

#include "exec/job.h"
#include "partition/util/machine.h"

namespace pipetwin::exec {

// Every worker process on this machine, each holding at least `process_bytes` of its own (the
// launcher's private memory: the same program with the same job prepared, before any tensor)
// and its stages' fp32 weights (times the weight versions the op lists keep alive,
// AnalyzeSchedule), one fp32 gradient buffer and the scenario's optimizer state; activations,
// communication buffers and allocator caches are left out, so the demand is a lower bound.
// With --device cuda the model's state is on the GPUs and only the processes' own memory counts.
// Threads: the worker's own, its intra-op threads beyond it and its communicator's.
RunDemand RunDemandOf(const ExecutorJob& job, double process_bytes);

// Refuses (InputError naming the scenario, exit 2) a run this machine cannot hold; a run that
// needs more memory than is available now (but less than the machine has) gets a warning on
// stderr instead.
void CheckMachineHoldsRun(const ExecutorJob& job);

}  // namespace pipetwin::exec
