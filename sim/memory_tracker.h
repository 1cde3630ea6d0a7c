// What a worker holds in memory as its op list runs, by category. Driven op by op (the Stash and
// Release ops of the schedule are the events), with the bytes of cost/memory.h's WorkerMemory;
// the stages' weight versions, in-flight activations and staleness follow from the lists alone
// (AnalyzeSchedule):
//   weights      (1 + stashed versions) x |W|      optimizer   |W| x bytes per parameter
//   gradients    |W| x gradient dtype bytes         activations per stashed micro-batch: the stage
//   recompute    what recomputing one micro-batch      input, plus every layer's stash; under
//                rebuilds at most, from its Recompute  recomputation what it keeps (cost/memory.h,
//                to its release                        StageRecomputeFootprint)
//
//   MemoryTracker state(setup, /*worker=*/3, /*timeline=*/true);
//   for (const Op& op : ops) state.Apply(op, now);
//   state.peaks().Report(device, worker, capacity, state.timeline());
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "partition/report/report.h"
#include "partition/report/summarize.h"
#include "partition/schedule/op.h"
#include "sim/setup.h"

namespace pipetwin::sim {

class MemoryTracker {
 public:
  MemoryTracker(const SimulationSetup& setup, int worker, bool keep_timeline);

  // Applies one op's effect at time `now_s` (ops without an effect on state are ignored).
  void Apply(const Op& op, double now_s);

  const MemoryCategories& current() const { return current_; }
  const MemoryPeaks& peaks() const { return peaks_; }
  const std::vector<MemorySample>& timeline() const { return timeline_; }

 private:
  void Record(double now_s);

  const SimulationSetup& setup_;
  double weight_bytes_ = 0;  // one version of everything the worker holds
  bool keep_timeline_;
  MemoryCategories current_;
  MemoryPeaks peaks_;
  std::vector<MemorySample> timeline_;
  // Bytes each stashed (stage, micro-batch) holds in activations and in recompute buffers.
  std::map<std::pair<int, int>, double> stashed_, rebuilt_;
  int versions_ = 1;
};

}  // namespace pipetwin::sim
