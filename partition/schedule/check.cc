// The checker: the structural rules every op list must follow (coverage, order on each worker,
// matched sends and receives, live weight versions), then a replay for deadlocks.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/check.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/internal/lowering.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

namespace {

using schedule_internal::DescribeOp;
using schedule_internal::Routing;

[[noreturn]] void Broken(const PipelineSchedule& s, const std::string& what) {
  throw InputError("schedule " + ScheduleKindName(s.kind) + ": " + what);
}

std::string At(int worker, const Op& op) {
  return "worker " + std::to_string(worker) + ": " + DescribeOp(op);
}

void CheckCoverage(const PipelineSchedule& s, const Routing& routing) {
  const int G = routing.model_stages(), M = std::max(routing.microbatches(), s.microbatches);
  std::vector<int> count(static_cast<size_t>(G) * M * 4, 0);
  for (const auto& w : s.workers) {
    for (const Op& op : w.ops) {
      if (!IsComputeOp(op.kind) || op.kind == OpKind::kRecompute) continue;
      if (op.stage < 0 || op.microbatch < 0) Broken(s, At(w.worker, op) + " has a negative index");
      int kind = op.kind == OpKind::kForward ? 0 : op.kind == OpKind::kBackward ? 1
                 : op.kind == OpKind::kBackwardInput ? 2 : 3;
      ++count[(static_cast<size_t>(op.stage) * M + op.microbatch) * 4 + kind];
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int k = 0; k < M; ++k) {
      const int* c = &count[(static_cast<size_t>(g) * M + k) * 4];
      const std::string what = "stage " + std::to_string(g) + " micro-batch " + std::to_string(k);
      if (c[0] != 1)
        Broken(s, what + " runs its forward " + std::to_string(c[0]) + " times (exactly once)");
      const bool full = c[1] == 1 && c[2] == 0 && c[3] == 0;
      const bool split = c[1] == 0 && c[2] == 1 && c[3] == 1;
      if (!full && !split)
        Broken(s, what + " needs one backward, or one backward-input and one backward-weight");
    }
  }
}

// Facts per (stage, micro-batch), each stamped with the worker that established it (worker + 1),
// so that one set of flat arrays serves every worker without clearing.
struct Marks {
  Marks(int stages, int microbatches)
      : G(stages), M(microbatches), forward(Size()), backward(Size()), activation_in(Size()),
        gradient_in(Size()), stashed(Size()), forward_version(Size(), -1) {}
  size_t Size() const { return static_cast<size_t>(G) * M; }
  bool Valid(int stage, int mb) const { return stage >= 0 && stage < G && mb >= 0 && mb < M; }
  size_t At(int stage, int mb) const { return static_cast<size_t>(stage) * M + mb; }
  int G, M;
  std::vector<int> forward, backward, activation_in, gradient_in, stashed, forward_version;
};

// Order on each worker: inputs before use, forward before backward, weight versions alive.
class WorkerOrderChecker {
 public:
  WorkerOrderChecker(const PipelineSchedule& s, const Routing& routing, const WorkerProgram& w,
                     Marks& marks)
      : s_(s), routing_(routing), w_(w), marks_(marks), me_(w.worker + 1) {}

  void Run() {
    for (const Op& op : w_.ops) Check(op);
  }

 private:
  void Check(const Op& op) {
    const bool per_microbatch = IsComputeOp(op.kind) || IsCommunicationOp(op.kind) ||
                                op.kind == OpKind::kStashActivation ||
                                op.kind == OpKind::kReleaseActivation;
    if (per_microbatch && !marks_.Valid(op.stage, op.microbatch))
      Fail(op, " names no stage or micro-batch of this schedule");
    const size_t id = per_microbatch ? marks_.At(op.stage, op.microbatch) : 0;
    if (IsComputeOp(op.kind) && op.weight_version >= 0 && !VersionAlive(op.weight_version))
      Fail(op, " uses weight version " + std::to_string(op.weight_version) +
                   ", which is not alive (current " + std::to_string(current_) + ")");
    switch (op.kind) {
      case OpKind::kForward: Forward(op, id); break;
      case OpKind::kBackward:
      case OpKind::kBackwardInput: Backward(op, id); break;
      case OpKind::kBackwardWeight:
        if (marks_.backward[id] != me_) Fail(op, " runs before its backward-input");
        break;
      case OpKind::kRecompute:
        if (marks_.forward[id] != me_) Fail(op, " runs before its forward");
        // With weight stashing a recompute rebuilds its forward's version; without (spec.h), on
        // the latest weights, and the backward differentiates that graph.
        if (s_.weight_stashing && marks_.forward_version[id] != op.weight_version)
          Fail(op, " recomputes on weight version " + std::to_string(op.weight_version) +
                       " but its forward used " + std::to_string(marks_.forward_version[id]));
        marks_.forward_version[id] = op.weight_version;
        break;
      case OpKind::kSendActivation:
        if (marks_.forward[id] != me_) Fail(op, " sends before its forward ran");
        break;
      case OpKind::kSendGradient:
        if (marks_.backward[id] != me_) Fail(op, " sends before its backward ran");
        break;
      case OpKind::kRecvActivation: marks_.activation_in[id] = me_; break;
      case OpKind::kRecvGradient: marks_.gradient_in[id] = me_; break;
      case OpKind::kStashActivation:
      case OpKind::kReleaseActivation: Activation(op, id); break;
      case OpKind::kStashWeights:
      case OpKind::kReleaseWeights:
      case OpKind::kUpdate: Weights(op); break;
      case OpKind::kAllReduce: break;
    }
  }

  void Forward(const Op& op, size_t id) {
    const int u = routing_.ForwardWorker(op.stage - 1, op.microbatch);
    if (op.stage > 0 && u == w_.worker && !Seen(marks_.forward, op.stage - 1, op.microbatch))
      Fail(op, " runs before the forward of stage " + std::to_string(op.stage - 1));
    if (op.stage > 0 && u != w_.worker && marks_.activation_in[id] != me_)
      Fail(op, " runs before its input activation is received");
    marks_.forward[id] = me_;
    marks_.forward_version[id] = op.weight_version;
  }

  void Backward(const Op& op, size_t id) {
    if (marks_.forward[id] != me_) Fail(op, " runs before its forward on this worker");
    const int next = op.stage + 1;
    const int u = routing_.BackwardWorker(next, op.microbatch);
    if (next < routing_.model_stages() && u == w_.worker &&
        !Seen(marks_.backward, next, op.microbatch))
      Fail(op, " runs before the backward of stage " + std::to_string(next));
    if (next < routing_.model_stages() && u != w_.worker && marks_.gradient_in[id] != me_)
      Fail(op, " runs before its output gradient is received");
    if (marks_.forward_version[id] != op.weight_version)
      Fail(op, " uses weight version " + std::to_string(op.weight_version) +
                   " but its forward used " + std::to_string(marks_.forward_version[id]));
    marks_.backward[id] = me_;
  }

  void Activation(const Op& op, size_t id) {
    if (op.kind == OpKind::kStashActivation) {
      if (marks_.stashed[id] == me_) Fail(op, " stashes twice");
      marks_.stashed[id] = me_;
      return;
    }
    if (marks_.stashed[id] != me_) Fail(op, " releases an activation never stashed");
    marks_.stashed[id] = 0;
  }

  void Weights(const Op& op) {
    if (op.kind == OpKind::kStashWeights) {
      if (op.weight_version != current_) Fail(op, " stashes a version that is not current");
      stashed_versions_.push_back(current_);
    } else if (op.kind == OpKind::kReleaseWeights) {
      auto it = std::find(stashed_versions_.begin(), stashed_versions_.end(), op.weight_version);
      if (it == stashed_versions_.end()) Fail(op, " releases a version never stashed");
      stashed_versions_.erase(it);
    } else {
      if (op.weight_version <= current_)
        Fail(op, " does not create a newer version than " + std::to_string(current_));
      current_ = op.weight_version;
    }
  }

  bool VersionAlive(int v) const {
    return v == current_ || std::find(stashed_versions_.begin(), stashed_versions_.end(), v) !=
                                stashed_versions_.end();
  }
  bool Seen(const std::vector<int>& flags, int stage, int microbatch) const {
    return flags[marks_.At(stage, microbatch)] == me_;
  }
  [[noreturn]] void Fail(const Op& op, const std::string& what) const {
    Broken(s_, At(w_.worker, op) + what);
  }

  const PipelineSchedule& s_;
  const Routing& routing_;
  const WorkerProgram& w_;
  Marks& marks_;
  const int me_;
  std::vector<int> stashed_versions_;
  int current_ = 0;
};

// Every Send has exactly one Recv on its peer naming it (MessageOf), and the other way round.
// There is one message per (direction, sender's stage, micro-batch).
void CheckMatching(const PipelineSchedule& s, const Routing& routing) {
  const int W = s.WorkerCount(), G = routing.model_stages();
  struct End {
    int count = 0, worker = -1, peer = -1;
    const Op* op = nullptr;
  };
  std::vector<End> sends(routing.MessageSlots()), recvs(sends.size());
  for (const auto& w : s.workers) {
    for (const Op& op : w.ops) {
      if (!IsCommunicationOp(op.kind)) continue;
      if (op.peer_worker < 0 || op.peer_worker >= W || op.peer_worker == w.worker)
        Broken(s, At(w.worker, op) + " names no other worker as its peer");
      const long slot = routing.MessageSlot(MessageOf(op, w.worker));
      if (slot < 0 || op.stage < 0 || op.stage >= G)
        Broken(s, At(w.worker, op) + " names no stage or micro-batch of this schedule");
      End& end = (IsSendOp(op.kind) ? sends : recvs)[static_cast<size_t>(slot)];
      if (++end.count > 1) Broken(s, At(w.worker, op) + " appears twice");
      end.worker = w.worker;
      end.peer = op.peer_worker;
      end.op = &op;
    }
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    const End& send = sends[i];
    const End& recv = recvs[i];
    if (recv.count && (!send.count || send.worker != recv.peer || send.peer != recv.worker))
      Broken(s, At(recv.worker, *recv.op) + " never gets its send");
    if (send.count && (!recv.count || recv.worker != send.peer))
      Broken(s, At(send.worker, *send.op) + " has no matching receive");
  }
}

// On a channel (sender, receiver, direction: op.h) messages arrive in the order they were sent
// (first in, first out), as every c10d and SimGrid channel delivers them: the receiver must
// receive them in that order.
void CheckMessageOrder(const PipelineSchedule& s, const Routing& routing) {
  std::map<std::tuple<int, int, bool>, std::vector<long>> sent, received;
  for (const auto& w : s.workers)
    for (const Op& op : w.ops) {
      if (!IsCommunicationOp(op.kind)) continue;
      const MessageKey key = MessageOf(op, w.worker);
      auto& order = IsSendOp(op.kind) ? sent : received;
      order[{key.sender, key.receiver, key.activation}].push_back(routing.MessageSlot(key));
    }
  for (const auto& [channel, slots] : sent)
    if (received[channel] != slots)
      Broken(s, "worker " + std::to_string(std::get<0>(channel)) + " sends " +
                    (std::get<2>(channel) ? "activations" : "gradients") + " to worker " +
                    std::to_string(std::get<1>(channel)) + " in another order than that worker "
                    "receives them (a channel delivers its messages in the order they are sent)");
}

}  // namespace

void ValidateSchedule(const PipelineSchedule& s) {
  for (int i = 0; i < s.WorkerCount(); ++i)
    if (s.workers[i].worker != i) Broken(s, "worker " + std::to_string(i) + " is misnumbered");
  Routing routing(s);
  CheckCoverage(s, routing);
  CheckMatching(s, routing);
  CheckMessageOrder(s, routing);
  Marks marks(routing.model_stages(), routing.microbatches());
  for (const auto& w : s.workers) WorkerOrderChecker(s, routing, w, marks).Run();
}

namespace schedule_internal {

void CheckComputeCoverage(const PipelineSchedule& schedule) {
  CheckCoverage(schedule, Routing(schedule));
}

}  // namespace schedule_internal


void CheckSchedule(const PipelineSchedule& schedule) {
  ValidateSchedule(schedule);
  OpCosts unit;
  unit.forward = unit.backward = 1;
  unit.backward_input = unit.backward_weight = unit.recompute = 1;
  ReplayResult r = ReplaySchedule(schedule, unit);
  if (!r.completed) Broken(schedule, "deadlock: " + r.deadlock);
}

}  // namespace pipetwin
