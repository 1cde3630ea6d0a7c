// Helpers shared by the builders, the lowering, the CSV reader and the checker
// (internal/lowering.h).
#include <algorithm>
#include <sstream>

#include "partition/schedule/internal/lowering.h"

namespace pipetwin {

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
    out << (IsSendOp(op.kind) ? " to worker " : " from worker ") << op.peer_worker;
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

long Routing::MessageSlot(const MessageKey& key) const {
  const int sender = key.sender_stage, receiver = key.ReceiverStage();
  if (key.microbatch < 0 || key.microbatch >= microbatches_ || sender < 0 ||
      sender >= model_stages_ || receiver < 0 || receiver >= model_stages_)
    return -1;
  return (static_cast<long>(key.activation) * model_stages_ + sender) * microbatches_ +
         key.microbatch;
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
