#include "partition/cost/communication.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

namespace pipetwin {

std::vector<LinkDirection> Route(const Cluster& cluster, int device_a, int device_b) {
  if (device_a == device_b) return {};
  const int join = cluster.LinkLevel(device_a, device_b);
  std::vector<LinkDirection> up{{0, device_a, true}}, down{{0, device_b, false}};
  for (int l = 1; l <= join; ++l) {
    const int below = cluster.DevicesPerUnit(l - 1);
    up.push_back({l, device_a / below, true});
    down.push_back({l, device_b / below, false});
  }
  up.insert(up.end(), down.rbegin(), down.rend());
  return up;
}

LinearCost TransferCost(const Cluster& cluster, int device_a, int device_b) {
  if (device_a == device_b) return {};
  double latency_us = cluster.communication_overhead_us, slowest = std::numeric_limits<double>::infinity();
  for (int l = 0; l <= cluster.LinkLevel(device_a, device_b); ++l) {
    latency_us += cluster.levels[l].latency_us;  // half on each side's link of level l
    slowest = std::min(slowest, cluster.levels[l].bandwidth_bytes_per_s());
  }
  return {latency_us * 1e-3, 1e3 / slowest};
}

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

using LinkLoad = LinkFlows;

// How many hops of one phase cross each link.
LinkLoad PhaseLoad(const Cluster& cluster, const RingPlan& plan, const RingPhase& phase) {
  LinkLoad load;
  for (size_t i = 0; i < plan.devices.size(); ++i)
    for (const LinkDirection& link : Route(cluster, plan.devices[i], plan.devices[phase.next[i]]))
      ++load[link];
  return load;
}

// Per link, the most hops of the plan crossing it in any one phase.
LinkLoad PeakLoad(const Cluster& cluster, const RingPlan& plan) {
  LinkLoad peak;
  for (const RingPhase& phase : plan.phases)
    for (const auto& [link, hops] : PhaseLoad(cluster, plan, phase))
      peak[link] = std::max(peak[link], hops);
  return peak;
}

// The plan's cost with `others` hops of other collectives on its links besides its own.
LinearCost SharedRingCost(const Cluster& cluster, const RingPlan& plan, const LinkLoad& others) {
  // "contention_free" links (FATPIPE in the simulator) give every flow the whole bandwidth.
  const bool shared = cluster.network_model != "contention_free";
  LinearCost cost;
  for (const RingPhase& phase : plan.phases) {
    const LinkLoad own = PhaseLoad(cluster, plan, phase);
    double slowest_ms_per_byte = 0, latency_ms = 0;
    for (size_t i = 0; i < plan.devices.size(); ++i) {
      const int from = plan.devices[i], to = plan.devices[phase.next[i]];
      double ms_per_byte = 0;
      for (const LinkDirection& link : Route(cluster, from, to)) {
        int flows = 1;
        if (shared) {
          flows = own.at(link);
          const auto it = others.find(link);
          if (it != others.end()) flows += it->second;
        }
        ms_per_byte =
            std::max(ms_per_byte, flows * 1e3 / cluster.levels[link.level].bandwidth_bytes_per_s());
      }
      slowest_ms_per_byte = std::max(slowest_ms_per_byte, ms_per_byte);
      latency_ms = std::max(latency_ms, TransferCost(cluster, from, to).fixed_ms);
    }
    // Each step waits for its slowest hop: a member sends on only what it has received.
    cost.ms_per_byte += phase.steps * phase.fraction * slowest_ms_per_byte;
    cost.fixed_ms += phase.steps * latency_ms;
  }
  return cost;
}

}  // namespace

double GradientSyncBytes(double gradient_bytes, double weight_bytes, bool sharded_optimizer) {
  return sharded_optimizer ? (gradient_bytes + weight_bytes) / 2 : gradient_bytes;
}

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

namespace {

int RingSteps(int group, CollectiveKind kind) {
  return (kind == CollectiveKind::kAllReduce ? 2 : 1) * (group - 1);
}

}  // namespace

double RingBytesPerRank(int group, CollectiveKind kind, double bytes) {
  return group > 1 ? RingSteps(group, kind) * bytes / group : 0;
}

LinearCost TensorParallelCollectiveCost(const Cluster& cluster, int group, CollectiveKind kind) {
  if (group <= 1 || cluster.levels.empty()) return {};
  const ClusterLevel& level = cluster.levels[0];
  const double busbw_bytes_per_s =
      (level.collective_bandwidth_gbps > 0 ? level.collective_bandwidth_gbps
                                           : level.bandwidth_gbps) * 1e9 / 8;
  return {RingSteps(group, kind) * (level.latency_us + cluster.communication_overhead_us) * 1e-3,
          RingBytesPerRank(group, kind, 1) * 1e3 / busbw_bytes_per_s};
}

double TensorParallelCollectiveMs(const Cluster& cluster, int group, CollectiveKind kind,
                                  double bytes) {
  if (group <= 1 || cluster.levels.empty()) return 0;
  const char* name = kind == CollectiveKind::kAllReduce   ? "all-reduce"
                     : kind == CollectiveKind::kAllGather ? "all-gather"
                                                          : "reduce-scatter";
  for (const CollectiveTable& t : cluster.levels[0].collective_tables)
    if (t.kind == name && t.times.ranks == group) return 1e3 * t.times.Seconds(bytes);
  return TensorParallelCollectiveCost(cluster, group, kind).Ms(bytes);
}

LinearCost RingAllReduceCost(const Cluster& cluster, const std::vector<int>& devices) {
  return SharedRingCost(cluster, PlanAllReduce(cluster, devices), {});
}

std::vector<LinearCost> ConcurrentRingAllReduceCosts(const Cluster& cluster,
                                                     const std::vector<std::vector<int>>& groups) {
  std::vector<RingPlan> plans;
  std::vector<LinkLoad> peaks;
  LinkLoad all;
  for (const auto& g : groups) {
    plans.push_back(PlanAllReduce(cluster, g));
    peaks.push_back(PeakLoad(cluster, plans.back()));
    for (const auto& [link, hops] : peaks.back()) all[link] += hops;
  }
  std::vector<LinearCost> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    LinkLoad others = all;
    for (const auto& [link, hops] : peaks[g]) others[link] -= hops;
    out.push_back(SharedRingCost(cluster, plans[g], others));
  }
  return out;
}

void AddRingWork(const Cluster& cluster, const std::vector<int>& devices, double bytes,
                 LinkWork* work) {
  const RingPlan plan = PlanAllReduce(cluster, devices);
  for (const RingPhase& phase : plan.phases)
    for (size_t i = 0; i < plan.devices.size(); ++i)
      for (const LinkDirection& link : Route(cluster, plan.devices[i], plan.devices[phase.next[i]]))
        (*work)[link] += phase.steps * phase.fraction * bytes * 1e3 /
                         cluster.levels[link.level].bandwidth_bytes_per_s();
}

LinkFlows RingFlows(const Cluster& cluster, const std::vector<int>& devices) {
  return PeakLoad(cluster, PlanAllReduce(cluster, devices));
}

RingBurst RingBursts(int links, const std::vector<std::vector<RingLoad>>& rings,
                     const std::vector<double>& starts_ms) {
  struct Job {
    double start, work;
    size_t ring;
  };
  std::vector<std::vector<Job>> per_link(links);  // each flow's work
  for (size_t g = 0; g < rings.size(); ++g)
    for (const RingLoad& load : rings[g]) {
      if (load.ms <= 0) continue;
      const int n = std::max(1, load.flows);
      per_link[load.link].insert(per_link[load.link].end(), n, Job{starts_ms[g], load.ms / n, g});
    }
  RingBurst out;
  out.ends = starts_ms;
  out.flows.resize(links);
  for (int link = 0; link < links; ++link) {
    std::vector<Job>& jobs = per_link[link];
    if (jobs.empty()) continue;
    std::sort(jobs.begin(), jobs.end(),
              [](const Job& x, const Job& y) { return x.start < y.start; });
    std::vector<FlowCount>& steps = out.flows[link];
    std::vector<Job> running, left;  // with the work they have left
    size_t next = 0;
    double t = jobs.front().start;
    while (next < jobs.size() || !running.empty()) {
      if (running.empty()) t = std::max(t, jobs[next].start);
      while (next < jobs.size() && jobs[next].start <= t) running.push_back(jobs[next++]);
      // Equal shares: with n flows running, each gets 1/n of the link, so the least job ends
      // after n times its work unless another flow arrives first.
      const int n = static_cast<int>(running.size());
      double least = running.front().work;
      for (const Job& j : running) least = std::min(least, j.work);
      const double arrival = next < jobs.size() ? jobs[next].start
                                                : std::numeric_limits<double>::infinity();
      const bool completes = t + least * n <= arrival;
      const double until = completes ? t + least * n : arrival;
      const double served = completes ? least : (until - t) / n;
      if (!steps.empty() && steps.back().flows == n && steps.back().until_ms == t)
        steps.back().until_ms = until;
      else if (until > t)
        steps.push_back({t, until, n});
      t = until;
      left.clear();
      for (Job& j : running) {
        j.work -= served;
        if (completes && j.work <= least * 1e-9)
          out.ends[j.ring] = std::max(out.ends[j.ring], t);
        else
          left.push_back(j);
      }
      running.swap(left);
    }
  }
  return out;
}

SharedRoute NumberedRoute(const Cluster& cluster, int device_a, int device_b,
                          std::map<LinkDirection, int>* number) {
  SharedRoute route;
  route.fixed_ms = TransferCost(cluster, device_a, device_b).fixed_ms;
  for (const LinkDirection& link : Route(cluster, device_a, device_b)) {
    route.links.push_back(number->emplace(link, static_cast<int>(number->size())).first->second);
    route.ms_per_byte.push_back(1e3 / cluster.levels[link.level].bandwidth_bytes_per_s());
  }
  return route;
}

LinearCost SharedRoute::At(double period_ms, const double* work_ms, double own_bytes,
                           const int* steady) const {
  LinearCost cost{fixed_ms, 0};
  for (size_t i = 0; i < links.size(); ++i) {
    const double per_byte = ms_per_byte[i];
    const double others = work_ms ? std::max(0.0, work_ms[links[i]] - own_bytes * per_byte) : 0;
    const double busy = others / period_ms;
    if (busy >= 1) return {fixed_ms, std::numeric_limits<double>::infinity()};
    const int n = steady ? steady[links[i]] : 0;
    cost.ms_per_byte = std::max(cost.ms_per_byte, per_byte * (n + 1 / (1 - busy)));
  }
  return cost;
}

}  // namespace pipetwin
