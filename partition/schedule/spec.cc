// Op costs of a replay and the in-flight counts of 1F1B (spec.h).
#include "partition/schedule/spec.h"

#include <algorithm>
#include <numeric>

namespace pipetwin {

double OpCosts::Of(const Op& op, int chunks) const {
  const double per_chunk = 1.0 / std::max(chunks, 1);
  switch (op.kind) {
    case OpKind::kForward: return forward * per_chunk;
    case OpKind::kBackward: return backward * per_chunk;
    case OpKind::kBackwardInput:
      return (backward_input >= 0 ? backward_input : backward / 2) * per_chunk;
    case OpKind::kBackwardWeight:
      return (backward_weight >= 0 ? backward_weight : backward / 2) * per_chunk;
    case OpKind::kRecompute: return (recompute >= 0 ? recompute : forward) * per_chunk;
    case OpKind::kAllReduce: return all_reduce;
    case OpKind::kUpdate: return update;
    case OpKind::kSendActivation:
    case OpKind::kRecvActivation:
    case OpKind::kSendGradient:
    case OpKind::kRecvGradient: return transfer;
    default: return 0;
  }
}

int MicrobatchesPerRound(int stages, int microbatches) {
  return microbatches / std::max(1, microbatches / std::max(stages, 1));
}

int OptimalActiveMinibatches(const std::vector<int>& replicas) {
  return InFlightTarget(replicas, 0);
}

int InFlightTarget(const std::vector<int>& replicas, int stage) {
  const int downstream = std::accumulate(replicas.begin() + stage, replicas.end(), 0);
  return (downstream + replicas[stage] - 1) / replicas[stage];
}

}  // namespace pipetwin
