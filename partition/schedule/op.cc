// Names and comparisons of the op-list data model (op.h).
#include "partition/schedule/op.h"

#include <map>
#include <set>
#include <tuple>

namespace pipetwin {

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

const std::vector<OpKind>& AllOpKinds() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> all;
    for (int k = 0; k <= static_cast<int>(OpKind::kReleaseWeights); ++k)
      all.push_back(static_cast<OpKind>(k));
    return all;
  }();
  return kinds;
}

std::optional<OpKind> ParseOpKind(const std::string& name) {
  for (OpKind kind : AllOpKinds())
    if (name == OpKindName(kind)) return kind;
  return std::nullopt;
}

const char* RecomputeTimingName(RecomputeTiming timing) {
  return timing == RecomputeTiming::kEarly ? "early" : "in_backward";
}

std::optional<RecomputeTiming> ParseRecomputeTiming(const std::string& name) {
  if (name == "in_backward") return RecomputeTiming::kInBackward;
  if (name == "early") return RecomputeTiming::kEarly;
  return std::nullopt;
}

bool Op::operator==(const Op& other) const {
  return kind == other.kind && stage == other.stage && chunk == other.chunk &&
         microbatch == other.microbatch && peer_worker == other.peer_worker &&
         weight_version == other.weight_version && input_only == other.input_only &&
         buckets == other.buckets;
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

bool MessageKey::operator==(const MessageKey& o) const {
  return activation == o.activation && sender_stage == o.sender_stage &&
         microbatch == o.microbatch && sender == o.sender && receiver == o.receiver;
}

bool MessageKey::operator<(const MessageKey& o) const {
  return std::tie(activation, sender_stage, microbatch, sender, receiver) <
         std::tie(o.activation, o.sender_stage, o.microbatch, o.sender, o.receiver);
}

MessageKey MessageOf(const Op& op, int worker) {
  MessageKey key;
  key.activation = op.kind == OpKind::kSendActivation || op.kind == OpKind::kRecvActivation;
  const bool send = IsSendOp(op.kind);
  key.sender_stage = send ? op.stage : key.activation ? op.stage - 1 : op.stage + 1;
  key.microbatch = op.microbatch;
  key.sender = send ? worker : op.peer_worker;
  key.receiver = send ? op.peer_worker : worker;
  return key;
}

Op SendOf(const MessageKey& key) {
  Op op;
  op.kind = key.activation ? OpKind::kSendActivation : OpKind::kSendGradient;
  op.stage = key.sender_stage;
  op.microbatch = key.microbatch;
  op.peer_worker = key.receiver;
  return op;
}

Op RecvOf(const MessageKey& key) {
  Op op;
  op.kind = key.activation ? OpKind::kRecvActivation : OpKind::kRecvGradient;
  op.stage = key.ReceiverStage();
  op.microbatch = key.microbatch;
  op.peer_worker = key.sender;
  return op;
}

const char* SendModeName(SendMode mode) {
  return mode == SendMode::kBlocking ? "blocking" : "eager";
}

ReceivePosting ReceivePostingOf(bool cpu_processes, bool oversubscribed) {
  return cpu_processes && !oversubscribed ? ReceivePosting::kAtTheirOp : ReceivePosting::kAhead;
}

std::vector<bool> GradientSumAdds(const WorkerProgram& program) {
  bool all_reduced = false;
  for (const Op& op : program.ops) all_reduced = all_reduced || op.kind == OpKind::kAllReduce;
  std::map<int, int> since_update;  // per model stage
  std::vector<bool> adds(program.ops.size(), false);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.kind == OpKind::kUpdate) {
      since_update.clear();
    } else if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardWeight) {
      int& count = since_update[op.stage];
      adds[i] = AddsToGradientSums(count, all_reduced);
      ++count;
    }
  }
  return adds;
}

std::vector<bool> UpdatesCopyingWeights(const WorkerProgram& program) {
  std::multiset<int> stashed;
  int current = 0;  // the weights' first version (StageWeights)
  std::vector<bool> copies(program.ops.size(), false);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    if (op.kind == OpKind::kStashWeights) {
      stashed.insert(op.weight_version);
    } else if (op.kind == OpKind::kReleaseWeights) {
      auto it = stashed.find(op.weight_version);
      if (it != stashed.end()) stashed.erase(it);
    } else if (op.kind == OpKind::kUpdate) {
      copies[i] = stashed.count(current) > 0;
      current = op.weight_version;
    }
  }
  return copies;
}

std::optional<SendMode> ParseSendMode(const std::string& name) {
  if (name == "eager") return SendMode::kEager;
  if (name == "blocking") return SendMode::kBlocking;
  return std::nullopt;
}

bool WorkerProgram::operator==(const WorkerProgram& other) const {
  return worker == other.worker && stage == other.stage && replica == other.replica &&
         model_stages == other.model_stages && ops == other.ops;
}

bool PipelineSchedule::operator==(const PipelineSchedule& other) const {
  return kind == other.kind && stages == other.stages && replicas == other.replicas &&
         microbatches == other.microbatches &&
         microbatches_per_batch == other.microbatches_per_batch && chunks == other.chunks &&
         vertical_sync == other.vertical_sync &&
         weight_stashing == other.weight_stashing && recompute == other.recompute &&
         recompute_timing == other.recompute_timing && send_mode == other.send_mode &&
         workers == other.workers;
}

}  // namespace pipetwin
