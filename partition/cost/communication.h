// Link and collective costs on a cluster: what a message between two devices and a gradient
// all-reduce among a group of devices take, as a fixed part plus a part per byte (Hockney's
// t = t0 + n / r_inf). The planners' cost model charges these; the simulator moves the same
// bytes over SimGrid links of the same bandwidth and latency (sim/platform.h, sim/collective.h),
// so its closed-form tests check both.
//
//   LinearCost hop = TransferCost(cluster, 0, 1);          // hop.Ms(bytes)
//   LinearCost ring = RingAllReduceCost(cluster, {0, 8});  // across two servers
#pragma once

#include <vector>

#include "partition/model/cluster.h"

namespace pipetwin {

// ms = fixed_ms + ms_per_byte * bytes (0 when there are no bytes).
struct LinearCost {
  double fixed_ms = 0;
  double ms_per_byte = 0;
  double Ms(double bytes) const { return bytes > 0 ? fixed_ms + ms_per_byte * bytes : 0; }
};

// A point-to-point message between two devices over the innermost level that holds both: the
// level's latency plus the cluster's per-message overhead, then bytes / bandwidth. Free on one
// device.
LinearCost TransferCost(const Cluster& cluster, int device_a, int device_b);

// A ring all-reduce of a buffer among `devices`, hierarchical across the levels: reduce-scatter
// inside each unit, all-reduce of the shards across units, all-gather back. At a level where
// `group` units take part each exchanges 2 (group - 1) / group of its shard, in 2 (group - 1)
// steps of the level's latency (Patarasuk and Yuan, JPDC 2009, for the ring's 2 (r-1)/r S/B).
LinearCost RingAllReduceCost(const Cluster& cluster, const std::vector<int>& devices);

// The all-reduces of several groups that run at the same time (every stage of a pipeline after
// its batch): each as RingAllReduceCost, with each unit's uplink shared by every group crossing
// it, as the simulator's links share it (sim/platform.h): at each level a group's bytes per ms
// are divided by the most groups that cross the uplink of one of its units there.
std::vector<LinearCost> ConcurrentRingAllReduceCosts(const Cluster& cluster,
                                                     const std::vector<std::vector<int>>& groups);

}  // namespace pipetwin
