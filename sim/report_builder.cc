#include "sim/report_builder.h"

#include "partition/util/format.h"
#include "partition/schedule/replay.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "partition/report/summarize.h"

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
         "), needs " + BinaryBytes(fullest->peak_memory_bytes) + ", " +
         Fixed(fullest->peak_memory_bytes / fullest->capacity_bytes) + "x its " +
         BinaryBytes(fullest->capacity_bytes);
}

// Servers whose workers outnumber their shared cores. The simulator serves them the cores first
// come, first served and charges each message the calibrated oversubscribed_message_us, as the
// executor's workers run there under SCHED_RR; under the OS's default policy a core also stands
// idle while a woken worker waits on the other, which it does not model: the warning says so.
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
          " shared cores: modelled as the executor runs them there, under SCHED_RR (the cores "
          "taken first come, first served); under the OS's default policy (pipetwin run "
          "--default-scheduler, or SCHED_RR refused) the cores also stand idle while a worker "
          "waits in another core's queue, which this model leaves out: expect such a run to be "
          "slower than predicted");
  return warnings;
}

}  // namespace

Report BuildReport(const SimulationSetup& setup, const SimulationRecord& record) {
  const PipelineSchedule& s = setup.schedule;
  RunHeader header;
  header.source = "simulator";
  header.scenario = setup.scenario_name;
  header.schedule = s.kind;
  if (s.recompute) header.recompute = RecomputeTimingName(s.recompute_timing);
  header.p2p = SendModeName(s.send_mode);
  if (setup.load_s > 0) header.data_loading = DataLoadingName(setup.data_loading);
  header.load_s = setup.load_s;
  header.planner = setup.planner;
  header.network_model = setup.cluster.network_model;
  header.pipeline_depth = PlanStagesWithWorkers(s.kind, s.stages);  // dualpipe: its PP ranks
  header.worker_count = s.WorkerCount();
  header.microbatch_size = setup.microbatch_size;
  header.microbatches_per_iteration = setup.microbatches_per_iteration;
  header.iterations = setup.iterations;
  Report r = StartReport(header);
  r.makespan_s = record.makespan_s;
  for (const WorkerProgram& p : s.workers) {
    const WorkerRecord& rec = record.workers[p.worker];
    WorkerReport w;
    w.worker = p.worker;
    w.device = setup.worker_device[p.worker];
    w.stage = p.stage;
    w.replica = p.replica;
    w.busy_s = rec.busy_s;
    for (const auto& [kind, seconds] : rec.busy_by_op_s) w.busy_by_op_s[OpKindName(kind)] = seconds;
    for (const std::map<OpKind, double>& by_kind : rec.busy_by_iteration) {
      w.busy_by_iteration.emplace_back();
      for (const auto& [kind, seconds] : by_kind)
        w.busy_by_iteration.back()[OpKindName(kind)] = seconds;
    }
    w.exposed_communication_s = rec.exposed_communication_s;
    w.kept_core_share = rec.kept_core_share;
    r.workers.push_back(w);
    const MemoryTracker& memory = record.states[p.worker];
    r.devices.push_back(memory.peaks().Report(w.device, p.worker,
                                              setup.cluster.device.memory_bytes,
                                              memory.timeline()));
  }
  std::sort(r.devices.begin(), r.devices.end(),
            [](const DeviceReport& a, const DeviceReport& b) { return a.device < b.device; });
  // The weight versions, activations in flight and staleness follow from the lists alone.
  r.stages = AnalyzeSchedule(s);
  const std::vector<double> ends = IterationEnds(setup, record);
  FinishReport(SteadyStateWindow(ends, setup.options.warmup_iterations, IsAsynchronous(s.kind)),
               r);
  if (setup.model_flops_per_sample > 0 && r.samples_per_s > 0) {
    const double gpus = static_cast<double>(r.worker_count) * setup.gpus_per_worker;
    r.tflops_per_gpu = setup.model_flops_per_sample * r.samples_per_s / gpus / 1e12;
    r.mfu = r.tflops_per_gpu * 1e12 / setup.cluster.device.peak_flops;
  }
  if (r.over_capacity) r.warnings.push_back(CapacityWarning(r));
  r.communication = record.communication;
  r.warnings.insert(r.warnings.end(), setup.warnings.begin(), setup.warnings.end());
  for (std::string& w : OversubscriptionWarnings(setup, s)) r.warnings.push_back(std::move(w));
  r.details = {{"activities", record.activities},
               {"platform_wall_s", record.platform_wall_s},
               {"run_wall_s", record.run_wall_s},
               {"activities_per_s",
                record.run_wall_s > 0 ? record.activities / record.run_wall_s : 0.0},
               {"allreduce_buckets", setup.allreduce_buckets},
               // Replicas per stage simulated; the others' figures are theirs (sim/symmetry.h).
               {"simulated_replicas", record.simulated_replicas},
               {"collectives", setup.options.collectives == CollectiveModel::kPhases
                                   ? "phases" : "steps"},
               {"iteration_ends_s", ends},
               {"compute", "layer times x micro-batch / reference batch / relative speed"}};
  return r;
}

}  // namespace pipetwin::sim
