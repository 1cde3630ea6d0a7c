// Link and collective costs on a cluster: what a message between two devices and a gradient
// all-reduce among a group of devices take, as a fixed part plus a part per byte (Hockney's
// t = t0 + n / r_inf). The planners' cost model charges these; the simulator builds the same
// links (sim/platform.h) and runs the same ring plans (PlanAllReduce below) over them, so its
// closed-form tests check both.
//
// The links, as sim/platform.h builds them: every device has a full-duplex link of level 0 to
// its server's switch; every unit of level l - 1 (a server, a rack) has a full-duplex uplink of
// level l to the switch of its level-l unit. A message between two devices joined at level L
// crosses the sender's device link and its units' uplinks up to level L, then the receiver's
// side down; each link carries half its level's latency, so the message pays the latency of
// every level up to L, and bytes / the slowest of those links' bandwidth when it has them to
// itself. Concurrent flows share a link equally (SimGrid's max-min fairness, CM02).
//
//   LinearCost hop = TransferCost(cluster, 0, 1);          // hop.Ms(bytes)
//   LinearCost ring = RingAllReduceCost(cluster, {0, 8});  // across two servers
//   RingPlan plan = PlanAllReduce(cluster, {0, 1, 8, 9});  // what the simulator runs
#pragma once

#include <map>
#include <vector>

#include "partition/model/cluster.h"

namespace pipetwin {

// ms = fixed_ms + ms_per_byte * bytes (0 when there are no bytes).
struct LinearCost {
  double fixed_ms = 0;
  double ms_per_byte = 0;
  double Ms(double bytes) const { return bytes > 0 ? fixed_ms + ms_per_byte * bytes : 0; }
};

// One direction of one link: the device link of `owner` (level 0) or the uplink of unit `owner`
// of level - 1 (level >= 1), carrying traffic up (out of its owner) or down.
struct LinkDirection {
  int level = 0;
  long long owner = 0;
  bool up = true;
  bool operator<(const LinkDirection& o) const {
    return level != o.level ? level < o.level : owner != o.owner ? owner < o.owner : up < o.up;
  }
};

// The links a message from device a to device b crosses (none on one device).
std::vector<LinkDirection> Route(const Cluster& cluster, int device_a, int device_b);

// A point-to-point message between two devices, alone on its links: the latency of every level
// up to the one that joins them plus the cluster's per-message overhead, then bytes over the
// slowest link's bandwidth. Free on one device.
LinearCost TransferCost(const Cluster& cluster, int device_a, int device_b);

// A ring all-reduce as a sequence of phases: a ring of g members all-reduces S bytes in 2(g-1)
// steps of S/g bytes each, g-1 of reduce-scatter, then g-1 of all-gather; at every step each
// member sends to its successor and receives from its predecessor, so each link carries
// 2(g-1)/g S (Patarasuk and Yuan, JPDC 2009). Across levels (Jia et al., arXiv:1807.11205,
// 2018): the members inside each server reduce-scatter in a ring (g_0 per server), then the
// members holding the same shard in different servers reduce-scatter their 1/g_0 shard (g_1 of
// them), and so on up; the all-gathers retrace the levels downwards. When the members are spread
// unevenly (g_l differs between units) it is one flat ring in device order, as NCCL rings all
// ranks.
struct RingPhase {
  int level = 0;     // the highest level a ring of this phase crosses
  int steps = 0;
  double fraction = 0;        // of S per step
  std::vector<int> next, prev;  // indices into the member list; every member takes part
};

struct RingPlan {
  std::vector<int> devices;  // the members, as given
  std::vector<RingPhase> phases;
  bool hierarchical = false;
  // Bytes each member sends for S = 1 (sum of steps x fraction).
  double BytesPerMember() const;
};

// Requires distinct devices of `cluster`. One member or none: no phases.
RingPlan PlanAllReduce(const Cluster& cluster, const std::vector<int>& devices);

// PlanAllReduce's ring over `devices` alone on the links: per phase, its steps' latencies and
// per-message overheads, and steps x fraction x S over the slowest hop, a hop's bandwidth being
// its slowest link's divided among the hops of the same phase that cross that link (a server's
// NIC carries one ring per member in it at a level-1 phase).
LinearCost RingAllReduceCost(const Cluster& cluster, const std::vector<int>& devices);

// The all-reduces of several groups that run at the same time (every stage of a pipeline after
// its batch): each as RingAllReduceCost, with every link also carrying, for each other group,
// the most hops of that group that cross it in any one of its phases.
std::vector<LinearCost> ConcurrentRingAllReduceCosts(const Cluster& cluster,
                                                     const std::vector<std::vector<int>>& groups);

// Per link direction, how long it is busy (ms) carrying some traffic alone at its bandwidth.
using LinkWork = std::map<LinkDirection, double>;

// Adds the work of PlanAllReduce's ring over `devices` all-reducing `bytes` to every link it
// crosses, and the work of a message of `bytes` from device_a to device_b to its route.
void AddRingWork(const Cluster& cluster, const std::vector<int>& devices, double bytes,
                 LinkWork* work);
void AddMessageWork(const Cluster& cluster, int device_a, int device_b, double bytes,
                    LinkWork* work);

// A message from device_a to device_b whose links carry `work` per `period_ms` besides it: a
// link busy a fraction rho of the time serves its flows in equal shares (processor sharing),
// and a job's mean time in an M/G/1 processor-sharing queue is its time alone / (1 - rho),
// whatever the jobs' sizes (Kleinrock, Queueing Systems vol. 2, 1976, section 4.4). The per-byte
// part is the slowest link's so stretched; infinite when a link has more work than the period.
// `own_bytes` of the work are this message's channel's own (messages one after another on one
// channel do not share with each other): left out of rho. TransferCost on "contention_free"
// links.
// ShareOfRoute gathers a route's terms once; At charges them at a period.
struct SharedRoute {
  double fixed_ms = 0;
  std::vector<std::pair<double, double>> links;  // per link: ms per byte alone, others' work ms
  LinearCost At(double period_ms) const;
};
SharedRoute ShareOfRoute(const Cluster& cluster, int device_a, int device_b,
                         const LinkWork& work, double own_bytes = 0);

}  // namespace pipetwin
