#include "sim/report_builder.h"
#include "partition/schedule/replay.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace pipetwin::sim {

std::vector<double> IterationEnds(const SimulationSetup& setup, const SimulationRecord& record) {
  std::vector<double> ends(std::max(setup.iterations, 1), 0);
  for (const WorkerProgram& p : setup.schedule.workers) {
    const WorkerRecord& r = record.workers[p.worker];
    int iteration = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].microbatch >= 0) iteration = setup.IterationOf(p.ops[i].microbatch);
      if (iteration >= static_cast<int>(ends.size())) ends.resize(iteration + 1, 0);
      ends[iteration] = std::max(ends[iteration], r.op_end_s[i]);
    }
  }
  return ends;
}

namespace {

std::vector<StageSummary> Stages(const SimulationSetup& setup, const SimulationRecord& record) {
  const PipelineSchedule& s = setup.schedule;
  std::vector<StageSummary> out(s.stages);
  std::vector<std::vector<int>> delays(s.stages);
  for (int i = 0; i < s.stages; ++i) out[i].stage = i;
  for (const WorkerProgram& p : s.workers) {
    const MemoryTracker& state = record.states[p.worker];
    StageSummary& stage = out[p.stage];
    stage.max_weight_versions = std::max(stage.max_weight_versions, state.max_weight_versions());
    stage.max_in_flight_activations =
        std::max(stage.max_in_flight_activations, state.max_in_flight_activations());
    stage.updates = std::max(stage.updates, state.updates());
    delays[p.stage].insert(delays[p.stage].end(), state.delays().begin(), state.delays().end());
  }
  for (int i = 0; i < s.stages; ++i) {
    if (delays[i].empty()) continue;
    double sum = 0;
    for (int d : delays[i]) sum += d;
    out[i].staleness_min = *std::min_element(delays[i].begin(), delays[i].end());
    out[i].staleness_max = *std::max_element(delays[i].begin(), delays[i].end());
    out[i].staleness_mean = sum / delays[i].size();
  }
  return out;
}

std::string Fixed(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", x);
  return buffer;
}

// "3 of 16 devices exceed their memory; the fullest, device 5 (worker 5, stage 1), needs ..."
std::string CapacityWarning(const Report& r) {
  const DeviceReport* fullest = nullptr;
  int over = 0;
  for (const DeviceReport& d : r.devices) {
    over += d.over_capacity;
    if (!fullest || d.peak_memory_bytes / d.capacity_bytes >
                        fullest->peak_memory_bytes / fullest->capacity_bytes)
      fullest = &d;
  }
  const WorkerReport& w = r.workers[fullest->worker];
  return std::to_string(over) + " of " + std::to_string(r.devices.size()) +
         " devices exceed their memory; the fullest, device " + std::to_string(fullest->device) +
         " (worker " + std::to_string(w.worker) + ", stage " + std::to_string(w.stage) +
         "), needs " + Fixed(fullest->peak_memory_bytes / 1e9) + " GB, " +
         Fixed(fullest->peak_memory_bytes / fullest->capacity_bytes) + "x its " +
         Fixed(fullest->capacity_bytes / 1e9) + " GB";
}

// Servers whose workers outnumber their shared cores. The simulator serves them the cores first
// come, first served and charges each message the calibrated oversubscribed_message_us, as the
// executor's workers run there under SCHED_RR; under the OS's default policy a core also stands
// idle while a woken worker waits on the other, which it does not model (README, "The
// validation matrix": such rows read -4% to +15% there).
std::vector<std::string> OversubscriptionWarnings(const SimulationSetup& setup,
                                                  const PipelineSchedule& s) {
  const Cluster& cluster = setup.cluster;
  std::vector<std::string> warnings;
  const int per_server = cluster.levels.empty() ? 0 : cluster.DevicesPerUnit(0);
  if (cluster.shared_cores <= 0 || per_server <= 0) return warnings;
  std::vector<int> workers(cluster.DeviceCount() / per_server, 0);  // by server
  for (const WorkerProgram& p : s.workers) {
    const size_t server = static_cast<size_t>(setup.worker_device[p.worker] / per_server);
    if (server < workers.size()) ++workers[server];
  }
  for (size_t k = 0; k < workers.size(); ++k)
    if (workers[k] > cluster.shared_cores)
      warnings.push_back(
          "server " + std::to_string(k) + " runs " + std::to_string(workers[k]) +
          " workers on " + std::to_string(cluster.shared_cores) +
          " shared cores: modelled as the executor runs them there, under SCHED_RR (each op on "
          "a core, first come, first served); under the OS's default policy (pipetwin run "
          "--default-scheduler, or SCHED_RR refused) the cores also stand idle while a worker "
          "waits in another core's queue, which this model leaves out (such runs read -4% to "
          "+15% in the README's validation matrix)");
  return warnings;
}

}  // namespace

Report BuildReport(const SimulationSetup& setup, const SimulationRecord& record) {
  const PipelineSchedule& s = setup.schedule;
  Report r;
  r.source = "simulator";
  r.scenario = setup.scenario_name;
  r.schedule = ScheduleKindName(s.kind);
  r.planner = setup.planner;
  r.network_model = setup.cluster.network_model;
  r.pipeline_depth = s.stages;
  r.worker_count = s.WorkerCount();
  r.microbatch_size = setup.microbatch_size;
  r.microbatches_per_iteration = setup.microbatches_per_iteration;
  r.iterations = setup.iterations;
  r.samples_per_iteration =
      static_cast<double>(setup.microbatches_per_iteration) * setup.microbatch_size;
  r.makespan_s = record.makespan_s;

  const std::vector<double> ends = IterationEnds(setup, record);
  const int n = static_cast<int>(ends.size());
  // Steady state: the first iteration fills the pipeline; an asynchronous schedule's last one
  // drains it (nothing follows its backwards), so it is left out too when there are 3 or more.
  const bool asynchronous =
      s.kind == ScheduleKind::kPipeDream || s.kind == ScheduleKind::kTwoBW;
  const int last = asynchronous && n >= 3 ? n - 2 : n - 1;
  if (last >= 1) {
    r.iteration_s = (ends[last] - ends[0]) / last;
    r.measurement = "steady state: (end of iteration " + std::to_string(last + 1) +
                    " - end of iteration 1) / " + std::to_string(last);
  } else {
    r.iteration_s = ends[0];
    r.measurement = "one iteration, pipeline fill and drain included";
  }
  r.samples_per_s = r.iteration_s > 0 ? r.samples_per_iteration / r.iteration_s : 0;

  double idle = 0;
  for (const WorkerProgram& p : s.workers) {
    const WorkerRecord& rec = record.workers[p.worker];
    WorkerReport w;
    w.worker = p.worker;
    w.device = setup.worker_device[p.worker];
    w.stage = p.stage;
    w.replica = p.replica;
    w.busy_s = rec.busy_s;
    w.idle_s = std::max(0.0, record.makespan_s - rec.busy_s);
    w.bubble_fraction = record.makespan_s > 0 ? w.idle_s / record.makespan_s : 0;
    w.exposed_communication_s = rec.exposed_communication_s;
    idle += w.idle_s;
    r.exposed_communication_s = std::max(r.exposed_communication_s, w.exposed_communication_s);
    r.workers.push_back(w);

    const MemoryTracker& state = record.states[p.worker];
    DeviceReport d;
    d.device = w.device;
    d.worker = p.worker;
    d.capacity_bytes = setup.cluster.device.memory_bytes;
    d.peak_memory_bytes = state.peak_bytes();
    d.peak_time_s = state.peak_time_s();
    d.at_peak = state.at_peak();
    d.category_peaks = state.category_peaks();
    d.over_capacity = d.peak_memory_bytes > d.capacity_bytes;
    d.timeline = state.timeline();
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, d.peak_memory_bytes);
    r.over_capacity = r.over_capacity || d.over_capacity;
    r.devices.push_back(d);
  }
  std::sort(r.devices.begin(), r.devices.end(),
            [](const DeviceReport& a, const DeviceReport& b) { return a.device < b.device; });
  if (r.over_capacity) r.warnings.push_back(CapacityWarning(r));
  const double capacity = record.makespan_s * s.WorkerCount();
  r.bubble_fraction = capacity > 0 ? idle / capacity : 0;
  r.stages = Stages(setup, record);
  r.communication = record.communication;
  r.warnings.insert(r.warnings.end(), setup.warnings.begin(), setup.warnings.end());
  for (std::string& w : OversubscriptionWarnings(setup, s)) r.warnings.push_back(std::move(w));
  r.details = {{"activities", record.activities},
               {"platform_wall_s", record.platform_wall_s},
               {"run_wall_s", record.run_wall_s},
               {"activities_per_s",
                record.run_wall_s > 0 ? record.activities / record.run_wall_s : 0.0},
               {"allreduce_buckets", setup.allreduce_buckets},
               {"iteration_ends_s", ends},
               {"compute", "layer times x micro-batch / reference batch / relative speed"}};
  return r;
}

ReplayResult AsReplay(const SimulationSetup& setup, const SimulationRecord& record) {
  ReplayResult replay;
  replay.completed = true;
  replay.makespan = record.makespan_s * 1e3;
  double idle = 0, busy = 0;
  for (const WorkerProgram& p : setup.schedule.workers) {
    const WorkerRecord& rec = record.workers[p.worker];
    WorkerTiming t;
    t.worker = p.worker;
    t.busy = rec.busy_s * 1e3;
    t.idle = replay.makespan - t.busy;
    t.finish = rec.finish_s * 1e3;
    for (double x : rec.op_start_s) t.op_start.push_back(x * 1e3);
    for (double x : rec.op_end_s) t.op_end.push_back(x * 1e3);
    idle += t.idle;
    busy += t.busy;
    replay.workers.push_back(std::move(t));
  }
  const double capacity = replay.makespan * setup.schedule.WorkerCount();
  replay.bubble_fraction = capacity > 0 ? idle / capacity : 0;
  replay.bubble_over_compute = busy > 0 ? idle / busy : 0;
  return replay;
}

}  // namespace pipetwin::sim
