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

// What a stage's replicas synchronise after a batch, as the bytes of one ring all-reduce of the
// same cost: its gradients, or, with a sharded optimizer (ZeRO-1, Megatron-LM's
// --use-distributed-optimizer: Rajbhandari et al. SC'20), a reduce-scatter of the gradients then
// an all-gather of the updated weights. A ring's reduce-scatter is the first half of its
// all-reduce's phases and its all-gather the second (PlanAllReduce), so the pair costs the
// all-reduce of (gradient_bytes + weight_bytes) / 2.
double GradientSyncBytes(double gradient_bytes, double weight_bytes, bool sharded_optimizer);

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

// The collectives of a tensor-parallel group (Shoeybi et al. 2019, Megatron-LM section 3;
// Korthikanti et al. 2022 section 4.2.2): the `group` devices of one server, in a ring on its
// level-0 links at the level's collective bus bandwidth (collective_bandwidth_gbps, else the
// link's). On S bytes (the whole tensor: each rank's input of an all-reduce or a
// reduce-scatter, each rank's output of an all-gather) an all-reduce takes 2(g-1) steps and
// moves 2(g-1)/g S per rank, an all-gather or a reduce-scatter g-1 steps and (g-1)/g S
// (Patarasuk and Yuan, JPDC 2009); a step pays the level's latency and the per-message
// overhead. Free for a group of one.
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter };
LinearCost TensorParallelCollectiveCost(const Cluster& cluster, int group, CollectiveKind kind);
// The time in ms of a tensor-parallel collective over `bytes` (the whole tensor, as above) among
// `group` devices of a server: the level's measured table of that kind and group size where it
// has one (ClusterLevel::collective_tables, piecewise linear in the bytes), else
// TensorParallelCollectiveCost's ring. The one rule the planners and the simulator charge.
double TensorParallelCollectiveMs(const Cluster& cluster, int group, CollectiveKind kind,
                                  double bytes);
// The bytes each rank of a ring of `group` sends for a collective over S bytes (the ring's steps
// x S / group): 2(g-1)/g S for an all-reduce, (g-1)/g S otherwise; 0 for a group of one.
double RingBytesPerRank(int group, CollectiveKind kind, double bytes);

// Per link direction, how long it is busy (ms) carrying some traffic alone at its bandwidth.
using LinkWork = std::map<LinkDirection, double>;
// Per link direction, a number of flows crossing it at once.
using LinkFlows = std::map<LinkDirection, int>;

// Adds the work of PlanAllReduce's ring over `devices` all-reducing `bytes` to every link it
// crosses.
void AddRingWork(const Cluster& cluster, const std::vector<int>& devices, double bytes,
                 LinkWork* work);
// Per link, the most hops of PlanAllReduce's ring over `devices` that cross it in any one phase.
LinkFlows RingFlows(const Cluster& cluster, const std::vector<int>& devices);

// What follows counts links by number (a placement numbers the links its pipelines cross).

// Rings that start at given times (every stage's all-reduce as its last backward of an update
// ends) share each link in equal parts among the flows crossing it at the time (processor
// sharing: SimGrid's max-min fairness on one link), a ring's work on a link split evenly over
// its flows there. Each link is counted on its own (a ring held back elsewhere is not slowed
// here), and what else crosses the links is left out.
struct RingLoad {
  int link = 0;
  double ms = 0;  // the ring's work on the link, alone at its bandwidth
  int flows = 1;  // of its hops crossing it at once
};
struct FlowCount {
  double from_ms = 0, until_ms = 0;
  int flows = 0;
};
struct RingBurst {
  std::vector<std::vector<FlowCount>> flows;  // per link: how many run, when, in order
  std::vector<double> ends;  // per ring: when its last flow ends (its start without any)
};
RingBurst RingBursts(int links, const std::vector<std::vector<RingLoad>>& rings,
                     const std::vector<double>& starts_ms);

// A message's route over numbered links: the latency and overheads of TransferCost, and per
// link its ms per byte alone. Charged at a period over which link n carries work_ms[n] (every
// message's, its own channel's included) and steady[n] flows that run throughout (the rings of
// a burst): a link busy a fraction rho of the time serves its flows in equal shares (processor
// sharing), and in an M/G/1 processor-sharing queue a job finds rho / (1 - rho) others on
// average and takes its time alone / (1 - rho), whatever the jobs' sizes (Kleinrock, Queueing
// Systems vol. 2, 1976, section 4.4); with n steady flows besides, it shares the link with
// n + rho / (1 - rho) others, so its per-byte time there is (n + 1 / (1 - rho)) times the
// link's. The slowest link sets the per-byte part; infinite when a link has more work than the
// period. `own_bytes` per period are this message's channel's (messages one after another on
// one channel do not share with each other): left out of rho. Null work_ms or steady: none.
struct SharedRoute {
  double fixed_ms = 0;
  std::vector<int> links;
  std::vector<double> ms_per_byte;
  LinearCost At(double period_ms, const double* work_ms = nullptr, double own_bytes = 0,
                const int* steady = nullptr) const;
};
// The route from device_a to device_b, its links numbered by `number` (which adds the new).
SharedRoute NumberedRoute(const Cluster& cluster, int device_a, int device_b,
                          std::map<LinkDirection, int>* number);

}  // namespace pipetwin
