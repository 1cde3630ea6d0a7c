// Report: what one run of a plan produced, in one schema for both back ends. The simulator
// (sim/, predicted) and the executor (exec/, measured) write it; `compare` diffs two of them.
//
// A Report answers the three questions a user asks of a plan:
//   - how fast: samples_per_s and iteration_s (steady state, see `measurement`), and per worker
//     the busy, idle and bubble time and the communication not hidden by computation;
//   - how much memory: per device the peak and a timeline by category (weights x live versions,
//     optimizer state, gradients, stashed activations, recompute buffers) against the capacity;
//   - how stale: per stage the version delay of the gradients each weight update applies.
// Communication volume is split by topology level (0: inside a server, 1: between servers, ...).
//
//   Report r = ...;                        // from the simulator or the executor
//   std::cout << ReportToJson(r).dump(1);  // --json
//   std::cout << ReportCsvHeader({"schedule"}) << ReportCsvRow(r, {"flush"});  // report/csv.h
//   std::cout << ReportToText(r);                                               // report/text.h
//   Report back = ReportFromJson(ParseJsonFile("r.json"), "r.json");
//
// Units: seconds and bytes throughout (names say so); times count from the start of the run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/cost/memory.h"
#include "partition/schedule/replay.h"

namespace pipetwin {

// The memory of a device from time_s on (until the next sample).
struct MemorySample {
  double time_s = 0;
  MemoryCategories bytes;
};

struct WorkerReport {
  int worker = 0;
  int device = 0;
  int stage = 0;    // pipeline position
  int replica = 0;  // index among the stage's replicas
  double busy_s = 0;  // computing (forward, backward, recompute, with launch overheads)
  double idle_s = 0;  // makespan - busy_s
  double bubble_fraction = 0;  // idle_s / makespan
  // Time the worker waited on bytes in flight (a receive whose sender had already sent, a
  // weight version whose all-reduce had not finished) plus host-side communication overhead:
  // communication that computation did not hide. Waiting for an upstream stage to finish its
  // compute is bubble, not communication.
  double exposed_communication_s = 0;
  // busy_s by op kind (OpKindName: "forward", "backward", "recompute", "update", ...), so that
  // a comparison can say which kind of op a prediction got wrong; empty in reports written
  // before it existed.
  std::map<std::string, double> busy_by_op_s;
  // busy_by_op_s per iteration, averaged over the iterations iteration_s counts (FinishReport,
  // SteadyState): a first iteration slowed by start-up left out as the throughput leaves it
  // out. Empty where a back end gave no busy_by_iteration, and in reports written before it.
  std::map<std::string, double> steady_busy_by_op_s;
  // The back ends' input to it, not written: busy time by iteration (a compute op's iteration
  // is its micro-batch's, an optimizer step's that of the last backward before it), then op kind.
  std::vector<std::map<std::string, double>> busy_by_iteration;
  // Of busy_s, the share in ops on the core the worker itself computed on last (kept_core.h);
  // -1 where no core is known (cores not shared, a GPU, reports written before it existed).
  double kept_core_share = -1;
};

// What the CUDA caching allocator reported for a GPU worker (the executor on GPUs; never the
// simulator): bytes in live tensors and held from the driver, at the end and at their peaks.
struct AllocatorView {
  double allocated_bytes = 0, allocated_peak_bytes = 0;
  double reserved_bytes = 0, reserved_peak_bytes = 0;
};

struct DeviceReport {
  int device = 0;
  int worker = -1;  // the worker it hosts, -1 when idle
  double capacity_bytes = 0;
  double peak_memory_bytes = 0;
  double peak_time_s = 0;
  MemoryCategories at_peak;            // the breakdown at the instant of the peak
  MemoryCategories category_peaks;     // each category's own maximum
  bool over_capacity = false;          // peak_memory_bytes > capacity_bytes
  std::vector<MemorySample> timeline;  // one sample per change, in time order
  std::optional<AllocatorView> cuda_allocator;  // measured on a GPU
};

struct CommunicationLevel {
  int level = 0;           // 0: inside a server, 1: between servers, ...
  std::string name;        // the cluster level's name ("server", "cluster")
  std::string link;        // "nvlink", "pcie", "ethernet", ...
  double pipeline_bytes = 0;   // activations and gradients between stages
  double allreduce_bytes = 0;  // gradient all-reduce traffic (every ring step's payload)
  // A tensor-parallel group's collectives, the bytes its represented rank sends (the simulator
  // runs one rank of each group: cluster.h, TensorParallelView).
  double tensor_parallel_bytes = 0;
  long long messages = 0;
  double Bytes() const { return pipeline_bytes + allreduce_bytes + tensor_parallel_bytes; }
};

struct Report {
  std::string source = "simulator";  // "simulator" or "executor"
  std::string scenario;              // scenario name
  std::string schedule;              // a schedule kind's name (schedule/kind.h)
  // Activation recomputation: "" (none), "in_backward" (after the gradient arrives, the
  // frameworks' way) or "early" (before it arrives): op.h's RecomputeTiming.
  std::string recompute;
  std::string p2p = "eager";  // SendModeName: how the pipeline's sends completed
  // Data loading (cost/data_loading.h): "" when the workload has no loading time, else
  // "overlapped" or "serial"; and the time to load one micro-batch on an input-stage worker.
  std::string data_loading;
  double load_s_per_microbatch = 0;
  std::string planner;
  std::string network_model;         // the cluster's: "datacenter" or "tcp"
  int pipeline_depth = 0;            // pipeline positions (dualpipe: its PP ranks)
  int worker_count = 0;
  int microbatch_size = 0;           // samples per micro-batch
  int microbatches_per_iteration = 0;  // over all replicas of the input stage
  int iterations = 0;                // iterations run
  double samples_per_iteration = 0;

  double samples_per_s = 0;
  double iteration_s = 0;
  // Where the workload states its model FLOPs (Workload::model_flops_per_sample): what each
  // GPU achieves of them, and that over the device's peak (model FLOPs utilisation, MFU, as
  // Megatron-LM's tables give it); 0 otherwise.
  double tflops_per_gpu = 0;
  double mfu = 0;
  std::string measurement;  // how iteration_s was measured ("steady state over iterations 2..4")
  double makespan_s = 0;
  double bubble_fraction = 0;          // sum idle / (workers x makespan)
  double exposed_communication_s = 0;  // the largest worker's
  double peak_memory_bytes = 0;        // the fullest device's
  bool over_capacity = false;          // any device over its capacity

  std::vector<WorkerReport> workers;
  std::vector<DeviceReport> devices;  // devices that host a worker
  std::vector<StageSummary> stages;
  std::vector<CommunicationLevel> communication;
  std::vector<std::string> warnings;
  // Back-end specific facts (the simulator's activity count and speed, the executor's host).
  nlohmann::json details = nlohmann::json::object();
};

// JSON; `timelines` false leaves the per-device memory timelines out (sweeps, big clusters).
nlohmann::json ReportToJson(const Report& report, bool timelines = true);
// Throws InputError naming `file` and the JSON path.
Report ReportFromJson(const nlohmann::json& doc, const std::string& file);



}  // namespace pipetwin
