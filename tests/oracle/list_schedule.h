// An independent list-scheduling replay: the test oracle for the order of communication.
//
// Written apart from the core's replay (partition/schedule/replay.h) and from the simulator: it
// reads only each worker's compute order (which ops, in which order) and derives the data
// dependencies from what the ops are, not from the lists' Send and Recv ops. Each worker runs
// its compute ops in order; an op starts as soon as its worker is free and every input has
// arrived:
//   Forward(g, k)          after Forward(g-1, k)
//   Backward(g, k), or the backward-input of a split backward,
//                          after Forward(g, k) and the backward (or backward-input) of g+1, k
//   BackwardWeight(g, k)   after the backward-input of g, k
//   Recompute(g, k)        after Forward(g, k); recomputing in the backward, also after the
//                          gradient of g+1, k (early: not)
// An input from another worker arrives `transfer` after its producer ends (the cut's time);
// from the same worker, at once. Update and AllReduce take no time and wait for nothing (the
// oracle's cases have one replica per stage and no optimizer time). With blocking sends, an op
// also starts no earlier than the arrival of every input its worker has produced for another
// worker (Megatron-LM waits for its sends before the next forward or backward).
#pragma once

#include <vector>

#include "partition/schedule/op.h"

namespace pipetwin::oracle {

struct ListScheduleCase {
  std::vector<double> forward;   // by model stage, seconds per micro-batch
  std::vector<double> backward;  // by model stage (split: half each; stage 0's all in W)
  std::vector<double> transfer;  // by cut: after model stage g, either direction
  bool recompute_in_backward = true;
  bool blocking_sends = false;
};

// The makespan of the schedule's compute orders under list scheduling; throws std::logic_error
// when the orders cannot complete.
double ListScheduleMakespan(const PipelineSchedule& schedule, const ListScheduleCase& c);

}  // namespace pipetwin::oracle
