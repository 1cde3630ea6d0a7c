#include "partition/report/summarize.h"

#include <algorithm>

namespace pipetwin {

Report StartReport(const RunHeader& h) {
  Report r;
  r.source = h.source;
  r.scenario = h.scenario;
  r.schedule = ScheduleKindName(h.schedule);
  r.recompute = h.recompute;
  r.p2p = h.p2p;
  r.data_loading = h.data_loading;
  r.load_s_per_microbatch = h.load_s;
  r.planner = h.planner;
  r.network_model = h.network_model;
  r.pipeline_depth = h.pipeline_depth;
  r.worker_count = h.worker_count;
  r.microbatch_size = h.microbatch_size;
  r.microbatches_per_iteration = h.microbatches_per_iteration;
  r.iterations = h.iterations;
  r.samples_per_iteration = static_cast<double>(h.microbatches_per_iteration) * h.microbatch_size;
  return r;
}

SteadyState SteadyStateWindow(const std::vector<double>& ends, int warmup, bool asynchronous) {
  const int n = static_cast<int>(ends.size());
  SteadyState s;
  if (n == 0) return s;
  warmup = std::max(0, std::min(warmup, n - 1));
  // The drain of an asynchronous schedule, when at least two iterations follow the warm-up.
  const int last = asynchronous && n - warmup >= 2 ? n - 2 : n - 1;
  const int counted = last + 1 - warmup;
  s.first_iteration = warmup;
  s.last_iteration = last;
  s.iteration_s = (ends[last] - (warmup > 0 ? ends[warmup - 1] : 0)) / counted;
  if (warmup == 0) {
    s.measurement = "whole run, " + std::to_string(counted) + " iteration" +
                    (counted > 1 ? "s" : "");
  } else {
    const std::string first = std::to_string(warmup + 1);
    s.measurement = "steady state over " +
                    (counted == 1 ? "iteration " + first
                                  : "iterations " + first + ".." + std::to_string(last + 1)) +
                    " (" + std::to_string(warmup) + " warm-up)";
  }
  if (last + 1 < n) s.measurement += ", the last (drain) left out";
  return s;
}

void MemoryPeaks::Add(double time_s, const MemoryCategories& bytes) {
  const double total = bytes.Total();
  if (empty_ || total > peak_bytes_) {
    peak_bytes_ = total;
    peak_time_s_ = time_s;
    at_peak_ = bytes;
  }
  for (int i = 0; i < kMemoryCategoryCount; ++i)
    category_peaks_.Of(i) = std::max(category_peaks_.Of(i), bytes.Of(i));
  empty_ = false;
}

DeviceReport MemoryPeaks::Report(int device, int worker, double capacity_bytes,
                                 std::vector<MemorySample> timeline) const {
  DeviceReport d;
  d.device = device;
  d.worker = worker;
  d.capacity_bytes = capacity_bytes;
  d.peak_memory_bytes = peak_bytes_;
  d.peak_time_s = peak_time_s_;
  d.at_peak = at_peak_;
  d.category_peaks = category_peaks_;
  d.over_capacity = capacity_bytes > 0 && peak_bytes_ > capacity_bytes;
  d.timeline = std::move(timeline);
  return d;
}

void FinishReport(const SteadyState& steady, Report& r) {
  double idle = 0;
  r.exposed_communication_s = 0;
  for (WorkerReport& w : r.workers) {
    w.idle_s = std::max(0.0, r.makespan_s - w.busy_s);
    w.bubble_fraction = r.makespan_s > 0 ? w.idle_s / r.makespan_s : 0;
    idle += w.idle_s;
    r.exposed_communication_s = std::max(r.exposed_communication_s, w.exposed_communication_s);
  }
  const double capacity = r.makespan_s * static_cast<double>(r.workers.size());
  r.bubble_fraction = capacity > 0 ? idle / capacity : 0;
  for (const DeviceReport& d : r.devices) {
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, d.peak_memory_bytes);
    r.over_capacity = r.over_capacity || d.over_capacity;
  }
  r.iteration_s = steady.iteration_s;
  r.measurement = steady.measurement;
  // Each worker's compute by op kind over the iterations counted, per iteration: what its ops
  // cost once the first iteration's start-up (a run's first touches of its memory) is past.
  const int counted = steady.Iterations();
  for (WorkerReport& w : r.workers) {
    w.steady_busy_by_op_s.clear();
    if (counted == 0 || w.busy_by_iteration.empty()) continue;
    for (int k = steady.first_iteration; k <= steady.last_iteration; ++k) {
      if (k >= static_cast<int>(w.busy_by_iteration.size())) break;
      for (const auto& [kind, seconds] : w.busy_by_iteration[k])
        w.steady_busy_by_op_s[kind] += seconds / counted;
    }
  }
  r.samples_per_s = r.iteration_s > 0 ? r.samples_per_iteration / r.iteration_s : 0;
}

}  // namespace pipetwin
