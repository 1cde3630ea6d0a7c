// What a worker holds as its op list runs: memory by category, live weight versions, stashed
// micro-batches, and the staleness of each update. Driven op by op (the Stash/Release and Update
// ops of the schedule are the events), so the simulator's figures follow from the same lists as
// AnalyzeSchedule's, with the bytes of planner_common.h's WorkerMemory:
//   weights      (1 + stashed versions) x |W|      optimizer   |W| x bytes per parameter
//   gradients    |W| x gradient dtype bytes         activations per stashed micro-batch: the stage
//   recompute    one micro-batch's full stash from     input, plus every layer's stash unless
//                its Recompute to its release          recomputed
//
//   MemoryTracker state(setup, /*worker=*/3, /*timeline=*/true);
//   for (const Op& op : ops) state.Apply(op, now);
//   state.peak();  state.delays();
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "partition/report/report.h"
#include "partition/schedule/op.h"
#include "sim/setup.h"

namespace pipetwin::sim {

class MemoryTracker {
 public:
  MemoryTracker(const SimulationSetup& setup, int worker, bool keep_timeline);

  // Applies one op's effect at time `now_s` (ops without an effect on state are ignored).
  void Apply(const Op& op, double now_s);

  const MemoryCategories& current() const { return current_; }
  double peak_bytes() const { return peak_bytes_; }
  double peak_time_s() const { return peak_time_s_; }
  const MemoryCategories& at_peak() const { return at_peak_; }
  const MemoryCategories& category_peaks() const { return category_peaks_; }
  const std::vector<MemorySample>& timeline() const { return timeline_; }
  // Version delay of the gradients each update applied (AnalyzeSchedule's definition).
  const std::vector<int>& delays() const { return delays_; }
  int max_weight_versions() const { return max_versions_; }
  int max_in_flight_activations() const { return max_in_flight_; }
  int updates() const { return updates_; }

 private:
  void Record(double now_s);

  const SimulationSetup& setup_;
  double weight_bytes_ = 0;  // one version of everything the worker holds
  bool keep_timeline_;
  MemoryCategories current_, at_peak_, category_peaks_;
  double peak_bytes_ = 0, peak_time_s_ = 0;
  std::vector<MemorySample> timeline_;
  // Bytes each stashed (stage, micro-batch) holds in activations and in recompute buffers.
  std::map<std::pair<int, int>, double> stashed_, rebuilt_;
  int versions_ = 1, current_version_ = 0, oldest_gradient_ = -1;
  int max_versions_ = 1, max_in_flight_ = 0, updates_ = 0;
  std::vector<int> delays_;
};

}  // namespace pipetwin::sim
