// How fast a 1F1B pipeline's steady state runs: the one rule the 2BW planner and the 1F1B-flush
// baseline charge, for the op lists both back ends run (sends posted as soon as their tensor is
// produced, a receive waited on just before the op that needs it: partition/schedule/op.h).
//
// Every stage alternates one forward and one backward; stage s of p runs forward i, then the
// backward of the micro-batch p - s - 1 before it, then forward i + 1. Following micro-batch i
// from stage s down to stage e and the backward that e runs next back up to s, whose backward of
// it comes just before its forward i + (e - s + 1), gives a loop of e - s + 1 micro-batches that
// holds every forward and backward of stages s..e once and every activation and gradient between
// them once (a cycle of the ops' dependency graph; the pace is its longest cycle mean):
//   t >= (sum_{j=s..e} compute_j + sum_{j=s..e-1} (activation_j + gradient_j)) / (e - s + 1).
// One stage's window is its own compute; two neighbours' are what a slow boundary costs
// (PipeDream-2BW's appendix A.1.1 charges each stage its compute plus 2 |A| / B per neighbour,
// which counts every transfer whole); the whole pipeline's is the round trip of the p
// micro-batches in flight. Each channel also carries one message per micro-batch: t >= each
// transfer.
//
//   double t = OneFOneBPaceMs({3, 3}, {0.1}, {0.1});  // (3 + 3 + 0.2) / 2 = 3.1 ms
#pragma once

#include <vector>

namespace pipetwin {

// compute[s]: stage s's forward + backward of one micro-batch; activation[s], gradient[s]: the
// transfers across the boundary after stage s (one fewer than the stages). O(p^2).
double OneFOneBPaceMs(const std::vector<double>& compute, const std::vector<double>& activation,
                      const std::vector<double>& gradient);

}  // namespace pipetwin
