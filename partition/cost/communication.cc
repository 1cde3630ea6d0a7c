#include "partition/cost/communication.h"

#include <set>

namespace pipetwin {

LinearCost TransferCost(const Cluster& cluster, int device_a, int device_b) {
  if (device_a == device_b) return {};
  const ClusterLevel& level = cluster.levels[cluster.LinkLevel(device_a, device_b)];
  return {(level.latency_us + cluster.communication_overhead_us) * 1e-3,
          1e3 / level.bandwidth_bytes_per_s()};
}

LinearCost RingAllReduceCost(const Cluster& cluster, const std::vector<int>& devices) {
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
      cost.ms_per_byte +=
          2 * (group - 1) / group * shard * sharing * 1e3 / level.bandwidth_bytes_per_s();
      cost.fixed_ms +=
          2 * (group - 1) * (level.latency_us + cluster.communication_overhead_us) * 1e-3;
      shard /= group;
    }
    below = static_cast<double>(units.size());
  }
  return cost;
}

}  // namespace pipetwin
