#include "partition/model/cluster.h"

#include <gtest/gtest.h>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"

namespace pipetwin {
namespace {

TEST(Cluster, PresetsMatchThePapers) {
  Cluster a = ClusterPreset("cluster-a", 4);  // PipeDream SOSP'19 section 5.1
  EXPECT_EQ(a.DeviceCount(), 16);
  EXPECT_EQ(a.levels[0].count, 4);
  EXPECT_EQ(a.levels[0].link, "pcie");
  EXPECT_DOUBLE_EQ(a.levels[1].bandwidth_bytes_per_s(), 1.25e9);  // 10 Gbps
  Cluster b = ClusterPreset("cluster-b", 2);
  EXPECT_EQ(b.DeviceCount(), 16);
  EXPECT_EQ(b.levels[0].link, "nvlink");
  EXPECT_DOUBLE_EQ(b.levels[1].bandwidth_gbps, 25);
  Cluster p3 = ClusterPreset("p3.16xlarge", 8);  // PipeDream-2BW ICML'21 section 5
  EXPECT_EQ(p3.DeviceCount(), 64);
  EXPECT_DOUBLE_EQ(p3.device.memory_bytes, 16.0 * (1 << 30));  // "16 GB" HBM2: 16 GiB
  EXPECT_EQ(ClusterPreset("dgx-h100", 128).DeviceCount(), 1024);
  // The A100-80GB has 81,920 MiB (what nvidia-smi reports): 80 GiB, not 80e9 bytes.
  EXPECT_EQ(ClusterPreset("dgx-a100", 1).device.memory_bytes, 80.0 * (1 << 30));
  EXPECT_EQ(ClusterPreset("dgx-a100-40gb", 1).device.memory_bytes, 40.0 * (1 << 30));
  EXPECT_EQ(ClusterPreset("dgx-h200", 1).device.memory_bytes, 141.0 * (1 << 30));  // "141 GB"
  EXPECT_DOUBLE_EQ(ClusterPreset("dgx-h100", 1).device.peak_flops_fp8, 1979e12);
  EXPECT_DOUBLE_EQ(ClusterPreset("dgx-h200", 1).device.memory_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_EQ(a.DevicesPerUnit(0), 4);
}

TEST(Cluster, JsonRoundTripAndPresetOverrides) {
  Cluster c = ClusterFromJson(
      nlohmann::json::parse(R"({"preset": "cluster-a", "servers": 2,
                                "levels": [{"count": 4, "bandwidth_gbps": 50},
                                           {"count": 2, "bandwidth_gbps": 1}],
                                "device": {"memory_bytes": 8e9}})"),
      "c.json");
  EXPECT_EQ(c.DeviceCount(), 8);
  EXPECT_DOUBLE_EQ(c.levels[0].bandwidth_gbps, 50);
  EXPECT_EQ(c.levels[0].link, "pcie");  // kept from the preset
  EXPECT_DOUBLE_EQ(c.device.memory_bytes, 8e9);
  EXPECT_EQ(ClusterToJson(ClusterFromJson(ClusterToJson(c), "x")), ClusterToJson(c));
  EXPECT_FALSE(ClusterToJson(c).contains("shared_cores"));
  // A calibrated machine: workers sharing 2 cores, the probe's record kept as written.
  c.shared_cores = 2;
  c.calibration = {{"loopback", {{"fit_residual", 0.01}}}};
  const Cluster back = ClusterFromJson(ClusterToJson(c), "x");
  EXPECT_EQ(back.shared_cores, 2);
  EXPECT_EQ(back.calibration, c.calibration);
  c.oversubscribed_message_us = 850;
  EXPECT_EQ(ClusterFromJson(ClusterToJson(c), "x").oversubscribed_message_us, 850);
  EXPECT_FALSE(ClusterToJson(c).contains("busy_sender_message_us"));
  c.busy_sender_message_us = 310;
  EXPECT_EQ(ClusterFromJson(ClusterToJson(c), "x").busy_sender_message_us, 310);
  EXPECT_FALSE(ClusterToJson(c).contains("round_robin_slice_ms"));
  c.round_robin_slice_ms = 100;
  EXPECT_EQ(ClusterFromJson(ClusterToJson(c), "x").round_robin_slice_ms, 100);
  // A measured all-reduce table on the host level travels with it.
  c.levels[0].allreduce = {2, {4096, 1 << 20, 16 << 20}, {1e-4, 4e-3, 1.3e-2}};
  const Cluster with_table = ClusterFromJson(ClusterToJson(c), "x");
  EXPECT_EQ(with_table.levels[0].allreduce.ranks, 2);
  EXPECT_EQ(with_table.levels[0].allreduce.seconds, c.levels[0].allreduce.seconds);
  EXPECT_TRUE(with_table.levels[1].allreduce.empty());
  EXPECT_TRUE(with_table.levels[0].allreduce_round_robin.empty());
  EXPECT_FALSE(ClusterToJson(with_table)["levels"][0].contains("allreduce_round_robin"));
  c.levels[0].allreduce_round_robin = {2, {4096, 1 << 20}, {5e-5, 2e-3}};
  const Cluster with_both = ClusterFromJson(ClusterToJson(c), "x");
  EXPECT_EQ(with_both.levels[0].allreduce_round_robin.seconds,
            c.levels[0].allreduce_round_robin.seconds);
  EXPECT_EQ(with_both.levels[0].allreduce.seconds, c.levels[0].allreduce.seconds);
  // So do measured collectives of other kinds, each with its group size.
  c.levels[0].collective_tables = {{"all-gather", {2, {1 << 20, 1 << 24}, {2e-5, 6e-5}}},
                                   {"all-reduce", {2, {1 << 20, 1 << 24}, {3e-5, 1e-4}}}};
  const Cluster with_collectives = ClusterFromJson(ClusterToJson(c), "x");
  ASSERT_EQ(with_collectives.levels[0].collective_tables.size(), 2u);
  EXPECT_EQ(with_collectives.levels[0].collective_tables[1].kind, "all-reduce");
  EXPECT_EQ(with_collectives.levels[0].collective_tables[1].times.seconds,
            c.levels[0].collective_tables[1].times.seconds);
  EXPECT_EQ(ClusterToJson(with_collectives), ClusterToJson(c));
}

// The calibrated figures' spread travels with the file, and each edge moves every calibrated
// figure by its own relative spread, the slow edge slower; a level the user added stays.
TEST(Cluster, TheSpreadEdgesMoveTheCalibratedFiguresOnly) {
  Cluster c = ClusterPreset("cluster-a", 2);
  c.levels[0].allreduce = {2, {1e3, 1e6}, {1e-4, 2e-3}};
  c.levels[0].allreduce_round_robin = {2, {1e3, 1e6}, {5e-5, 1e-3}};
  c.communication_overhead_us = 20;
  c.oversubscribed_message_us = 100;
  c.busy_sender_message_us = 300;
  c.spread = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
  const Cluster back = ClusterFromJson(ClusterToJson(c), "x");
  EXPECT_DOUBLE_EQ(back.spread.compute, 0.1);
  EXPECT_DOUBLE_EQ(back.spread.oversubscribed_message, 0.5);
  EXPECT_DOUBLE_EQ(back.spread.busy_sender_message, 0.6);
  EXPECT_FALSE(ClusterToJson(ClusterPreset("cluster-a", 2)).contains("spread"));

  const Cluster slow = c.AtSpreadEdge(+1), fast = c.AtSpreadEdge(-1);
  EXPECT_DOUBLE_EQ(slow.device.peak_flops, 0.9 * c.device.peak_flops);
  EXPECT_DOUBLE_EQ(fast.device.memory_bandwidth_bytes_per_s,
                   1.1 * c.device.memory_bandwidth_bytes_per_s);
  EXPECT_DOUBLE_EQ(slow.levels[0].latency_us, 1.2 * c.levels[0].latency_us);
  EXPECT_DOUBLE_EQ(slow.communication_overhead_us, 24);
  EXPECT_DOUBLE_EQ(fast.communication_overhead_us, 16);
  EXPECT_DOUBLE_EQ(slow.levels[0].bandwidth_gbps, 0.7 * c.levels[0].bandwidth_gbps);
  EXPECT_DOUBLE_EQ(slow.levels[0].allreduce.seconds[1], 1.4 * 2e-3);
  EXPECT_DOUBLE_EQ(fast.levels[0].allreduce.seconds[0], 0.6 * 1e-4);
  EXPECT_DOUBLE_EQ(slow.levels[0].allreduce_round_robin.seconds[1], 1.4 * 1e-3);
  EXPECT_DOUBLE_EQ(slow.oversubscribed_message_us, 150);
  EXPECT_DOUBLE_EQ(slow.busy_sender_message_us, 480);
  EXPECT_DOUBLE_EQ(fast.busy_sender_message_us, 120);
  EXPECT_DOUBLE_EQ(slow.levels[1].bandwidth_gbps, c.levels[1].bandwidth_gbps);
  EXPECT_DOUBLE_EQ(slow.levels[1].latency_us, c.levels[1].latency_us);
  // No spread: both edges are the cluster itself.
  EXPECT_EQ(ClusterToJson(ClusterPreset("cluster-a", 2).AtSpreadEdge(+1)),
            ClusterToJson(ClusterPreset("cluster-a", 2)));
}

TEST(Cluster, AllReduceTableInterpolatesBetweenItsSizes) {
  const AllReduceTable t{2, {1e3, 1e6, 2e6}, {1e-4, 2e-3, 5e-3}};
  EXPECT_DOUBLE_EQ(t.Seconds(10), 1e-4);    // below the smallest size: its time
  EXPECT_DOUBLE_EQ(t.Seconds(1e3), 1e-4);
  EXPECT_DOUBLE_EQ(t.Seconds(1.5e6), 3.5e-3);
  EXPECT_DOUBLE_EQ(t.Seconds(2e6), 5e-3);
  EXPECT_DOUBLE_EQ(t.Seconds(4e6), 1.1e-2);  // beyond: the last segment's slope
}

std::string ErrorOf(const std::string& text) {
  try {
    ClusterFromJson(nlohmann::json::parse(text), "scenario.json", "cluster");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClusterBadInput, NamesFileAndJsonPath) {
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 2, "bandwidth_gbps": 10}], "spread": {"bandwidth": 1.5}})"),
            "scenario.json: cluster.spread.bandwidth: expected a relative spread below 1");
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 2, "bandwidth_gbps": 10}], "spread": {"message": -0.1}})").substr(0, 55),
            "scenario.json: cluster.spread.message: expected a numbe");
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 2, "bandwidth_gbps": 10}], "spread": {"latency": 0.1}})").substr(0, 46),
            "scenario.json: cluster.spread.latency: unknown");
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 4, "bandwidth_gbps": 100},
                                    {"count": 4, "bandwidth_gbps": -5}]})"),
            "scenario.json: cluster.levels[1].bandwidth_gbps: expected a number > 0, got -5");
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 0, "bandwidth_gbps": 100}]})"),
            "scenario.json: cluster.levels[0].count: expected an integer from 1 to 1048576 "
            "(pipetwin's limit for devices in a cluster), got 0");
  EXPECT_EQ(ErrorOf(R"({"levels": [{"count": 2.5, "bandwidth_gbps": 100}]})"),
            "scenario.json: cluster.levels[0].count: expected an integer from 1 to 1048576 "
            "(pipetwin's limit for devices in a cluster), got 2.5");
  EXPECT_EQ(ErrorOf(R"({"levels": []})"),
            "scenario.json: cluster.levels: expected at least one level, got none");
  EXPECT_EQ(ErrorOf(R"({"name": "x"})"),
            "scenario.json: cluster.levels: missing (required unless a preset is given)");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-z"})").substr(0, 48),
            "scenario.json: cluster.preset: unknown cluster p");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "servers": 0})"),
            "scenario.json: cluster.servers: expected an integer from 1 to 1048576 (pipetwin's "
            "limit for devices in a cluster), got 0");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "bandwith": 3})"),
            "scenario.json: cluster.bandwith: unknown key");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "device": {"memory_bytes": 0}})"),
            "scenario.json: cluster.device.memory_bytes: expected a number > 0, got 0");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "network_model": "udp"})"),
            "scenario.json: cluster.network_model: expected one of datacenter, contention_free, tcp, got \"udp\"");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "shared_cores": 0})"),
            "scenario.json: cluster.shared_cores: expected an integer from 1 to 16777216 "
            "(pipetwin's limit for chunks, buckets, cores and tallies), got 0");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "oversubscribed_message_us": -1})"),
            "scenario.json: cluster.oversubscribed_message_us: expected a number >= 0, got -1");
  EXPECT_EQ(ErrorOf(R"({"preset": "cluster-a", "round_robin_slice_ms": -1})"),
            "scenario.json: cluster.round_robin_slice_ms: expected a number >= 0, got -1");
  const std::string level = R"({"levels": [{"count": 2, "bandwidth_gbps": 10, "allreduce": )";
  EXPECT_EQ(ErrorOf(level + R"({"ranks": 1, "bytes": [1, 2], "seconds": [1, 2]}}]})"),
            "scenario.json: cluster.levels[0].allreduce.ranks: expected at least 2 ranks, got 1");
  EXPECT_EQ(ErrorOf(level + R"({"ranks": 2, "bytes": [1, 2], "seconds": [1]}}]})"),
            "scenario.json: cluster.levels[0].allreduce.seconds: expected one time per size (2), "
            "got 1");
  EXPECT_EQ(ErrorOf(level + R"({"ranks": 2, "bytes": [4, 2], "seconds": [1, 2]}}]})"),
            "scenario.json: cluster.levels[0].allreduce.bytes: expected strictly increasing "
            "sizes, got 2.0 after 4.0");
  EXPECT_EQ(ErrorOf(level + R"({"ranks": 2, "bytes": [1, 2], "seconds": [1, -2]}}]})"),
            "scenario.json: cluster.levels[0].allreduce.seconds[1]: expected a number > 0, got -2");
  const std::string tables = R"({"levels": [{"count": 2, "bandwidth_gbps": 10, "collective_tables": )";
  EXPECT_EQ(ErrorOf(tables + R"([{"kind": "all-to-all", "ranks": 2, "bytes": [1, 2], "seconds": [1, 2]}]}]})"),
            "scenario.json: cluster.levels[0].collective_tables[0].kind: expected one of all-reduce, "
            "all-gather, reduce-scatter, got \"all-to-all\"");
  EXPECT_EQ(ErrorOf(tables + R"([{"kind": "all-gather", "ranks": 4, "bytes": [1, 2], "seconds": [1, 2]}]}]})"),
            "scenario.json: cluster.levels[0].collective_tables[0].ranks: expected at most the "
            "level's 2 devices, got 4");
  EXPECT_EQ(ErrorOf(tables + R"([{"kind": "all-gather", "ranks": 2, "bytes": [1, 2], "seconds": [1, 2]},
                                  {"kind": "all-gather", "ranks": 2, "bytes": [1, 3], "seconds": [1, 2]}]}]})"),
            "scenario.json: cluster.levels[0].collective_tables[1].ranks: expected one all-gather "
            "table per group size, got a second of 2 ranks");
  EXPECT_EQ(ErrorOf(tables + R"([{"kind": "all-gather", "ranks": 2, "bytes": [1, 2]}]}]})"),
            "scenario.json: cluster.levels[0].collective_tables[0].seconds: missing (required)");
}

}  // namespace
}  // namespace pipetwin
