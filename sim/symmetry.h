// Data-parallel replicas the simulator may leave out because they would repeat another's events
// exactly. A plan of S stages x R identical replicas whose pipelines meet only in the stages'
// gradient rings, where shifting every replica by k (stage s, replica r to replica r + k mod R)
// moves whole units below the top level (servers under a two-level cluster, devices under one)
// onto whole units, each device to the same position: a permutation of the top level's
// children, which its star does not tell apart, so links go to links of the same level and
// servers (their CPU cores, their switches) to servers. When the stages' ring plans commute with
// the shift too, the simulation's state is invariant under it (max-min sharing treats equal flows
// equally): replica r does at every instant what replica r mod k does. So only replicas 0..k-1
// are simulated, on units that hold no other replica. Each of their ring hops goes to the
// representative of its successor over a route of the same level; by the symmetry that
// representative's links carry what the successor's would, so every link simulated carries
// what it does in the full simulation. The others' records are copies, and the per-level byte
// counts scale by R / k. Megatron-LM's placement (data-parallel before pipeline) and the default
// one (a replica's stages side by side) both qualify when the replicas fill whole servers.
// tests/sim/scale_test.cc checks the reduced simulation against the full one.
//
//   const ReplicaReduction r = ReduceReplicas(setup);   // r.simulated == r.replicas: none
//   r.Simulated(worker);  r.representative[worker];  r.why_not;
#pragma once

#include <string>
#include <vector>

#include "sim/setup.h"

namespace pipetwin::sim {

struct ReplicaReduction {
  int replicas = 1;   // R: per stage
  int simulated = 1;  // k: replicas 0..k-1 run; k == R when nothing is left out
  std::string why_not;  // when k == R and R > 1: the condition that failed
  // Per worker: the simulated worker whose records it takes (itself when simulated).
  std::vector<int> representative;
  bool Reduced() const { return simulated < replicas; }
  bool Simulated(int worker) const { return representative[worker] == worker; }
};

// The smallest k >= 2 dividing R for which the shift is such a permutation and every simulated
// ring hop keeps its level; k = R (no reduction) when options.symmetry is off or no k does.
ReplicaReduction ReduceReplicas(const SimulationSetup& setup);

}  // namespace pipetwin::sim
