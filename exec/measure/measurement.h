// What a worker measures while it runs its op list, and how rank 0 merges the workers'
// measurements into the run's Report (partition/report.h, the schema the simulator writes) and
// into a Timeline (partition/timeline.h), whose Chrome trace has the simulator's layout.
//
//   WorkerMeasurement m;  ...                       // filled by the worker as it runs
//   comm.Publish("result/3", MeasurementToJson(m).dump());
//   Report r = MergeMeasurements(job, all);          // on rank 0
//   nlohmann::json trace = ChromeTrace(job, all);    // --trace
//
// Free of LibTorch: workers hand their measurement to rank 0 as JSON through the store.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/job.h"
#include "partition/report/report.h"
#include "partition/schedule/op.h"
#include "partition/timeline/timeline.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/util/machine.h"

namespace pipetwin::exec {

// One executed op; times in seconds from the start barrier.
struct OpRecord {
  OpKind kind = OpKind::kForward;
  int stage = 0;
  int microbatch = -1;      // index in the whole run (-1: none)
  int weight_version = -1;  // compute ops: the version actually used; Update: the one created
  int peer = -1;            // Send/Recv: the other rank
  double bytes = 0;         // Send/Recv/AllReduce: payload
  int iteration = 0;
  double start_s = 0, end_s = 0;
  // Compute ops and updates on CPUs: the CPU the op started on (sched_getcpu), for the share of
  // its compute a worker ran on the core it ran on last (kept_core.h); else -1.
  int cpu = -1;
  // Compute ops and updates on CPUs: the computing thread's CPU time over the op
  // (CLOCK_THREAD_CPUTIME_ID); end_s - start_s beyond it is time the thread did not run, as when
  // another worker's thread took its core in the middle of the op. Else -1.
  double cpu_s = -1;
};

// The weight versions one micro-batch used on this worker.
struct VersionUse {
  int microbatch = 0;
  int forward = -1;
  int backward = -1;
};

struct WorkerMeasurement {
  int rank = 0, stage = 0, replica = 0;
  std::string host;
  std::string device = "cpu";  // ExecDevice::Describe(): "cpu", "cuda:0 (NVIDIA H200, ...)"
  std::string transport = "gloo";  // Communicator::transport()
  int threads = 1;
  // How the OS schedules its threads: "SCHED_OTHER", or "SCHED_RR" where it shares its cores
  // with more workers than cores (cpu_policy.h), or why that was refused.
  std::string cpu_policy = "SCHED_OTHER";
  std::vector<OpRecord> ops;
  double end_s = 0;  // when the worker finished its last op
  // Tensor bytes by category after each change (weights x versions, optimizer state, gradient
  // buffers, stashed activations).
  std::vector<MemorySample> memory_timeline;
  int max_weight_versions = 1;
  int max_in_flight_microbatches = 0;
  // Every live tensor of the worker's device at its peak, and what its caching allocator holds
  // (the CPU's: cpu_allocator.h; a GPU's: the CUDA caching allocator's peak reserved bytes).
  double allocator_peak_bytes = 0;
  double allocator_reserved_bytes = 0;
  std::optional<AllocatorView> cuda_allocator;  // a GPU worker's CUDA caching allocator
  double peak_rss_bytes = 0;        // the process's peak resident set
  double capacity_bytes = 0;        // this worker's share of the machine's memory
  std::vector<VersionUse> versions;
  std::vector<double> update_staleness;  // per update that applied gradients
  std::vector<std::pair<int, double>> losses;  // last stage: (micro-batch, loss)
  double test_accuracy = -1;        // last stage with --evaluate
  long long test_samples = 0;
  // Where this worker's times count from (its exit from the start barrier) on its machine's
  // monotonic clock (CLOCK_MONOTONIC, seconds since boot), and that machine's boot id
  // (/proc/sys/kernel/random/boot_id; empty if unknown): workers with one boot id read one clock.
  std::string boot_id;
  double clock_origin_s = 0;
  // The CPUs the worker was started on (its affinity before it pinned its threads), and the CPU
  // time its process used from the start barrier to the end barrier: what rank 0 subtracts from
  // its host's busy time to find other processes' load (partition/util/machine.h).
  std::vector<int> cpus;
  double cpu_time_s = 0;
  // The kernel's account of the worker's threads over its ops, from the start barrier to its
  // last op's end (ReadThreadAccount): how long its computing thread waited, runnable, for a
  // CPU and how often it was preempted, and how long its other threads (c10d Gloo's) ran.
  ThreadAccount thread_account;
  // Rank 0 only: its host's CPU times at the start and the end barrier, the seconds between
  // them, the 1-minute load average when it started, and the launcher's sample before the run
  // (absent under torchrun or Slurm).
  std::optional<CpuTimes> host_cpu_start, host_cpu_end;
  double host_window_s = 0;
  double load_average_1m = -1;
  std::optional<LoadShare> load_before;
  // Rank 0 of a run on CPUs only: one core's GEMM rate right before the start barrier and right
  // after the end barrier, the other workers waiting (exec/measure/machine_speed.h); 0: not read.
  double gflops_before = 0, gflops_after = 0;
};

nlohmann::json MeasurementToJson(const WorkerMeasurement& m);
WorkerMeasurement MeasurementFromJson(const nlohmann::json& j);

// Puts every worker on rank 0's machine (workers[0]'s boot id) on one time axis, starting at the
// earliest of their origins: their ops, end and memory samples move by their origin's distance
// from it. Each worker times its ops from its own exit from the start barrier, and workers leave
// a barrier milliseconds apart when there are more of them than cores: unaligned, a trace showed
// receives ending before their sends began. Workers on other machines keep their own origin
// (two machines' monotonic clocks cannot be compared); returns how many.
int AlignClocks(std::vector<WorkerMeasurement>& workers);

// The run's report: throughput over the iterations after --warmup, per-worker busy, idle and
// exposed communication, per-device memory, per-stage staleness; executor-only facts (overhead,
// per micro-batch versions, losses, accuracy, peak RSS) under `details`.
Report MergeMeasurements(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers);
// The load of rank 0's machine before and during the run: rank 0's host CPU times, less the CPU
// time of every worker sharing its boot id, over the union of their CPUs. MergeMeasurements
// records it in details.machine_load and each disturbance in the report's warnings.
MachineLoad MachineLoadOf(const std::vector<WorkerMeasurement>& workers);
// The run as a Timeline labelled "measured" (partition/timeline.h), in the simulator's layout:
// worker r on device r; its compute and Send/Recv ops named by their torch.distributed.pipelining
// action ("1F3"), with the weight version actually used, the peer and the bytes; its all-reduces
// on lane 3; its updates (optimizer steps); its memory samples. A send's event ends no earlier
// than the receive that took its message (EndSendsWhenReceived). Stash and release ops take no
// time worth drawing and are left out.
Timeline MeasuredTimeline(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers);
// Chrome trace (chrome://tracing, Perfetto) of the run, the layout of `pipetwin simulate
// --trace`: ChromeTrace(MeasuredTimeline(job, workers)).
nlohmann::json ChromeTrace(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers);

}  // namespace pipetwin::exec
