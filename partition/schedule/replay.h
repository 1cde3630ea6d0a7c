// Running the op lists as a discrete-event executor with given op times, and the memory and
// staleness figures that follow from the lists alone.
#pragma once

#include <string>
#include <vector>

#include "partition/schedule/op.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

struct WorkerTiming {
  int worker = 0;
  double busy = 0;    // compute time
  double idle = 0;    // makespan - busy
  double finish = 0;
  std::vector<double> op_start, op_end;  // per op of the worker's list
};

// One pipeline position's memory and staleness figures: from the lists (AnalyzeSchedule), from a
// simulation or from a real run (the Report's stages).
struct StageSummary {
  int stage = 0;  // pipeline position
  // Version delay of the gradients each weight update applies (current version - version they
  // were computed with), over the stage's updates and replicas.
  double staleness_min = 0, staleness_mean = 0, staleness_max = 0;
  int max_weight_versions = 0;
  int max_in_flight_activations = 0;
  int updates = 0;
};

// A stage's staleness from the version delay of each of its updates (over its replicas): min,
// mean and max; zeros without updates. The lists' (AnalyzeSchedule) and a real run's.
void SummarizeStaleness(const std::vector<double>& delays, StageSummary& stage);

struct ReplayResult {
  bool completed = false;
  std::string deadlock;  // when not completed: who waits on what
  double makespan = 0;
  double bubble_fraction = 0;      // idle / (workers * makespan)
  double bubble_over_compute = 0;  // idle / busy (Megatron's convention)
  std::vector<WorkerTiming> workers;
  std::vector<StageSummary> stages;
};

// Runs the lists as a discrete-event executor under op.h's contract (a Send is posted without
// waiting, a Recv waits for its message, an AllReduce for all replicas) and measures time,
// memory and staleness. Never throws for a deadlock: it reports it.
ReplayResult ReplaySchedule(const PipelineSchedule& schedule, const OpCosts& costs);
// Memory and staleness per pipeline position, from the lists alone (no timing).
std::vector<StageSummary> AnalyzeSchedule(const PipelineSchedule& schedule);

}  // namespace pipetwin
