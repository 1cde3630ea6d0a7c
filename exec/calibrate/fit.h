// From the probes of `pipetwin calibrate` to a cluster the simulator takes. Free of LibTorch: the
// probes themselves run in calibrate.cc; this file holds the model fitted to them.
//
// The simulator charges a message of S bytes between two workers of one server
//   communication_overhead_us (a sleep of the sender, sim/runner.cc)
//   + latency_us (half on each of the two host links, sim/platform.cc)
//   + S / bandwidth (the links' bandwidth; network_model "datacenter": no TCP factors),
// so the loopback ping-pong is fitted as one-way time = a + S / B and a is split in two:
//   latency_us                 the one-way time of a 4-byte raw TCP ping-pong between the same
//                              two processes (the kernel's loopback path and two wake-ups),
//   communication_overhead_us  a - latency_us: what c10d Gloo adds per message on top of it
//                              (0, and latency_us = a, when the raw TCP time exceeds a).
//
//   CalibrationProbes probes = ...;                  // measured (calibrate.cc)
//   Cluster c = CalibratedCluster(probes, /*workers=*/2);
//   std::cout << CalibrationSummary(c);
#pragma once

#include <string>
#include <vector>

#include "partition/model/cluster.h"
#include "partition/util/machine.h"

namespace pipetwin::exec {

// One message size of the c10d Gloo ping-pong.
struct PingPongRow {
  double bytes = 0;
  int repeats = 0;        // timed round trips (after warm-up)
  double one_way_s = 0;   // median round trip / 2
  // The fastest round trip / 2, kept for inspection: far below the median, the probe shared the
  // cores with other work.
  double fastest_one_way_s = 0;
};

// One size of the c10d Gloo all-reduce probe (a sum over 2 processes, in place, as a replicated
// stage's gradients are reduced).
struct AllReduceRow {
  double bytes = 0;
  int repeats = 0;
  double seconds = 0;          // mean: the stalls count, as they do in a run's throughput
  double fastest_s = 0;
  double median_s = 0;
};

// The oversubscribed ring (OversubscribedRingSeconds in calibrate.cc).
struct RingProbe {
  int processes = 0;       // one more than the cores
  int gemms_per_hop = 0;   // of the compute probe's GEMM
  int hops = 0;            // timed, per process and ring
  double hop_s = 0;        // seconds per hop of one process: the median ring's
  std::vector<double> hop_s_each;  // every ring's, in the order run (kept for inspection)
  // Per ring, the thread CPU time of one process's GEMMs per hop, measured during that ring
  // (empty: not measured; the compute probe's busy-core GEMM time stands in).
  std::vector<double> gemm_cpu_s_each;
  // Per ring, the CPU time all the ring's processes (every thread: c10d Gloo's too, and the
  // kernel's work on their behalf) spent per hop, summed over the processes (empty: not
  // measured). Against cores x hop it tells how busy the ring kept the cores.
  std::vector<double> process_cpu_s_each;
  // The policy the ring's threads ran under: "SCHED_RR", as the executor's workers run where
  // they outnumber the cores, or "SCHED_OTHER (why SCHED_RR was refused)".
  std::string policy = "SCHED_OTHER";
  // Under SCHED_RR, its round-robin slice (sched_rr_get_interval; 0: not read).
  double round_robin_slice_s = 0;
};

// The busy sender (BusySender in probes.cc): two workers with a core each as two 1F1B stages;
// stage 1's mean wait for an activation pushed while stage 0 computes, and while it sleeps as
// long instead.
struct BusySenderProbe {
  int messages = 0;      // timed messages each way (0: not probed)
  double busy_s = 0;     // mean wait per message, the sender computing
  double idle_s = 0;     // the same, the sender sleeping
};

// The compute probe: the same fp32 GEMM (n x n by n x n) in every probe process, one thread each.
struct ComputeProbe {
  int gemm_n = 256;
  double alone_s = 0;            // median time of one GEMM while no other process computes
  std::vector<double> busy_s;    // the same, per process, while one process per core computes
  double copy_bytes = 0;         // a tensor copy on one core: bytes read plus bytes written
  double copy_s = 0;             // its median time
};

// Everything `pipetwin calibrate` measured.
struct CalibrationProbes {
  std::string host;
  std::string when;              // ISO 8601, UTC
  std::vector<int> cpus;         // the CPUs this process may run on (sched_getaffinity)
  double memory_bytes = 0;       // MemTotal
  int probe_workers = 2;         // processes started for the probes
  bool quick = false;
  double load_average = 0;       // /proc/loadavg (1 minute) when the probes began
  int tcp_message_bytes = 4;
  int tcp_round_trips = 0;
  double tcp_one_way_s = 0;      // median round trip / 2 of the raw TCP ping-pong
  std::vector<PingPongRow> ping_pong;
  std::vector<AllReduceRow> allreduce;  // between ranks 0 and 1; empty: not probed
  // The same under SCHED_RR, the processes free on every core (the policy the ring runs under,
  // ring.policy); empty: not probed, or SCHED_RR refused.
  std::vector<AllReduceRow> allreduce_round_robin;
  RingProbe ring;                       // hops 0: not probed
  BusySenderProbe busy_sender;
  ComputeProbe compute;

  int cores() const { return static_cast<int>(cpus.size()); }
};

// `pipetwin calibrate --device cuda`: what the GPU probes measured (gpu_probes.cc).
struct GpuProbes {
  std::string host, when;
  std::string gpu;               // the device's name (cudaDeviceProp::name)
  int gpus = 1;                  // CUDA devices on this machine
  int multiprocessors = 0;       // SMs
  double memory_bytes = 0;       // the device's memory
  bool quick = false;
  // The transport the run's workers would use, which the message probes went over: "nccl"
  // (each worker its own GPU) or "gloo, staged through host memory" (workers share a GPU).
  std::string transport;
  std::vector<MeasuredGemm> gemms;  // bf16, timed by CUDA events on one GPU
  double copy_bytes = 0, copy_s = 0;  // a device-to-device copy: bytes read plus written
  double host_copy_bytes = 0, to_device_s = 0, to_host_s = 0;  // pinned host memory
  std::vector<PingPongRow> ping_pong;   // ranks 0 and 1 over `transport`
  std::vector<AllReduceRow> allreduce;  // ranks 0 and 1 over `transport`
};

// one_way_s = intercept_s + bytes * seconds_per_byte.
struct LinearFit {
  double intercept_s = 0;
  double seconds_per_byte = 0;

  double Predict(double bytes) const { return intercept_s + bytes * seconds_per_byte; }
  double bandwidth_bytes_per_s() const { return 1 / seconds_per_byte; }
};

// Fits one_way_s = a + bytes / B in the two regimes where each term dominates (Hockney's
// t = t0 + n / r_inf, as ping-pong benchmarks report latency from the smallest messages and
// bandwidth from the largest):
//   a    the mean of one_way_s - bytes / B over the sizes up to kLatencyRegimeBytes (4 KB:
//        bytes / B is a few percent of the time there),
//   1/B  the least-squares slope of (one_way_s - a) against bytes, through the origin, over the
//        sizes from kBandwidthRegimeBytes (1 MB: bytes / B is most of the time there).
// Unweighted, so that the largest messages, whose seconds weigh most in a simulated pipeline,
// are fitted best. The sizes in between (copies that stay in a core's cache, faster per byte)
// and the pathologies of single sizes are left to the residuals. A joint fit over all sizes
// cannot serve both ends on a loaded machine: there a transfer of many megabytes spans several
// scheduler slices and is slower per byte than a 1 MB one, and a line follows that curve
// wherever its weights put it. Requires sizes in both regimes with positive times;
// throws std::invalid_argument otherwise or when the time does not grow with the size.
constexpr double kLatencyRegimeBytes = 4096;
constexpr double kBandwidthRegimeBytes = 1 << 20;
LinearFit FitOneWayTime(const std::vector<PingPongRow>& rows);

// The cluster of this machine: one server ("host") of `workers` devices joined by loopback, with
// the fitted bandwidth, latency and per-message overhead, the all-reduce probe as the level's
// all-reduce table (for groups of 2), shared_cores = the probes' cores, the device's memory, GEMM
// rate and copy bandwidth, and every probe in `calibration`.
Cluster CalibratedCluster(const CalibrationProbes& probes, int workers);

// A calibration in rounds (calibrate --target-spread): each round the whole set of probes, taken
// again until the figures the stopping rule judges (JudgedSpread) are known well enough.
struct CalibrationRounds {
  std::vector<CalibrationProbes> rounds;  // in the order taken; at least one
  double seconds = 0;                     // wall time of the rounds together
  double target_spread = 0;               // the stopping rule's; 0: a fixed count of rounds
  double max_seconds = 0;
  MachineLoad load;                       // before and during the rounds (subject "calibration")
};

// The rounds' probes as one: each time the mean of the rounds' (a ping-pong size's one-way
// time, an all-reduce size's mean, the GEMMs, the copy, the TCP round trip), the repeats
// summed, the fastest times the fastest, every ring of every round kept. Fitting it gives the
// cluster's figures.
CalibrationProbes MergeRounds(const std::vector<CalibrationProbes>& rounds);

// Each figure of the calibrated cluster per round (each round's probes fitted on their own), and
// the relative half-width of their mean's 95% interval (spread.h): how far the merged figure
// may move on a second calibration. The all-reduce's is the largest over its sizes. One round:
// all zero.
struct RoundFigures {
  std::vector<double> gemm_gflops, copy_gbps, intercept_us, bandwidth_gbps,
      oversubscribed_message_us, busy_sender_message_us;
  std::vector<std::vector<double>> allreduce_s;  // per size, per round
};
RoundFigures FiguresOfRounds(const std::vector<CalibrationProbes>& rounds, int workers);
ClusterSpread SpreadOfRounds(const RoundFigures& figures);
// What the stopping rule judges: the largest of the compute, per-message and bandwidth spreads,
// the figures every prediction charges. The all-reduce (a mean that keeps its stalls, by
// design), the oversubscribed message's cost and the busy sender's (differences of two times,
// relatively wide when small; the busy sender's a mean of rare long waits) are reported and
// carried into compare's band, not waited for.
double JudgedSpread(const ClusterSpread& spread);

// The cluster of the merged rounds, with `spread` from the rounds and calibration.stability:
// the rounds, seconds, target, whether it settled, each figure's rounds and interval, and the
// disturbances (load before and during, steal time, a round far off the others, a figure that
// did not settle). One round and no target: the same as CalibratedCluster(rounds[0], workers).
Cluster CalibratedCluster(const CalibrationRounds& rounds, int workers);

// The cluster of this GPU machine for `workers` worker processes: one server of `workers`
// devices, each the measured GPU (its memory over the workers that share it, its GEMM table,
// copy bandwidth and SMs; relative_speed 1: workloads are profiled on it), joined by the
// message probe's fitted a + S / B (latency a, no separate per-message overhead) and its
// all-reduce table; with more workers than GPUs, shared_cores = the GPUs (the simulator runs
// the workers' ops one at a time on them, as CUDA time-slices the processes of one GPU).
Cluster GpuCalibratedCluster(const GpuProbes& probes, int workers);

// How much other work slowed the probes down: the largest, over the sizes up to 4 KB, of median /
// fastest round trip (a round trip of a tiny message is a pair of wake-ups, which wait for a time
// slice when other work holds the cores, so the spread grows by an order of magnitude then; an
// idle machine stays well below kContendedSpread). 0 when no fastest times are known.
double SmallMessageSpread(const std::vector<PingPongRow>& rows);
// Above this spread the probes measured the machine under other work, not the machine itself.
constexpr double kContendedSpread = 2;

// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> v);

// A few readable lines about a calibrated cluster (read from its `calibration` member), with a
// warning when the probes were contended.
std::string CalibrationSummary(const Cluster& cluster);

}  // namespace pipetwin::exec
