// What a run launched here asks of this machine, and how busy the machine is while it runs: the
// capacity `pipetwin run --check` holds a run against, and the load `pipetwin run` records in its
// report (and `compare` reads back) so that a measurement disturbed by other work says so.
//
//   MachineCapacity here = ThisMachineCapacity();
//   if (std::string why = WhyMachineCannotHold(need, here); !why.empty()) refuse(why);
//   CpuTimes a = ReadCpuTimes(); ...run...; CpuTimes b = ReadCpuTimes();
//   LoadShare during = ShareBetween(a, b, cpus, own_cpu_seconds);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

// What this machine offers a run launched here.
struct MachineCapacity {
  int cpus = 1;                       // the CPUs this process may use (AllowedCpus)
  double memory_bytes = 0;            // MemTotal, or the memory cgroup's limit where lower
  double available_memory_bytes = 0;  // MemAvailable now
  long long free_tasks = -1;          // processes and threads that can still start; -1 unknown
  double rr_timeslice_s = 0.1;        // SCHED_RR's time slice (sched_rr_timeslice_ms)
};
// Reads /proc (meminfo, loadavg, sys/kernel), the cgroup (v2 or v1) and RLIMIT_NPROC (which
// does not bind root); a figure that cannot be read stays unknown (0, or -1 for free_tasks) and
// its rule is not applied.
MachineCapacity ThisMachineCapacity();

// What a run needs of the machine, at least.
struct RunDemand {
  int processes = 0;            // one per worker
  int threads_per_process = 2;  // at least the worker's own and its communicator's
  double process_bytes = 0;     // each process's own memory before its model
  double model_bytes = 0;       // the weights, gradients and optimizer state of every process
  double MemoryBytes() const { return processes * process_bytes + model_bytes; }
  double peer_timeout_s = 25;   // how long a worker waits for a peer (run --timeout)
};

// "" when the machine can hold the run; else why not, in one sentence with the figures. Refused:
//   - more tasks than the kernel lets start (RLIMIT_NPROC, pid_max, threads-max, pids cgroup),
//     less those running now;
//   - more memory than the machine has (its total or its cgroup's limit);
//   - more workers per CPU than the peer timeout allows: under SCHED_RR (exec cpu_policy.h), a
//     worker that becomes runnable waits for every other worker on its CPU to use up its time
//     slice, up to (ceil(W / C) - 1) x slice; longer than the timeout, a worker waiting for a
//     CPU would be declared lost by its peers.
std::string WhyMachineCannotHold(const RunDemand& need, const MachineCapacity& machine);

// Busy and stolen time of each CPU since boot (/proc/stat; seconds). Busy is user, nice and
// system time: what processes run, not interrupts (a loopback transfer's softirqs are charged to
// no process), so that a run's own processes account for all of it.
struct CpuTimes {
  std::vector<double> busy_s, steal_s;  // by CPU number
};
CpuTimes ReadCpuTimes();
// The 1-minute load average (/proc/loadavg), -1 when unknown. It counts every runnable task of
// the last minute, those of a run that just ended too, so it is recorded, not judged.
double LoadAverage1m();
// A field of /proc/meminfo ("MemTotal", "MemAvailable") in bytes, 0 when absent.
double MemInfoBytes(const std::string& field);
// This process's CPU time so far (every thread), seconds.
double ProcessCpuSeconds();
// The calling thread's CPU time so far, seconds.
double ThreadCpuSeconds();
// The ids of this process's threads (/proc/self/task); the calling thread's alone where that
// cannot be read.
std::vector<int> ThreadIdsOfThisProcess();
// The kernel's account of this process's threads (/proc/self/task/*/schedstat and status): how
// long the calling thread was runnable but waited for a CPU (waiting_s), how often it was
// preempted (involuntary context switches), and how long every other thread ran
// (others_running_s: in a worker, c10d Gloo's event loops and workers, which share its core).
// `available` is false where the kernel keeps no schedstat (CONFIG_SCHED_INFO off).
struct ThreadAccount {
  bool available = false;
  double waiting_s = 0;
  double preempted = 0;
  double others_running_s = 0;
};
ThreadAccount ReadThreadAccount();
// What happened between two readings (threads that ended meanwhile take their time with them:
// each figure is at least 0).
ThreadAccount Since(const ThreadAccount& to, const ThreadAccount& from);
// This process's private resident memory (RssAnon: heap, stacks, anonymous maps; not the shared
// libraries' pages, which every process of one program shares), bytes; 0 when unknown.
double ProcessPrivateBytes();

// Other work on `cpus` between two readings `seconds` apart, as shares of those CPUs' capacity:
// `foreign` = (busy - own_cpu_s) / (seconds x |cpus|), `steal` = stolen / (seconds x |cpus|)
// (time the hypervisor gave another guest).
struct LoadShare {
  double foreign = 0;
  double steal = 0;
};
LoadShare ShareBetween(const CpuTimes& from, const CpuTimes& to, const std::vector<int>& cpus,
                       double seconds, double own_cpu_s);
// Watches `cpus` for `seconds` while this process sleeps: the load before a run starts.
LoadShare SampleLoad(const std::vector<int>& cpus, double seconds);

// A measurement is disturbed when other work or steal took more than this share of the CPUs
// the run uses: a CPU-bound run then loses up to that share of its throughput, as much as the
// validation matrix's target for the mean throughput error (5%, docs/validation.md).
constexpr double kDisturbingLoadShare = 0.05;

// The machine's speed is disturbed when one core's GEMM rate (exec/measure/machine_speed.h) moved
// by more than this share between two readings: a CPU-bound run's throughput moves with it, and
// a guest's host shared with other guests slows it by that much without any steal time (the
// 2-vCPU guest of docs/validation.md read 101 and 84 GFLOP/s twenty minutes apart).
constexpr double kDisturbingSpeedChange = 0.05;

// One sentence when one core's GEMM rate moved by more than kDisturbingSpeedChange from
// `from_gflops` (read `from_when`, "before the run") to `to_gflops` (`to_when`); none when either
// reading is missing (0) or they are close.
std::optional<std::string> SpeedChangeWarning(double from_gflops, const std::string& from_when,
                                              double to_gflops, const std::string& to_when);

// The load of the machine a run measured on: before it (the launcher's sample, when it launched
// the workers) and during it (rank 0's host, from its start barrier to its end barrier).
struct MachineLoad {
  std::string subject = "run";  // what was measured: "the run", "the profile" in the warnings
  int cpus = 0;
  double load_average_1m = -1;  // when the run started
  bool sampled_before = false;
  LoadShare before;
  bool measured_during = false;
  LoadShare during;
  // One core's fp32 GEMM rate, GFLOP/s, read right before and right after the measurement with
  // none of its processes computing (exec/measure/machine_speed.h); 0: not read (a GPU, an older
  // report).
  double gflops_before = 0, gflops_after = 0;
  // The mean of the two readings, or the one taken; 0 when neither.
  double Gflops() const;

  // One sentence per disturbance over kDisturbingLoadShare.
  std::vector<std::string> Warnings() const;
  bool Disturbed() const { return !Warnings().empty(); }
  // {"cpus", "load_average_1m", "before": {"foreign_share", "steal_share"} or null,
  //  "during": {...} or null, "one_core_gflops": {"before", "after"} or null, "disturbed"}
  nlohmann::json ToJson() const;
  // Back from ToJson's form (a report's details.machine_load); missing fields stay unknown.
  static MachineLoad FromJson(const nlohmann::json& j);
};

// The launcher's sample of the load before a run, handed to the workers in their environment
// (PIPETWIN_LOAD_BEFORE); absent under torchrun or Slurm.
std::string LoadShareToText(const LoadShare& share);
bool LoadShareFromText(const std::string& text, LoadShare* share);

}  // namespace pipetwin
