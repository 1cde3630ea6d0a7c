#include "partition/model/cluster.h"

#include <algorithm>
#include <cmath>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"

namespace pipetwin {

double DeviceSpec::RooflineMs(double flops, double bytes) const {
  return 1e3 * std::max(flops / (peak_flops * flops_efficiency),
                        bytes / memory_bandwidth_bytes_per_s);
}

int Cluster::DeviceCount() const { return DevicesPerUnit(static_cast<int>(levels.size()) - 1); }

int Cluster::DevicesPerUnit(int level) const {
  int n = 1;
  for (int i = 0; i <= level && i < static_cast<int>(levels.size()); ++i) n *= levels[i].count;
  return n;
}

int Cluster::LinkLevel(int device_a, int device_b) const {
  const int top = static_cast<int>(levels.size()) - 1;
  for (int l = 0; l < top; ++l)
    if (device_a / DevicesPerUnit(l) == device_b / DevicesPerUnit(l)) return l;
  return top;
}

double AllReduceTable::Seconds(double b) const {
  if (bytes.empty()) return 0;
  if (b <= bytes.front() || bytes.size() == 1) return seconds.front();
  size_t i = 1;  // the segment [i - 1, i] holding b, or the last one beyond the largest size
  while (i + 1 < bytes.size() && b > bytes[i]) ++i;
  const double slope = (seconds[i] - seconds[i - 1]) / (bytes[i] - bytes[i - 1]);
  return std::max(seconds.front(), seconds[i - 1] + slope * (b - bytes[i - 1]));
}

double SpeedOverReference(const Cluster& cluster, const std::string& reference_device) {
  return reference_device == cluster.device.name ? 1.0 : cluster.device.relative_speed;
}

namespace {

Cluster TwoLevel(const std::string& name, DeviceSpec device, int per_server, double server_gbps,
                 const std::string& server_link, int servers, double network_gbps,
                 const std::string& network_link) {
  Cluster c;
  c.name = name;
  c.device = std::move(device);
  c.levels = {{"server", per_server, server_gbps, 1.0, server_link, {}},
              {"cluster", servers, network_gbps, 5.0, network_link, {}}};
  return c;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// A GPU from its datasheet; relative_speed is over a V100 (the PipeDream profiles' device).
DeviceSpec Gpu(const std::string& name, double memory_bytes, double relative_speed,
               double peak_flops, double peak_flops_fp8, double bandwidth_bytes_per_s,
               int multiprocessors, double gemm_efficiency, double memory_efficiency) {
  DeviceSpec d;
  d.name = name;
  d.memory_bytes = memory_bytes;
  d.relative_speed = relative_speed;
  d.peak_flops = peak_flops;
  d.flops_efficiency = 0.5;
  d.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  d.peak_flops_fp8 = peak_flops_fp8;
  d.multiprocessors = multiprocessors;
  d.gemm_efficiency = gemm_efficiency;
  d.memory_bandwidth_efficiency = memory_efficiency;
  return d;
}

// Hopper GEMMs as XLA's GPU cost model has them (openxla/xla, xla/service/gpu/model/
// matmul_interpolator_data.h, its "sm_90" table as of commit 71feeddf7c, October 2025, and
// unchanged since): bf16 in and out, one batch, each timed by xla/tools/matmul_perf_table_gen as
// the kernel XLA's autotuner chose (cuBLAS or Triton) ran it, CUPTI's kernel time over 5 runs
// after a warm-up. The entries with m, n and k in {512, 1024, 2048, 4096}, rounded to 0.1
// TFLOP/s. The table's previous measurement (commit b2766086, August 2025) is within 3% of it
// for every shape of 2048^3 FLOP and more.
// A GEMM's share of peak grows with its depth k (4096 x 4096 runs at 552 TFLOP/s with k = 512,
// 780 with k = 4096), which a best-shape share times tile and wave quantisation (GemmEfficiency
// without a table) cannot say. XLA keys the table by compute capability, so H200 takes it too.
std::vector<MeasuredGemm> HopperGemms() {
  struct Row {
    double m, n;
    double tflops[4];  // k = 512, 1024, 2048, 4096
  };
  static const Row kRows[] = {
      {512, 512, {43.6, 73.4, 116.3, 187.5}},
      {512, 1024, {85.4, 146.5, 231.0, 300.9}},
      {512, 2048, {147.5, 241.8, 342.8, 460.4}},
      {512, 4096, {243.6, 381.3, 530.0, 661.6}},
      {1024, 512, {84.3, 144.0, 235.5, 312.1}},
      {1024, 1024, {149.1, 252.8, 359.8, 472.6}},
      {1024, 2048, {244.0, 384.0, 529.5, 665.7}},
      {1024, 4096, {347.7, 494.4, 639.1, 751.9}},
      {2048, 512, {150.1, 257.6, 354.1, 458.1}},
      {2048, 1024, {244.9, 386.8, 535.3, 663.6}},
      {2048, 2048, {348.6, 498.0, 641.0, 752.2}},
      {2048, 4096, {449.3, 596.5, 725.5, 752.3}},
      {4096, 512, {240.1, 377.5, 531.0, 662.0}},
      {4096, 1024, {354.6, 497.6, 643.7, 751.7}},
      {4096, 2048, {449.6, 604.6, 727.5, 759.4}},
      {4096, 4096, {551.8, 685.2, 735.6, 780.2}},
  };
  std::vector<MeasuredGemm> gemms;
  for (const Row& row : kRows)
    for (int i = 0; i < 4; ++i)
      gemms.push_back({row.m, row.n, 512.0 * (1 << i), 1, row.tflops[i]});
  return gemms;
}

// The GEMM shares: the largest bf16 matmul throughput `mamf-finder.py` found over shapes
// (S. Bekman, "Machine Learning Engineering", compute/accelerator, "Maximum Achievable Matmul
// FLOPS comparison table"): A100 SXM 267.9 of 312 TFLOP/s (85.9%), H100 SXM 792.1 of 989
// (80.1%); the H200 shares the H100's SMs and clocks. Memory-bound kernels: 88% of HBM
// bandwidth, what a streaming kernel reached on an A100-80GB SXM by CUDA events and Nsight
// Compute alike (1.80 of 2.04 TB/s, NVIDIA developer forum, "Trouble to reach peak bandwidth of
// A100", 2025), taken for the other GPUs too (not measured on them).
//
// Memory: an HBM capacity on a datasheet ("16 GB", "80 GB", "141 GB") counts GiB, as HBM
// stacks hold powers of two of them; the cards report a little less to programs (the driver's
// and ECC's reserve: nvidia-smi shows 16,160 MiB on a V100-16GB, 81,559 MiB on an H100 80GB and
// 143,771 MiB on an H200), which the memory model leaves to the user's own headroom.
DeviceSpec GpuPreset(const std::string& name) {
  // V100 SXM2: 125 TFLOP/s fp16 tensor-core peak, 16 GB HBM2 at 900 GB/s (NVIDIA V100
  // datasheet).
  if (name == "V100-16GB") return Gpu(name, 16 * kGiB, 1.0, 125e12, 0, 900e9, 80, 0, 1);
  // A100 SXM4: 312 TFLOP/s dense bf16/fp16, no fp8; 40 GB HBM2 at 1,555 GB/s or 80 GB HBM2e
  // at 2,039 GB/s; 108 SMs (NVIDIA A100 datasheet and architecture whitepaper).
  if (name == "A100-40GB") return Gpu(name, 40 * kGiB, 2.5, 312e12, 0, 1555e9, 108, 0.859, 0.88);
  if (name == "A100-80GB") return Gpu(name, 80 * kGiB, 2.5, 312e12, 0, 2039e9, 108, 0.859, 0.88);
  // H100 SXM5: 989 TFLOP/s dense bf16/fp16, 1,979 dense fp8, 80 GB HBM3 at 3.35 TB/s, 132 SMs;
  // H200 SXM: the same compute, 141 GB HBM3e at 4.8 TB/s (NVIDIA H100 and H200 datasheets).
  // Their GEMMs run at the rates of HopperGemms (above), the best-shape share staying for a
  // cluster file that drops the table.
  if (name == "H100-SXM-80GB" || name == "H200") {
    const bool h100 = name == "H100-SXM-80GB";
    DeviceSpec d = Gpu(name, (h100 ? 80 : 141) * kGiB, 6.0, 989e12, 1979e12,
                       h100 ? 3350e9 : 4800e9, 132, 0.801, 0.88);
    d.gemm_table = HopperGemms();
    return d;
  }
  std::string names;
  for (const auto& n : DevicePresetNames()) names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown device preset \"" + name + "\" (expected one of " + names + ")");
}

// Tensor-parallel collectives among an HGX H100's 8 GPUs on NVSwitch as XLA's GPU cost model
// has them (openxla/xla, xla/service/gpu/model/collective_interpolator_data.h, its "sm_90"
// table since commit 355ea80fdd, June 2025; its April 2025 version was within 0.3% at the one
// size compared): each collective timed by xla/tools/collective_perf_table_gen on one H100
// server, all 8 GPUs at once in groups of 2, 4 or 8, on f32 tensors of 2^20 to 2^31 bytes (the
// whole tensor: an all-gather's output, a reduce-scatter's input), rounded to 0.1 us. At 16 MiB
// and below they take 1.5 to 3 times what a ring at a fixed 300 GB/s of bus bandwidth would
// (some 20-50 us of fixed cost); from 256 MiB the groups of 8 reach 300-350 GB/s of bus bandwidth
// gathering and scattering and 370-400 all-reducing (NCCL all-reduces by NVLink SHARP there,
// NVIDIA/nccl-tests issue #212). XLA keys the table by compute capability, so the H200's servers
// take it too. {kind, ranks, us at 2^20 ... 2^31 bytes}.
std::vector<CollectiveTable> HopperCollectives() {
  struct Row {
    const char* kind;
    int ranks;
    double us[12];
  };
  static const Row kRows[] = {
      {"all-reduce", 2,
       {21.0, 44.1, 43.1, 72.9, 101.1, 187.8,
        330.3, 620.8, 1181.5, 2309.4, 4432.5, 8580.0}},
      {"all-gather", 2,
       {17.5, 25.6, 30.7, 40.2, 60.4, 96.4,
        161.1, 295.4, 549.3, 1049.4, 1996.6, 3904.8}},
      {"reduce-scatter", 2,
       {15.7, 30.7, 31.7, 42.7, 68.0, 126.1,
        220.9, 406.3, 772.7, 1467.6, 2756.3, 5232.3}},
      {"all-reduce", 4,
       {43.5, 59.1, 59.2, 85.0, 152.8, 218.2,
        394.7, 738.2, 1419.6, 2777.1, 5415.0, 10654.0}},
      {"all-gather", 4,
       {20.5, 28.6, 42.2, 56.7, 70.0, 113.3,
        195.8, 350.1, 666.3, 1268.0, 2473.0, 4846.6}},
      {"reduce-scatter", 4,
       {29.1, 22.5, 42.4, 54.8, 69.8, 123.6,
        224.4, 404.4, 774.1, 1489.9, 2892.4, 5604.3}},
      {"all-reduce", 8,
       {51.9, 57.3, 68.7, 104.7, 145.3, 225.9,
        379.8, 670.1, 1262.2, 2431.6, 4720.9, 9338.2}},
      {"all-gather", 8,
       {31.1, 31.6, 47.1, 65.1, 82.2, 129.4,
        213.6, 390.2, 729.3, 1392.3, 2730.3, 5343.4}},
      {"reduce-scatter", 8,
       {20.4, 34.4, 35.6, 59.3, 86.6, 133.5,
        218.6, 411.5, 771.1, 1496.2, 2920.9, 5710.0}},
  };
  std::vector<CollectiveTable> tables;
  for (const Row& row : kRows) {
    CollectiveTable t;
    t.kind = row.kind;
    t.times.ranks = row.ranks;
    for (int i = 0; i < 12; ++i) {
      t.times.bytes.push_back(std::ldexp(1.0, 20 + i));
      t.times.seconds.push_back(row.us[i] * 1e-6);
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

// A DGX server: 8 GPUs on NVSwitch, each with its own NIC (rail-optimised, as Selene). The
// level-0 collective bandwidth: nccl-tests' all_reduce busbw on 8 A100 SXM over NVSwitch, about
// 200 GB/s of the links' 300 (NVIDIA/nccl-tests issues #149 and #178); the same two-thirds of
// NVLink 4's 450 GB/s is assumed for the H100 and H200, whose servers' tensor-parallel
// collectives are charged by HopperCollectives' measured times instead. The channels a
// collective holds: NCCL 2.11 built 24 ring channels among 8 A100 SXM on NVSwitch (its log in
// NVIDIA/nccl-tests issue #100, "Channel 23/24"); for the H100 and H200, NCCL's maximum of 32
// channels (MAXCHANNELS) is assumed, not seen in a log.
Cluster Dgx(const std::string& name, const std::string& gpu, double nvlink_gbps, double nic_gbps,
            int channels, int servers) {
  Cluster c = TwoLevel(name, GpuPreset(gpu), 8, nvlink_gbps, "nvlink", servers, 8 * nic_gbps,
                       "infiniband");
  c.levels[0].collective_bandwidth_gbps = nvlink_gbps * 2 / 3;
  c.levels[0].collective_channels = channels;
  if (gpu == "H100-SXM-80GB" || gpu == "H200") c.levels[0].collective_tables = HopperCollectives();
  return c;
}

}  // namespace

DeviceSpec DevicePreset(const std::string& name) { return GpuPreset(name); }

std::vector<std::string> DevicePresetNames() {
  return {"V100-16GB", "A100-40GB", "A100-80GB", "H100-SXM-80GB", "H200"};
}

std::vector<std::string> ClusterPresetNames() {
  return {"cluster-a", "cluster-b", "p3.16xlarge", "dgx-a100", "dgx-a100-40gb", "dgx-h100",
          "dgx-h200"};
}

Cluster ClusterPreset(const std::string& preset, int servers) {
  if (servers < 1) throw InputError("cluster preset " + preset + ": servers must be >= 1");
  // PipeDream (SOSP'19) section 5.1: Cluster-A has 4 V100 per server on PCIe and 10 Gbps
  // Ethernet between servers; Cluster-B has 8 V100 per server with NVLink and 25 Gbps.
  if (preset == "cluster-a")
    return TwoLevel("cluster-a", GpuPreset("V100-16GB"), 4, 100, "pcie", servers, 10, "ethernet");
  if (preset == "cluster-b")
    return TwoLevel("cluster-b", GpuPreset("V100-16GB"), 8, 1200, "nvlink", servers, 25, "ethernet");
  // PipeDream-2BW (ICML'21) section 5: AWS p3.16xlarge, 8 V100-16GB with NVLink, 25 Gbps.
  if (preset == "p3.16xlarge")
    return TwoLevel("p3.16xlarge", GpuPreset("V100-16GB"), 8, 1200, "nvlink", servers, 25, "ethernet");
  // DGX A100 (Selene's servers): NVLink 3, 300 GB/s per direction; 8 x 200 Gb/s HDR IB.
  if (preset == "dgx-a100") return Dgx(preset, "A100-80GB", 2400, 200, 24, servers);
  if (preset == "dgx-a100-40gb") return Dgx(preset, "A100-40GB", 2400, 200, 24, servers);
  // DGX H100 / H200: NVLink 4, 450 GB/s per direction; 8 x 400 Gb/s NDR IB.
  if (preset == "dgx-h100") return Dgx(preset, "H100-SXM-80GB", 3600, 400, 32, servers);
  if (preset == "dgx-h200") return Dgx(preset, "H200", 3600, 400, 32, servers);
  std::string names;
  for (const auto& n : ClusterPresetNames()) names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown cluster preset \"" + preset + "\" (expected one of " + names + ")");
}

namespace {

void ReadDevice(JsonReader& r, DeviceSpec& d) {
  if (r.Has("preset")) {
    const std::string preset = r.Choice("preset", DevicePresetNames());
    d = GpuPreset(preset);
  }
  d.name = r.OptionalString("name", d.name);
  d.memory_bytes = r.OptionalPositiveNumber("memory_bytes", d.memory_bytes);
  d.relative_speed = r.OptionalPositiveNumber("relative_speed", d.relative_speed);
  d.peak_flops = r.OptionalPositiveNumber("peak_flops", d.peak_flops);
  d.flops_efficiency = r.OptionalPositiveNumber("flops_efficiency", d.flops_efficiency);
  if (d.flops_efficiency > 1) r.FailAt("flops_efficiency", "expected a number in (0, 1]");
  d.memory_bandwidth_bytes_per_s =
      r.OptionalPositiveNumber("memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s);
  d.peak_flops_fp8 = r.OptionalNonNegativeNumber("peak_flops_fp8", d.peak_flops_fp8);
  d.gemm_efficiency = r.OptionalNonNegativeNumber("gemm_efficiency", d.gemm_efficiency);
  if (d.gemm_efficiency > 1) r.FailAt("gemm_efficiency", "expected a number in [0, 1]");
  if (r.Has("multiprocessors"))
    d.multiprocessors = r.OptionalInteger("multiprocessors", 0, kMaxCount, d.multiprocessors);
  d.memory_bandwidth_efficiency =
      r.OptionalPositiveNumber("memory_bandwidth_efficiency", d.memory_bandwidth_efficiency);
  if (r.Has("gemm_table")) {
    d.gemm_table.clear();
    for (JsonReader& e : r.Array("gemm_table")) {
      MeasuredGemm g;
      g.m = e.PositiveNumber("m");
      g.n = e.PositiveNumber("n");
      g.k = e.PositiveNumber("k");
      g.batch = e.OptionalPositiveNumber("batch", 1);
      g.tflops = e.PositiveNumber("tflops");
      e.Finish();
      d.gemm_table.push_back(g);
    }
  }
  if (d.memory_bandwidth_efficiency > 1)
    r.FailAt("memory_bandwidth_efficiency", "expected a number in (0, 1]");
  r.Finish();
}

void ReadAllReduceTable(JsonReader& r, AllReduceTable& t) {
  t.ranks = r.Integer("ranks", 1, kMaxDevices);
  if (t.ranks < 2) r.FailAt("ranks", "expected at least 2 ranks, got " + std::to_string(t.ranks));
  t.bytes.clear();
  t.seconds.clear();
  for (JsonReader& b : r.Array("bytes")) t.bytes.push_back(b.AsPositiveNumber());
  for (JsonReader& s : r.Array("seconds")) t.seconds.push_back(s.AsPositiveNumber());
  if (t.bytes.size() < 2) r.FailAt("bytes", "expected at least 2 sizes");
  if (t.seconds.size() != t.bytes.size())
    r.FailAt("seconds", "expected one time per size (" + std::to_string(t.bytes.size()) +
                            "), got " + std::to_string(t.seconds.size()));
  for (size_t i = 1; i < t.bytes.size(); ++i)
    if (!(t.bytes[i] > t.bytes[i - 1]))
      r.FailAt("bytes", "expected strictly increasing sizes, got " +
                            JsonText(nlohmann::json(t.bytes[i])) + " after " +
                            JsonText(nlohmann::json(t.bytes[i - 1])));
  r.Finish();
}

void ReadLevel(JsonReader& r, ClusterLevel& l) {
  l.name = r.OptionalString("name", l.name);
  l.count = r.Integer("count", 1, kMaxDevices);
  l.bandwidth_gbps = r.PositiveNumber("bandwidth_gbps");
  if (l.bandwidth_gbps < kMinBandwidthGbps || l.bandwidth_gbps > kMaxBandwidthGbps)
    r.FailAt("bandwidth_gbps", "expected a bandwidth from 1e-06 to 1e+06 Gbit/s (pipetwin's "
                               "limits for a link), got " + DescribeJson(r.value()["bandwidth_gbps"]));
  l.latency_us = r.OptionalNonNegativeNumber("latency_us", l.latency_us);
  l.link = r.OptionalChoice("link", {"nvlink", "pcie", "ethernet", "infiniband", "loopback"},
                            l.link);
  l.collective_bandwidth_gbps =
      r.OptionalNonNegativeNumber("collective_bandwidth_gbps", l.collective_bandwidth_gbps);
  if (l.collective_bandwidth_gbps > kMaxBandwidthGbps)
    r.FailAt("collective_bandwidth_gbps", "expected at most 1e+06 Gbit/s (pipetwin's limit)");
  if (r.Has("collective_channels"))
    l.collective_channels = r.OptionalInteger("collective_channels", 0, kMaxCount, 0);
  if (auto a = r.OptionalMember("allreduce")) ReadAllReduceTable(*a, l.allreduce);
  if (auto a = r.OptionalMember("allreduce_round_robin"))
    ReadAllReduceTable(*a, l.allreduce_round_robin);
  if (r.Has("collective_tables")) {
    l.collective_tables.clear();
    for (JsonReader& e : r.Array("collective_tables")) {
      CollectiveTable t;
      t.kind = e.Choice("kind", {"all-reduce", "all-gather", "reduce-scatter"});
      ReadAllReduceTable(e, t.times);
      if (t.times.ranks > l.count)
        e.FailAt("ranks", "expected at most the level's " + std::to_string(l.count) +
                              " devices, got " + std::to_string(t.times.ranks));
      for (const CollectiveTable& other : l.collective_tables)
        if (other.kind == t.kind && other.times.ranks == t.times.ranks)
          e.FailAt("ranks", "expected one " + t.kind + " table per group size, got a second of " +
                                std::to_string(t.times.ranks) + " ranks");
      l.collective_tables.push_back(std::move(t));
    }
  }
  r.Finish();
}

}  // namespace

Cluster ClusterFromJson(const nlohmann::json& doc, const std::string& file,
                        const std::string& path) {
  JsonReader root(doc, file, path);
  Cluster c;
  if (root.Has("preset")) {
    std::string preset = root.String("preset");
    int servers = root.OptionalInteger("servers", 1, kMaxDevices, 1);
    try {
      c = ClusterPreset(preset, servers);
    } catch (const InputError& e) {
      root.FailAt("preset", e.what());
    }
  }
  c.name = root.OptionalString("name", c.name);
  if (auto d = root.OptionalMember("device")) ReadDevice(*d, c.device);
  if (root.Has("levels")) {
    std::vector<JsonReader> levels = root.Array("levels");
    if (levels.empty()) root.FailAt("levels", "expected at least one level, got none");
    std::vector<ClusterLevel> read(levels.size());
    for (size_t i = 0; i < levels.size(); ++i) {
      if (i < c.levels.size()) read[i] = c.levels[i];
      ReadLevel(levels[i], read[i]);
    }
    c.levels = std::move(read);
  } else if (c.levels.empty()) {
    root.FailAt("levels", "missing (required unless a preset is given)");
  }
  c.network_model = root.OptionalChoice("network_model", {"datacenter", "contention_free", "tcp"},
                                        c.network_model);
  c.launch_overhead_us = root.OptionalNonNegativeNumber("launch_overhead_us", c.launch_overhead_us);
  c.communication_overhead_us =
      root.OptionalNonNegativeNumber("communication_overhead_us", c.communication_overhead_us);
  if (root.Has("shared_cores"))
    c.shared_cores = root.OptionalInteger("shared_cores", 1, kMaxCount, 1);
  c.round_robin_slice_ms =
      root.OptionalNonNegativeNumber("round_robin_slice_ms", c.round_robin_slice_ms);
  c.oversubscribed_message_us =
      root.OptionalNonNegativeNumber("oversubscribed_message_us", c.oversubscribed_message_us);
  c.busy_sender_message_us =
      root.OptionalNonNegativeNumber("busy_sender_message_us", c.busy_sender_message_us);
  if (root.Has("calibration")) c.calibration = root.Member("calibration").value();
  if (auto spread = root.OptionalMember("spread")) {
    // Relative half-widths below 1: an edge of the band must stay a positive time and rate.
    const auto fraction = [&spread](const char* key) {
      const double v = spread->OptionalNonNegativeNumber(key, 0);
      if (v >= 1) spread->FailAt(key, "expected a relative spread below 1");
      return v;
    };
    c.spread.compute = fraction("compute");
    c.spread.message = fraction("message");
    c.spread.bandwidth = fraction("bandwidth");
    c.spread.allreduce = fraction("allreduce");
    c.spread.oversubscribed_message = fraction("oversubscribed_message");
    c.spread.busy_sender_message = fraction("busy_sender_message");
    spread->Finish();
  }
  // The levels' counts multiply into the devices, which must stay countable.
  int64_t devices = 1;
  for (const ClusterLevel& l : c.levels) {
    devices *= l.count;  // each count <= 2^20, so no product of two passes 2^40 before this check
    if (devices > kMaxDevices.max)
      root.FailAt(root.Has("levels") ? "levels" : "servers",
                  "the levels multiply to more than " + std::to_string(kMaxDevices.max) +
                      " devices (pipetwin's limit for " + kMaxDevices.what + ")");
  }
  root.Finish();
  return c;
}

nlohmann::json ClusterToJson(const Cluster& c) {
  nlohmann::json levels = nlohmann::json::array();
  for (const ClusterLevel& l : c.levels) {
    levels.push_back({{"name", l.name},
                      {"count", l.count},
                      {"bandwidth_gbps", l.bandwidth_gbps},
                      {"latency_us", l.latency_us},
                      {"link", l.link}});
    if (l.collective_bandwidth_gbps > 0)
      levels.back()["collective_bandwidth_gbps"] = l.collective_bandwidth_gbps;
    if (l.collective_channels > 0) levels.back()["collective_channels"] = l.collective_channels;
    const auto table = [](const AllReduceTable& t) {
      return nlohmann::json{{"ranks", t.ranks}, {"bytes", t.bytes}, {"seconds", t.seconds}};
    };
    if (!l.allreduce.empty()) levels.back()["allreduce"] = table(l.allreduce);
    if (!l.allreduce_round_robin.empty())
      levels.back()["allreduce_round_robin"] = table(l.allreduce_round_robin);
    if (!l.collective_tables.empty()) {
      nlohmann::json& tables = levels.back()["collective_tables"] = nlohmann::json::array();
      for (const CollectiveTable& t : l.collective_tables) {
        tables.push_back({{"kind", t.kind}});
        tables.back().update(table(t.times));
      }
    }
  }
  nlohmann::json out = {{"name", c.name},
          {"device",
           {{"name", c.device.name},
            {"memory_bytes", c.device.memory_bytes},
            {"relative_speed", c.device.relative_speed},
            {"peak_flops", c.device.peak_flops},
            {"flops_efficiency", c.device.flops_efficiency},
            {"memory_bandwidth_bytes_per_s", c.device.memory_bandwidth_bytes_per_s}}},
          {"levels", levels},
          {"network_model", c.network_model},
          {"launch_overhead_us", c.launch_overhead_us},
          {"communication_overhead_us", c.communication_overhead_us}};
  nlohmann::json& device = out["device"];
  if (c.device.peak_flops_fp8 > 0) device["peak_flops_fp8"] = c.device.peak_flops_fp8;
  if (c.device.gemm_efficiency > 0) device["gemm_efficiency"] = c.device.gemm_efficiency;
  if (c.device.multiprocessors > 0) device["multiprocessors"] = c.device.multiprocessors;
  if (c.device.memory_bandwidth_efficiency != 1)
    device["memory_bandwidth_efficiency"] = c.device.memory_bandwidth_efficiency;
  if (!c.device.gemm_table.empty()) {
    device["gemm_table"] = nlohmann::json::array();
    for (const MeasuredGemm& g : c.device.gemm_table)
      device["gemm_table"].push_back(
          {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}, {"tflops", g.tflops}});
  }
  if (c.shared_cores > 0) out["shared_cores"] = c.shared_cores;
  if (c.round_robin_slice_ms > 0) out["round_robin_slice_ms"] = c.round_robin_slice_ms;
  if (c.oversubscribed_message_us > 0)
    out["oversubscribed_message_us"] = c.oversubscribed_message_us;
  if (c.busy_sender_message_us > 0) out["busy_sender_message_us"] = c.busy_sender_message_us;
  if (!c.spread.empty())
    out["spread"] = {{"compute", c.spread.compute},
                     {"message", c.spread.message},
                     {"bandwidth", c.spread.bandwidth},
                     {"allreduce", c.spread.allreduce},
                     {"oversubscribed_message", c.spread.oversubscribed_message},
                     {"busy_sender_message", c.spread.busy_sender_message}};
  if (!c.calibration.is_null()) out["calibration"] = c.calibration;
  return out;
}

Cluster Cluster::AtSpreadEdge(int side) const {
  Cluster c = *this;
  const double s = side > 0 ? 1 : -1;
  const auto longer = [s](double spread) { return 1 + s * spread; };   // times
  const auto lower = [s](double spread) { return 1 - s * spread; };    // rates
  c.device.peak_flops *= lower(spread.compute);
  c.device.memory_bandwidth_bytes_per_s *= lower(spread.compute);
  c.communication_overhead_us *= longer(spread.message);
  c.oversubscribed_message_us *= longer(spread.oversubscribed_message);
  c.busy_sender_message_us *= longer(spread.busy_sender_message);
  if (!c.levels.empty()) {
    ClusterLevel& calibrated = c.levels[0];
    calibrated.latency_us *= longer(spread.message);
    calibrated.bandwidth_gbps *= lower(spread.bandwidth);
    for (double& seconds : calibrated.allreduce.seconds) seconds *= longer(spread.allreduce);
    for (double& seconds : calibrated.allreduce_round_robin.seconds)
      seconds *= longer(spread.allreduce);
  }
  return c;
}

Cluster TensorParallelView(const Cluster& cluster, int tensor, const std::string& file) {
  if (tensor <= 1) return cluster;
  const int per_server = cluster.levels.empty() ? 1 : cluster.levels[0].count;
  if (per_server % tensor != 0)
    throw InputError(file, "cluster.levels[0].count",
                     "a tensor-parallel group of " + std::to_string(tensor) +
                         " devices must fit in one server (Megatron places it there, on the "
                         "server's links), but a server here has " + std::to_string(per_server) +
                         " devices: use a tensor-parallel size that divides it");
  Cluster view = cluster;
  view.name = cluster.name + " (tensor-parallel groups of " + std::to_string(tensor) + ")";
  view.levels[0].count = per_server / tensor;
  for (size_t l = 1; l < view.levels.size(); ++l) view.levels[l].bandwidth_gbps /= tensor;
  return view;
}

Cluster LoadClusterFile(const std::string& path) {
  return ClusterFromJson(ParseJsonFile(path), path);
}

Cluster ShapeCalibratedMachine(const Cluster& calibrated, const std::string& file, int devices,
                               int hosts, double link_gbps, double link_latency_us) {
  Cluster cluster = calibrated;
  if (hosts > 1) {
    if (cluster.levels.size() != 1 || devices % hosts != 0)
      throw InputError(file, "levels",
                       "splitting into hosts needs a one-level calibrated machine and workers "
                       "divisible by the hosts");
    cluster.levels[0].count = devices / hosts;
    ClusterLevel link;
    link.name = "link";
    link.count = hosts;
    link.bandwidth_gbps = link_gbps;
    link.latency_us = link_latency_us;
    link.link = "ethernet";
    cluster.levels.push_back(link);
    cluster.shared_cores = std::max(1, cluster.shared_cores / hosts);
    cluster.name += " as " + std::to_string(hosts) + " hosts";
    return cluster;
  }
  if (cluster.levels.size() == 1) {
    cluster.levels[0].count = devices;  // one machine, as pipetwin calibrate writes it
    // A GPU machine (calibrate --device cuda): each GPU's memory split among the workers on it
    // (LOCAL_RANK % GPUs, the first GPUs taking one more when they do not divide).
    const double gpu_memory = calibrated.calibration.is_object()
                                  ? calibrated.calibration.value("gpu_memory_bytes", 0.0)
                                  : 0.0;
    if (gpu_memory > 0 && cluster.shared_cores > 0)
      cluster.device.memory_bytes =
          gpu_memory / ((devices + cluster.shared_cores - 1) / cluster.shared_cores);
  } else if (cluster.DeviceCount() < devices) {
    throw InputError(file, "levels",
                     "expected at least " + std::to_string(devices) +
                         " devices (the scenario's), got " + std::to_string(cluster.DeviceCount()));
  }
  return cluster;
}

}  // namespace pipetwin
