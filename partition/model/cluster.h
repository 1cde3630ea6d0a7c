// Cluster: a hierarchical topology of identical devices.
//
// Level 0 is the innermost (devices per server, joined by NVLink or PCIe); level 1 groups servers
// (joined by NICs and a switch), level 2 racks, and so on. Each level has a fan-out `count`, a
// link bandwidth and a latency; the device has a memory capacity and a compute speed, either
// relative to the device a workload was profiled on or as peak FLOP/s times efficiency.
//
//   Cluster c = ClusterPreset("cluster-a", /*servers=*/4);  // 4 servers x 4 V100 (PCIe), 10 Gbps
//   c.DeviceCount();                                         // 16
//   c.levels[1].bandwidth_bytes_per_s();                     // 1.25e9
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

// Measured all-reduce times of a group of `ranks` devices inside one unit of a level (or another
// collective's, CollectiveTable): what `pipetwin calibrate` probes of c10d Gloo on the machine it
// runs on. The simulator charges an all-reduce over such a group by this table instead of a ring
// of messages over the links (on a CPU the ring's transfers, copies and sums share the cores, so
// Gloo's all-reduce takes several times what the ping-pong's bandwidth gives a ring). Piecewise
// linear in bytes; below the smallest size the smallest time, beyond the largest the last
// segment's slope.
struct AllReduceTable {
  int ranks = 0;
  std::vector<double> bytes;    // strictly increasing, > 0
  std::vector<double> seconds;  // > 0, one per size

  bool empty() const { return bytes.empty(); }
  double Seconds(double b) const;
};

// A collective's measured times among `ranks` devices of one unit of a level, the unit's other
// devices running the same in groups of that size at once (as a server's tensor-parallel groups
// do): `kind` is "all-reduce", "all-gather" or "reduce-scatter", `times.bytes` the whole tensor
// (an all-gather's output, a reduce-scatter's input). A tensor-parallel collective of that kind
// and group is charged by it instead of a ring at the level's bus bandwidth
// (TensorParallelCollectiveMs).
struct CollectiveTable {
  std::string kind;
  AllReduceTable times;
};

struct ClusterLevel {
  std::string name = "server";   // what one unit of this level is ("server", "rack")
  int count = 1;                 // children per unit: devices per server, servers per rack, ...
  double bandwidth_gbps = 100;   // per-link bandwidth in Gbit/s
  double latency_us = 1;         // per-message latency of one hop at this level
  std::string link = "nvlink";   // "nvlink", "pcie", "ethernet", "infiniband", "loopback"
  AllReduceTable allreduce;      // measured; empty: all-reduces are rings over the links
  // The same, measured with the processes under SCHED_RR and free on every core, as the
  // executor runs the workers of a server they outnumber (exec/runtime/cpu_policy.h): there
  // a group's all-reduce takes this one. Empty: `allreduce` everywhere.
  AllReduceTable allreduce_round_robin;
  // The bus bandwidth a collective reaches among the devices of one unit of this level, in
  // Gbit/s (nccl-tests' busbw: an all-reduce of S bytes over g ranks takes 2(g-1)/g S / busbw);
  // 0: the link's bandwidth. Tensor-parallel collectives of no measured table are charged at it
  // (TensorParallelCollectiveMs).
  double collective_bandwidth_gbps = 0;
  // The SMs a collective among the devices of one unit of this level holds while it runs: NCCL
  // runs one thread block per channel, each on an SM of its own, so a GEMM running beside a
  // collective has the device's other SMs (device.multiprocessors) until it ends. 0: a
  // collective takes nothing from the kernels beside it.
  int collective_channels = 0;
  // Measured collectives among this level's devices, at most one per kind and group size.
  std::vector<CollectiveTable> collective_tables;

  double bandwidth_bytes_per_s() const { return bandwidth_gbps * 1e9 / 8; }
};

// A GEMM measured on a device (a cuBLAS benchmark such as mamf-finder, or `pipetwin calibrate`
// on a GPU): C[m x n] = A[m x k] B[k x n], `batch` of them, at `tflops` (10^12 FLOP/s).
struct MeasuredGemm {
  double m = 0, n = 0, k = 0, batch = 1;
  double tflops = 0;
};

struct DeviceSpec {
  std::string name = "V100-16GB";
  double memory_bytes = 16.0 * 1024 * 1024 * 1024;  // the V100-16GB's 16 GiB
  // Speed relative to the device the workload's times were taken on (2 = twice as fast).
  double relative_speed = 1.0;
  // Absolute model, used for FLOP-based workloads: peak FLOP/s, achieved fraction, HBM bytes/s.
  double peak_flops = 125e12;
  double flops_efficiency = 0.5;
  double memory_bandwidth_bytes_per_s = 900e9;
  // The operation-dependent model of the Megatron-style transformers (workloads/megatron):
  double peak_flops_fp8 = 0;             // dense fp8 tensor-core peak; 0 where there is none
  // Large GEMMs' achieved share of peak_flops at their best shape (a GEMM benchmark's maximum
  // over shapes, as `mamf-finder` measures it); smaller GEMMs lose tiles and waves to it
  // (GemmEfficiency). 0: flops_efficiency, with no shape dependence.
  double gemm_efficiency = 0;
  int multiprocessors = 0;               // SMs: the wave size of a GEMM; 0: no wave quantisation
  // Measured GEMMs (cluster file: device.gemm_table). When given, a GEMM of a measured shape runs
  // at its measured rate, and another at the share of the nearest measured shape, scaled by what
  // tiles and waves leave of each (workloads/megatron: GemmEfficiency).
  std::vector<MeasuredGemm> gemm_table;
  // The share of memory_bandwidth_bytes_per_s that memory-bound kernels reach.
  double memory_bandwidth_efficiency = 1;

  // The roofline time in ms of an operation doing `flops` FLOPs and moving `bytes` bytes of
  // memory: the longer of its FLOPs at the achieved rate and its traffic at the memory
  // bandwidth (Williams et al., "Roofline", CACM 2009). The analytic workloads' times.
  double RooflineMs(double flops, double bytes) const;
};

// How far each figure `pipetwin calibrate` measured may move on a second calibration: the
// half-width of the 95% interval of its mean over the calibration's rounds, relative to that
// mean (partition/util/spread.h's rule). 0: not known (a cluster written by hand, or a
// calibration of one round).
struct ClusterSpread {
  double compute = 0;    // device.peak_flops and memory_bandwidth_bytes_per_s (one core's probes)
  double message = 0;    // levels[0].latency_us and communication_overhead_us (the fit's intercept)
  double bandwidth = 0;  // levels[0].bandwidth_gbps
  double allreduce = 0;  // levels[0].allreduce.seconds: the largest over the table's sizes
  double oversubscribed_message = 0;  // oversubscribed_message_us
  double busy_sender_message = 0;     // busy_sender_message_us

  bool empty() const {
    return compute == 0 && message == 0 && bandwidth == 0 && allreduce == 0 &&
           oversubscribed_message == 0 && busy_sender_message == 0;
  }
};

class Cluster {
 public:
  std::string name = "cluster";
  DeviceSpec device;
  std::vector<ClusterLevel> levels;  // innermost first
  // "datacenter": ideal links (SimGrid latency and bandwidth factors 1, no cross-traffic) that
  // concurrent flows share; "contention_free": the same links, each flow getting a link's whole
  // bandwidth (a bound: no flow ever slows another); "tcp": SimGrid's LV08 TCP model.
  std::string network_model = "datacenter";
  double launch_overhead_us = 0;       // per compute operation
  double communication_overhead_us = 0;  // host-side cost per message
  // 0: every device computes on its own (a GPU). > 0: the devices of one server (a level-0 unit)
  // are worker processes sharing this many CPU cores, as on the machine `pipetwin compare` runs
  // on: a worker computes at one core's speed on a core of its own while there are enough.
  // With more workers than cores, the cores serve them first come, first served, each piece of
  // work run to its end on one core (or kept longer: round_robin_slice_ms), as the executor's
  // workers run under SCHED_RR there (exec/cpu_policy.h).
  int shared_cores = 0;
  // With shared cores and more workers than cores: the round-robin slice of SCHED_RR (ms). > 0:
  // a worker keeps the core it took until it waits (for a message, an all-reduce, a loaded
  // micro-batch) or ends, and each time it has run a slice, if another worker waits for a core,
  // it goes behind it, inside an op if need be (Linux: kernel/sched/rt.c, task_tick_rt refills
  // the slice and requeues the thread behind the runnable ones of its priority; the slice
  // counts running time only); and each worker's c10d Gloo thread, such a thread too, reads its
  // messages (the receiver's half of oversubscribed_message_us) on a core it waits for.
  // `pipetwin calibrate` reads it with sched_rr_get_interval under SCHED_RR. 0: a worker takes
  // a core for each piece of work and gives it back at its end, and reads its own messages.
  double round_robin_slice_ms = 0;
  // With shared cores and more workers on a server than cores: the CPU time each message
  // between workers there costs on top of its transfer, half at each end, on one of the
  // server's cores (the sender's half before the message leaves). `pipetwin
  // calibrate` measures it with more processes than cores passing messages in a ring: the CPU
  // beyond the ring's GEMMs under SCHED_RR; where SCHED_RR was refused, all the core time a
  // hop took beyond its GEMMs (idle cores included); 0 charges nothing. With a core per worker,
  // each half comes out of the compute its worker runs as c10d Gloo's thread, pinned to the
  // same core, spends it: the sender's as the bytes go, the receiver's as it is told of a
  // message sent before its receive (sim/actors.cc, ChargeComputingPeer).
  double oversubscribed_message_us = 0;
  // With shared cores, each worker on a core of its own and its receives posted at their ops
  // (ReceivePostingOf): what a message waits, on average, beyond its transfer when its sender's
  // computing thread holds the sender's core while it moves. c10d Gloo's thread of the sender
  // pushes it, and the scheduler may let the computing thread run out its slice first (to a
  // scheduler tick, milliseconds). `pipetwin calibrate` measures it as two 1F1B stages in their
  // steady state: the wait for an activation whose sender computes against one whose sender
  // sleeps as long (docs/calibration.md); 0 charges nothing.
  double busy_sender_message_us = 0;
  // What `pipetwin calibrate` measured to derive this cluster (probe sizes, raw timings); kept
  // for inspection, never read back into the model. Null when the cluster was written by hand.
  nlohmann::json calibration;
  // The calibrated figures' spread over the calibration's rounds (JSON: "spread").
  ClusterSpread spread;

  int DeviceCount() const;
  // Devices inside one unit of level `level` (level 0: a server's devices).
  int DevicesPerUnit(int level) const;
  // The innermost level whose unit holds both devices: the level of the links between them
  // (0 inside a server). Device ids count in the cluster's order.
  int LinkLevel(int device_a, int device_b) const;
  // This cluster with every calibrated figure at the slow (`side` +1) or the fast (-1) end of
  // its spread: compute and bandwidths lower by their relative spread and per-message costs and
  // all-reduce times higher, or the other way. Only the figures the calibration measured move
  // (level 0's; a link added by ShapeCalibratedMachine is the user's). `compare` simulates both
  // edges to give its prediction a band.
  Cluster AtSpreadEdge(int side) const;
};

// How many times faster this cluster's device runs a workload timed on `reference_device`: 1 when
// the workload was timed on this very device (analytic workloads are timed on the cluster's
// device model; `pipetwin profile` on the machine itself), else the device's relative_speed.
double SpeedOverReference(const Cluster& cluster, const std::string& reference_device);

// The GPUs the presets are built of, from their datasheets (cluster.cc says which):
// "V100-16GB", "A100-40GB", "A100-80GB", "H100-SXM-80GB", "H200". Throws InputError naming them.
DeviceSpec DevicePreset(const std::string& name);
std::vector<std::string> DevicePresetNames();

// Presets for the papers' clusters. `servers` is the number of servers (level-1 units).
//   cluster-a:   PipeDream Cluster-A, servers of 4 V100 on PCIe, 10 Gbps between servers
//   cluster-b:   PipeDream Cluster-B, servers of 8 V100 with NVLink, 25 Gbps
//   p3.16xlarge: PipeDream-2BW's AWS p3.16xlarge, 8 V100-16GB with NVLink, 25 Gbps
//   dgx-a100:    8 A100-80GB, NVLink (300 GB/s each way), 8x200 Gbps InfiniBand (1,600 Gbps)
//   dgx-h100:    8 H100-80GB, NVLink (450 GB/s each way), 8x400 Gbps InfiniBand (3,200 Gbps)
//   dgx-h200:    8 H200 (141 GB), otherwise as dgx-h100
//   dgx-a100-40gb: dgx-a100 with A100-40GB
// The DGX presets' level 1 is the server's 8 NICs together; each GPU has one of them (Selene's
// rail-optimised fabric), which the tensor-parallel view of a cluster relies on.
Cluster ClusterPreset(const std::string& preset, int servers);
std::vector<std::string> ClusterPresetNames();

// The machine `pipetwin calibrate` measured (one level: a server of workers sharing its cores),
// shaped for a scenario of `devices` workers: the server widened to them, or, with `hosts` > 1
// (workers in that many network namespaces, scripts/netns.sh), split into `hosts` servers of
// devices / hosts workers and cores / hosts cores each (each namespace's workers are pinned to
// their own cores), joined by a link of `link_gbps` and `link_latency_us`. A calibrated cluster
// of several levels (written by hand) is taken as it is when it has the devices. Throws
// InputError naming `file` when it cannot be shaped so.
Cluster ShapeCalibratedMachine(const Cluster& calibrated, const std::string& file, int devices,
                               int hosts = 1, double link_gbps = 0, double link_latency_us = 0);

// The cluster as one rank of each tensor-parallel group sees it (Megatron-LM's placement:
// ranks numbered tensor-parallel innermost, so a group is `tensor` consecutive devices of one
// server; Narayanan et al. SC'21, section 3.3): a server of n devices holds n / t groups, each
// a device here with a device's memory and its own level-0 links; every level above carries
// 1 / t of its bandwidth, the share of one rank's traffic (each rank of a group sends its own
// shard of the pipeline's activations and all-reduces its own shard of the gradients, all t at
// once). Throws InputError naming `file` and cluster.levels[0].count when a group does not fit
// in a server. t = 1: the cluster unchanged.
Cluster TensorParallelView(const Cluster& cluster, int tensor, const std::string& file);

// JSON. Accepts a full description or {"preset": NAME, "servers": N, ...overrides}. Throws
// InputError naming `file` and the JSON path (e.g. "cluster.levels[1].bandwidth_gbps").
Cluster ClusterFromJson(const nlohmann::json& doc, const std::string& file,
                        const std::string& path = "");
nlohmann::json ClusterToJson(const Cluster& cluster);
Cluster LoadClusterFile(const std::string& path);

}  // namespace pipetwin
