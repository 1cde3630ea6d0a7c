#include "sim/collective.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "sim/setup.h"

namespace pipetwin::sim {

namespace {

// A phase of one or more disjoint rings, each listing members (indices) in ring order.
RingPhase Rings(const std::vector<std::vector<int>>& rings, int members, int level, int steps,
                double fraction) {
  RingPhase phase;
  phase.level = level;
  phase.steps = steps;
  phase.fraction = fraction;
  phase.next.assign(members, -1);
  phase.prev.assign(members, -1);
  for (const auto& ring : rings) {
    const int g = static_cast<int>(ring.size());
    for (int k = 0; k < g; ++k) {
      phase.next[ring[k]] = ring[(k + 1) % g];
      phase.prev[ring[k]] = ring[(k + g - 1) % g];
    }
  }
  return phase;
}

}  // namespace

double RingPlan::BytesPerMember() const {
  double bytes = 0;
  for (const RingPhase& p : phases) bytes += p.steps * p.fraction;
  return bytes;
}

RingPlan PlanAllReduce(const Cluster& cluster, const std::vector<int>& devices) {
  RingPlan plan;
  plan.devices = devices;
  const int n = static_cast<int>(devices.size());
  if (n <= 1) return plan;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return devices[a] < devices[b]; });

  // Going up: at level l the members of one level-l unit that hold the same shard form a ring.
  std::vector<RingPhase> up;
  std::vector<long long> shard_of(n, 0);  // which shard a member holds after the levels below
  double shard = 1;
  bool symmetric = true;
  const int levels = static_cast<int>(cluster.levels.size());
  for (int l = 0; l < levels && symmetric; ++l) {
    std::map<std::pair<long long, long long>, std::vector<int>> rings;
    for (int i : order) rings[{devices[i] / cluster.DevicesPerUnit(l), shard_of[i]}].push_back(i);
    const size_t g = rings.begin()->second.size();
    for (const auto& [key, ring] : rings) symmetric = symmetric && ring.size() == g;
    if (!symmetric || g == 1) continue;
    std::vector<std::vector<int>> list;
    for (auto& [key, ring] : rings) {
      for (size_t k = 0; k < ring.size(); ++k) shard_of[ring[k]] = shard_of[ring[k]] * g + k;
      list.push_back(ring);
    }
    shard /= static_cast<double>(g);
    up.push_back(Rings(list, n, l, static_cast<int>(g) - 1, shard));
  }
  if (symmetric) {
    plan.hierarchical = up.size() > 1;
    plan.phases = up;
    plan.phases.insert(plan.phases.end(), up.rbegin(), up.rend());
    return plan;
  }
  // Uneven spread: one ring over everyone in device order.
  int level = 0;
  for (int k = 0; k < n; ++k)
    level = std::max(level, cluster.LinkLevel(devices[order[k]], devices[order[(k + 1) % n]]));
  const RingPhase flat = Rings({order}, n, level, n - 1, 1.0 / n);
  plan.phases = {flat, flat};
  return plan;
}

std::vector<GradientBucket> GradientBuckets(const std::vector<double>& layer_gradient_bytes,
                                            const std::vector<double>& layer_backward_times,
                                            int max_buckets) {
  const size_t layers = layer_gradient_bytes.size();
  double total_bytes = 0, total_s = 0;
  for (size_t k = 0; k < layers; ++k) {
    total_bytes += layer_gradient_bytes[k];
    total_s += layer_backward_times[k];
  }
  const size_t count = std::min<size_t>(std::max(max_buckets, 1), layers);
  std::vector<GradientBucket> buckets;
  GradientBucket bucket;
  double bytes_so_far = 0;
  for (size_t k = 0; k < layers; ++k) {
    bucket.bytes += layer_gradient_bytes[k];
    bucket.backward_fraction += total_s > 0 ? layer_backward_times[k] / total_s : 1.0 / layers;
    bytes_so_far += layer_gradient_bytes[k];
    // Close the bucket once it reaches its share of the bytes (the last one takes the rest).
    const double share = total_bytes * static_cast<double>(buckets.size() + 1) / count;
    if (k + 1 == layers || (bytes_so_far >= share && buckets.size() + 1 < count)) {
      buckets.push_back(bucket);
      bucket = GradientBucket();
    }
  }
  return buckets;
}

}  // namespace pipetwin::sim
