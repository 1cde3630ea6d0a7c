#include "sim/symmetry.h"

#include <map>
#include <numeric>
#include <set>

#include "partition/cost/communication.h"

namespace pipetwin::sim {

namespace {

// Why no reduction applies, or "" when replicas 0..k-1 stand for all R (symmetry.h).
std::string Check(const SimulationSetup& setup, int k, const std::vector<std::vector<int>>& groups) {
  const PipelineSchedule& s = setup.schedule;
  const Cluster& cluster = setup.cluster;
  const int R = s.replicas[0];
  for (const auto& group : groups) {
    std::vector<int> devices;
    for (int w : group) devices.push_back(setup.worker_device[w]);
    const RingPlan plan = PlanAllReduce(cluster, devices);
    for (const RingPhase& phase : plan.phases) {
      for (int x = 0; x < R; ++x) {
        const int rep = x % k;  // member index = replica (checked by the caller)
        // The rings commute with the shift: x's successor is its representative's, shifted.
        if ((phase.next[x] - x + R) % R != (phase.next[rep] - rep + R) % R)
          return "the stages' gradient rings do not repeat every " + std::to_string(k) +
                 " replicas";
        if (cluster.LinkLevel(devices[x], devices[phase.next[x]]) !=
            cluster.LinkLevel(devices[rep], devices[phase.next[rep]]))
          return "a ring's hops cross different levels";
      }
      for (int m = 0; m < k; ++m) {
        // The folded hop: to the representative of the successor, over a route of its level.
        const int to = phase.next[m] % k;
        if (to == m || cluster.LinkLevel(devices[m], devices[to]) !=
                           cluster.LinkLevel(devices[m], devices[phase.next[m]]))
          return "a folded ring hop would change level";
      }
    }
  }
  return "";
}

// Whether shifting every replica by k (stage s, replica r to replica r + k mod R) moves whole
// units below the top level onto whole units, each device to the same position in its image,
// one unit to one unit: a permutation of the top level's children, which its star does not tell
// apart. And whether the units of replicas 0..k-1 hold none of the others.
std::string CheckShift(const SimulationSetup& setup, int k, int unit) {
  const PipelineSchedule& s = setup.schedule;
  const int R = s.replicas[0];
  std::map<int, int> image;
  std::set<int> simulated_units, images;
  for (const WorkerProgram& p : s.workers) {
    const int d = setup.worker_device[p.worker];
    const int e = setup.worker_device[p.stage * R + (p.replica + k) % R];
    if (d % unit != e % unit) return "shifting the replicas moves a device within its unit";
    const auto [at, added] = image.emplace(d / unit, e / unit);
    if (!added && at->second != e / unit) return "shifting the replicas splits a unit";
    if (p.replica < k) simulated_units.insert(d / unit);
  }
  for (const auto& [from, to] : image)
    if (!images.insert(to).second) return "shifting the replicas merges units";
  for (const WorkerProgram& p : s.workers)
    if (p.replica >= k && simulated_units.count(setup.worker_device[p.worker] / unit))
      return "the replicas share units";
  return "";
}

}  // namespace

ReplicaReduction ReduceReplicas(const SimulationSetup& setup) {
  const PipelineSchedule& s = setup.schedule;
  const Cluster& cluster = setup.cluster;
  ReplicaReduction r;
  const int W = s.WorkerCount();
  r.representative.resize(W);
  std::iota(r.representative.begin(), r.representative.end(), 0);
  if (s.replicas.empty()) return r;
  const int R = s.replicas[0];
  const int S = s.stages;
  r.replicas = r.simulated = R;
  auto no = [&](const std::string& why) {
    r.why_not = why;
    return r;
  };
  if (R < 2) return r;
  if (!setup.options.symmetry) return no("--no-symmetry");
  for (int n : s.replicas)
    if (n != R) return no("the stages have different numbers of replicas");
  std::vector<std::vector<int>> groups(S);  // member index = replica
  for (const WorkerProgram& p : s.workers) {
    if (p.worker != p.stage * R + p.replica) return no("the workers are not numbered by stage");
    for (const Op& op : p.ops)
      if (IsCommunicationOp(op.kind) && s.workers[op.peer_worker].replica != p.replica)
        return no("pipeline messages cross replicas");
    groups[p.stage].push_back(p.worker);
  }
  const int top = static_cast<int>(cluster.levels.size()) - 1;
  if (cluster.shared_cores > 0 && top == 0)
    return no("the replicas share one server's CPU cores");
  // The top level's children: a server under two levels, a device under one.
  const int unit = top >= 1 ? cluster.DevicesPerUnit(top - 1) : 1;
  std::string why = "the replicas do not divide into repeating groups";
  for (int k = 2; k < R; ++k) {
    if (R % k != 0) continue;
    why = CheckShift(setup, k, unit);
    if (why.empty()) why = Check(setup, k, groups);
    if (!why.empty()) continue;
    r.simulated = k;
    for (int w = 0; w < W; ++w) {
      const WorkerProgram& p = s.workers[w];
      r.representative[w] = p.stage * R + p.replica % k;
    }
    r.why_not.clear();
    return r;
  }
  return no(why);
}

}  // namespace pipetwin::sim
