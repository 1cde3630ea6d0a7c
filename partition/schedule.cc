// Names, costs and small helpers of the schedule data model (schedule.h).
#include "partition/schedule.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "partition/error.h"
#include "partition/schedule_internal.h"

namespace pipetwin {

std::string ScheduleKindName(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe: return "gpipe";
    case ScheduleKind::kFlush: return "flush";
    case ScheduleKind::kPipeDream: return "pipedream";
    case ScheduleKind::kTwoBW: return "2bw";
    case ScheduleKind::kInterleaved: return "interleaved";
    case ScheduleKind::kZeroBubbleH1: return "zb-h1";
    case ScheduleKind::kImported: return "imported";
  }
  return "?";
}

ScheduleKind ParseScheduleKind(const std::string& name) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush, ScheduleKind::kPipeDream,
                            ScheduleKind::kTwoBW, ScheduleKind::kInterleaved,
                            ScheduleKind::kZeroBubbleH1}) {
    if (ScheduleKindName(kind) == name) return kind;
  }
  throw InputError("unknown schedule kind '" + name +
                   "' (expected gpipe, flush, pipedream, 2bw, interleaved or zb-h1)");
}

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return "forward";
    case OpKind::kBackward: return "backward";
    case OpKind::kBackwardInput: return "backward_input";
    case OpKind::kBackwardWeight: return "backward_weight";
    case OpKind::kRecompute: return "recompute";
    case OpKind::kSendActivation: return "send_activation";
    case OpKind::kRecvActivation: return "recv_activation";
    case OpKind::kSendGradient: return "send_gradient";
    case OpKind::kRecvGradient: return "recv_gradient";
    case OpKind::kAllReduce: return "all_reduce";
    case OpKind::kUpdate: return "update";
    case OpKind::kStashActivation: return "stash_activation";
    case OpKind::kReleaseActivation: return "release_activation";
    case OpKind::kStashWeights: return "stash_weights";
    case OpKind::kReleaseWeights: return "release_weights";
  }
  return "?";
}

bool Op::operator==(const Op& other) const {
  return kind == other.kind && stage == other.stage && chunk == other.chunk &&
         microbatch == other.microbatch && peer_worker == other.peer_worker &&
         weight_version == other.weight_version && input_only == other.input_only;
}

std::string ActionName(const Op& op) {
  const std::string stage = std::to_string(op.stage);
  const std::string mb = std::to_string(op.microbatch);
  switch (op.kind) {
    case OpKind::kForward: return stage + "F" + mb;
    case OpKind::kBackward: return stage + "B" + mb;
    case OpKind::kBackwardInput: return stage + "I" + mb;
    case OpKind::kBackwardWeight: return stage + "W" + mb;
    case OpKind::kSendActivation: return stage + "SEND_F" + mb;
    case OpKind::kRecvActivation: return stage + "RECV_F" + mb;
    case OpKind::kSendGradient: return stage + "SEND_B" + mb;
    case OpKind::kRecvGradient: return stage + "RECV_B" + mb;
    case OpKind::kAllReduce:
    case OpKind::kUpdate: return stage + "REDUCE_GRAD";
    case OpKind::kRecompute:
    case OpKind::kStashActivation:
    case OpKind::kReleaseActivation: return std::string(OpKindName(op.kind)) + " " + stage + ":" + mb;
    case OpKind::kStashWeights:
    case OpKind::kReleaseWeights:
      return std::string(OpKindName(op.kind)) + " v" + std::to_string(op.weight_version);
  }
  return "?";
}

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

int OptimalActiveMinibatches(const std::vector<int>& replicas) {
  return InFlightTarget(replicas, 0);
}

int InFlightTarget(const std::vector<int>& replicas, int stage) {
  const int downstream = std::accumulate(replicas.begin() + stage, replicas.end(), 0);
  return (downstream + replicas[stage] - 1) / replicas[stage];
}

namespace schedule_internal {

Op MakeOp(OpKind kind, int stage, int chunk, int microbatch) {
  Op op;
  op.kind = kind;
  op.stage = stage;
  op.chunk = chunk;
  op.microbatch = microbatch;
  return op;
}

std::string DescribeOp(const Op& op) {
  std::ostringstream out;
  out << ActionName(op);
  if (op.peer_worker >= 0) {
    bool send = op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient;
    out << (send ? " to worker " : " from worker ") << op.peer_worker;
  }
  return out.str();
}

Routing::Routing(const PipelineSchedule& schedule) {
  for (const auto& w : schedule.workers) {
    for (const auto& op : w.ops) {
      if (!IsComputeOp(op.kind)) continue;
      model_stages_ = std::max(model_stages_, op.stage + 1);
      microbatches_ = std::max(microbatches_, op.microbatch + 1);
    }
  }
  model_stages_ = std::max(model_stages_, schedule.ModelStageCount());
  forward_.assign(static_cast<size_t>(model_stages_) * microbatches_, -1);
  backward_.assign(forward_.size(), -1);
  for (const auto& w : schedule.workers) {
    for (const auto& op : w.ops) {
      if (op.stage < 0 || op.microbatch < 0) continue;
      if (op.kind == OpKind::kForward) forward_[Index(op.stage, op.microbatch)] = w.worker;
      if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput)
        backward_[Index(op.stage, op.microbatch)] = w.worker;
    }
  }
}

int Routing::ForwardWorker(int stage, int microbatch) const {
  if (stage < 0 || stage >= model_stages_ || microbatch < 0 || microbatch >= microbatches_)
    return -1;
  return forward_[Index(stage, microbatch)];
}

int Routing::BackwardWorker(int stage, int microbatch) const {
  if (stage < 0 || stage >= model_stages_ || microbatch < 0 || microbatch >= microbatches_)
    return -1;
  return backward_[Index(stage, microbatch)];
}

}  // namespace schedule_internal
}  // namespace pipetwin
