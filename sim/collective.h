// Ring all-reduce over a stage's replicas, hierarchical when they span servers.
//
// A ring of g members all-reduces S bytes in 2(g-1) steps of S/g bytes each: g-1 steps of
// reduce-scatter, then g-1 of all-gather; every member sends to its successor and receives from
// its predecessor at each step, so each link carries 2(g-1)/g S and the time is
// 2(g-1)/g S/B plus 2(g-1) latencies (Patarasuk and Yuan, JPDC 2009). Across levels
// (Jia et al., arXiv:1807.11205, 2018): the members inside each server reduce-scatter in a ring
// (g_0 per server), then the members holding the same shard in different servers reduce-scatter
// their 1/g_0 shard (g_1 of them), and so on up; the all-gathers retrace the levels downwards.
// Level l moves 2(g_l - 1) / (g_0 ... g_l) S per member. With one replica per server this is a
// single ring over the servers; when the members are spread unevenly (g_l differs between units)
// it is one flat ring in device order. This is the cost RingAllReduceCost states
// (partition/cost/communication.h).
//
//   RingPlan plan = PlanAllReduce(cluster, {0, 1, 8, 9});   // 2 servers x 2 replicas
//   plan.phases.size();   // 4: reduce-scatter in servers, across, all-gather across, in servers
#pragma once

#include <vector>

#include "partition/model/cluster.h"

namespace pipetwin::sim {

// One ring phase: every member runs `steps` steps of `fraction` x S bytes with its successor
// and predecessor (indices into the member list; all members take part in every phase).
struct RingPhase {
  int level = 0;     // topology level the rings of this phase cross
  int steps = 0;
  double fraction = 0;
  std::vector<int> next, prev;
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

// A gradient bucket (PyTorch DDP): launched once the backward has produced its gradients.
struct GradientBucket {
  double backward_fraction = 0;  // of the backward that produces it
  double bytes = 0;
};

// Up to `max_buckets` buckets of about equal bytes over a stage's layers, in the order the
// backward produces their gradients (last layer first: the order of `layer_gradient_bytes` and
// `layer_backward_times`). Fractions add up to 1 and bytes to the stage's gradient bytes.
std::vector<GradientBucket> GradientBuckets(const std::vector<double>& layer_gradient_bytes,
                                            const std::vector<double>& layer_backward_times,
                                            int max_buckets);

}  // namespace pipetwin::sim
