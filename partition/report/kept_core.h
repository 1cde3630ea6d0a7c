// Whether a worker kept its core: of the time a worker computed on a machine whose workers share
// cores, the share spent in ops that ran on the core whose previous compute op was the same
// worker's. The simulator charges such an op the profile's own-core share of its time
// (workload.h, OwnCoreShare; sim/actors.cc, TakeCore: a worker takes the core it last ran on when
// it is free, as Linux places a woken real-time thread on its previous CPU, kernel/sched/rt.c,
// find_lowest_rq). Both back ends state the share by this one rule, from which core each compute
// op ran on (the simulator's core token, the executor's sched_getcpu() at the op's start), so
// that a comparison tells whether the simulator's placement of the workers matches the run's.
#pragma once

#include <map>
#include <vector>

namespace pipetwin {

// One compute op (forward, backward, recompute, update) and the core it started on; core ids
// are unique across the machines of a run.
struct CoreUse {
  int worker = 0;
  double start_s = 0;
  double seconds = 0;
  int core = -1;  // -1: unknown
};

// By worker: the share of its compute time (the ops with a known core) in ops whose core's
// previous op, by start, was the same worker's. A worker without such time is left out.
std::map<int, double> KeptCoreShares(std::vector<CoreUse> uses);

}  // namespace pipetwin
