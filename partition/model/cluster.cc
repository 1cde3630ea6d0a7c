#include "partition/model/cluster.h"

#include <algorithm>

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

DeviceSpec V100(double memory_bytes) {
  // V100 SXM2: 125 TFLOP/s fp16 tensor-core peak, 900 GB/s HBM2 (NVIDIA V100 datasheet).
  return {"V100-" + std::to_string(static_cast<int>(memory_bytes / 1e9)) + "GB", memory_bytes, 1.0,
          125e12, 0.5, 900e9};
}

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

}  // namespace

std::vector<std::string> ClusterPresetNames() {
  return {"cluster-a", "cluster-b", "p3.16xlarge", "dgx-a100", "dgx-h100"};
}

Cluster ClusterPreset(const std::string& preset, int servers) {
  if (servers < 1) throw InputError("cluster preset " + preset + ": servers must be >= 1");
  // PipeDream (SOSP'19) section 5.1: Cluster-A has 4 V100 per server on PCIe and 10 Gbps
  // Ethernet between servers; Cluster-B has 8 V100 per server with NVLink and 25 Gbps.
  if (preset == "cluster-a")
    return TwoLevel("cluster-a", V100(16e9), 4, 100, "pcie", servers, 10, "ethernet");
  if (preset == "cluster-b")
    return TwoLevel("cluster-b", V100(16e9), 8, 1200, "nvlink", servers, 25, "ethernet");
  // PipeDream-2BW (ICML'21) section 5: AWS p3.16xlarge, 8 V100-16GB with NVLink, 25 Gbps.
  if (preset == "p3.16xlarge")
    return TwoLevel("p3.16xlarge", V100(16e9), 8, 1200, "nvlink", servers, 25, "ethernet");
  if (preset == "dgx-a100") {
    // A100-80GB: 312 TFLOP/s bf16, 2,039 GB/s; NVLink 3 300 GB/s per direction; 8x200 Gb/s IB.
    return TwoLevel("dgx-a100", {"A100-80GB", 80e9, 2.5, 312e12, 0.5, 2039e9}, 8, 2400,
                    "nvlink", servers, 1600, "infiniband");
  }
  if (preset == "dgx-h100") {
    // H100 SXM 80GB: 989 TFLOP/s dense bf16, 3,350 GB/s; NVLink 4 450 GB/s per direction;
    // 8x400 Gb/s IB.
    return TwoLevel("dgx-h100", {"H100-80GB", 80e9, 6.0, 989e12, 0.5, 3350e9}, 8, 3600,
                    "nvlink", servers, 3200, "infiniband");
  }
  std::string names;
  for (const auto& n : ClusterPresetNames()) names += (names.empty() ? "" : ", ") + n;
  throw InputError("unknown cluster preset \"" + preset + "\" (expected one of " + names + ")");
}

namespace {

void ReadDevice(JsonReader& r, DeviceSpec& d) {
  d.name = r.OptionalString("name", d.name);
  d.memory_bytes = r.OptionalPositiveNumber("memory_bytes", d.memory_bytes);
  d.relative_speed = r.OptionalPositiveNumber("relative_speed", d.relative_speed);
  d.peak_flops = r.OptionalPositiveNumber("peak_flops", d.peak_flops);
  d.flops_efficiency = r.OptionalPositiveNumber("flops_efficiency", d.flops_efficiency);
  if (d.flops_efficiency > 1) r.FailAt("flops_efficiency", "expected a number in (0, 1]");
  d.memory_bandwidth_bytes_per_s =
      r.OptionalPositiveNumber("memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s);
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
  if (auto a = r.OptionalMember("allreduce")) ReadAllReduceTable(*a, l.allreduce);
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
  c.oversubscribed_message_us =
      root.OptionalNonNegativeNumber("oversubscribed_message_us", c.oversubscribed_message_us);
  if (root.Has("calibration")) c.calibration = root.Member("calibration").value();
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
    if (!l.allreduce.empty())
      levels.back()["allreduce"] = {{"ranks", l.allreduce.ranks},
                                    {"bytes", l.allreduce.bytes},
                                    {"seconds", l.allreduce.seconds}};
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
  if (c.shared_cores > 0) out["shared_cores"] = c.shared_cores;
  if (c.oversubscribed_message_us > 0)
    out["oversubscribed_message_us"] = c.oversubscribed_message_us;
  if (!c.calibration.is_null()) out["calibration"] = c.calibration;
  return out;
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
  } else if (cluster.DeviceCount() < devices) {
    throw InputError(file, "levels",
                     "expected at least " + std::to_string(devices) +
                         " devices (the scenario's), got " + std::to_string(cluster.DeviceCount()));
  }
  return cluster;
}

}  // namespace pipetwin
