// How a run becomes a Report, the same for the simulator (sim/report_builder.cc) and the
// executor (exec/measure/measurement.cc): the header, the steady-state window, memory peaks per
// device, and the figures derived from per-worker busy time (staleness per stage:
// schedule/replay.h's SummarizeStaleness).
//
//   Report r = StartReport(header);
//   ... r.workers (busy_s, exposed_communication_s), r.devices, r.stages, r.makespan_s ...
//   const SteadyState steady = SteadyStateWindow(iteration_ends, /*warmup=*/1, asynchronous);
//   FinishReport(steady, r);   // idle, bubbles, peaks, samples/s
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "partition/report/report.h"

namespace pipetwin {

// What was run, for the report's header.
struct RunHeader {
  std::string source;         // "simulator" or "executor"
  std::string scenario;
  ScheduleKind schedule = ScheduleKind::kFlush;
  std::string recompute;      // "" without recomputation, else RecomputeTimingName
  std::string p2p = "eager";  // SendModeName
  std::string data_loading;   // "" without a data-loading time, else DataLoadingName
  double load_s = 0;          // loading one micro-batch on an input-stage worker
  std::string planner;
  std::string network_model;
  int pipeline_depth = 0;     // pipeline positions
  int worker_count = 0;
  int microbatch_size = 0;
  int microbatches_per_iteration = 0;  // over all replicas of the input stage
  int iterations = 0;
};

Report StartReport(const RunHeader& header);

// How iteration_s is measured from when each iteration ended (iteration_ends[i]: the end of
// iteration i's last op on any worker, weight updates included; non-decreasing): over the
// iterations after `warmup` (the first fills the pipeline), leaving out an asynchronous
// schedule's last iteration when at least two remain (PipeDream and 2BW never flush, so their
// last iteration drains faster than the steady state runs). With no iteration past the warm-up,
// the whole run.
struct SteadyState {
  double iteration_s = 0;
  std::string measurement;  // "steady state over iterations 2..4 (1 warm-up)"
  // The iterations counted, 0-based and inclusive (none when last_iteration < first_iteration).
  int first_iteration = 0, last_iteration = -1;
  int Iterations() const { return std::max(0, last_iteration + 1 - first_iteration); }
};
SteadyState SteadyStateWindow(const std::vector<double>& iteration_ends, int warmup,
                              bool asynchronous);

// A device's memory peaks as its samples come in, in time order.
class MemoryPeaks {
 public:
  void Add(double time_s, const MemoryCategories& bytes);
  // The device's entry of the Report (its timeline as given).
  DeviceReport Report(int device, int worker, double capacity_bytes,
                      std::vector<MemorySample> timeline) const;

 private:
  bool empty_ = true;
  double peak_bytes_ = 0, peak_time_s_ = 0;
  MemoryCategories at_peak_, category_peaks_;
};

// With makespan_s, the workers' busy_s and exposed_communication_s and the devices filled: each
// worker's idle time and bubble fraction, the run's bubble fraction, largest exposed
// communication, fullest device and over-capacity flag, and iteration_s, samples_per_s and
// measurement from `steady`.
void FinishReport(const SteadyState& steady, Report& report);

}  // namespace pipetwin
