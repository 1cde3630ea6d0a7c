#include "partition/cost/communication.h"

#include <algorithm>
#include <map>
#include <set>

namespace pipetwin {

LinearCost TransferCost(const Cluster& cluster, int device_a, int device_b) {
  if (device_a == device_b) return {};
  const ClusterLevel& level = cluster.levels[cluster.LinkLevel(device_a, device_b)];
  return {(level.latency_us + cluster.communication_overhead_us) * 1e-3,
          1e3 / level.bandwidth_bytes_per_s()};
}

namespace {

// RingAllReduceCost, with `crossing(l, unit)` groups sharing the uplink of a unit of level l.
template <typename Crossing>
LinearCost SharedRingCost(const Cluster& cluster, const std::vector<int>& devices,
                          const Crossing& crossing) {
  // A unit has one link at its level (a server's NIC), shared by all of its devices that take
  // part, so the bytes that cross it are shard x sharing: the whole buffer when the devices are
  // spread evenly (the simulator models the same NIC; sim/collective.cc).
  LinearCost cost;
  double below = static_cast<double>(devices.size());
  double shard = 1;
  for (size_t l = 0; l < cluster.levels.size(); ++l) {
    std::set<int> units;
    for (int d : devices) units.insert(d / cluster.DevicesPerUnit(static_cast<int>(l)));
    const double group = below / static_cast<double>(units.size());
    if (group > 1) {
      const ClusterLevel& level = cluster.levels[l];
      const double sharing = static_cast<double>(devices.size()) / below;  // devices per unit below
      // Units one level down cross this level's switch through their own uplink.
      int flows = 1;
      if (l > 0)
        for (int d : devices)
          flows = std::max(flows, crossing(l, d / cluster.DevicesPerUnit(static_cast<int>(l) - 1)));
      cost.ms_per_byte += 2 * (group - 1) / group * shard * sharing * flows * 1e3 /
                          level.bandwidth_bytes_per_s();
      cost.fixed_ms +=
          2 * (group - 1) * (level.latency_us + cluster.communication_overhead_us) * 1e-3;
      shard /= group;
    }
    below = static_cast<double>(units.size());
  }
  return cost;
}

}  // namespace

LinearCost RingAllReduceCost(const Cluster& cluster, const std::vector<int>& devices) {
  return SharedRingCost(cluster, devices, [](int, int) { return 1; });
}

std::vector<LinearCost> ConcurrentRingAllReduceCosts(const Cluster& cluster,
                                                     const std::vector<std::vector<int>>& groups) {
  // For each level l >= 1 and unit of level l-1: the groups that span more than that unit (so
  // their ring leaves it through its uplink) and have a device in it.
  std::map<std::pair<int, int>, int> crossing;
  for (const auto& g : groups) {
    for (size_t l = 1; l < cluster.levels.size(); ++l) {
      const int size = cluster.DevicesPerUnit(static_cast<int>(l) - 1);
      std::set<int> units;
      for (int d : g) units.insert(d / size);
      if (units.size() < 2) continue;
      for (int u : units) ++crossing[{static_cast<int>(l), u}];
    }
  }
  std::vector<LinearCost> out;
  for (const auto& g : groups)
    out.push_back(SharedRingCost(cluster, g, [&](int l, int unit) {
      auto it = crossing.find({l, unit});
      return it == crossing.end() ? 1 : it->second;
    }));
  return out;
}

}  // namespace pipetwin
