// From compute orders to complete op lists: weight versions, communication, stash events.
//
// PlaceCommunication first runs the compute orders without times to prove they complete, then
// puts each Send right after the op producing its data and each Recv right before the op
// consuming it (op.h). No op times enter: the best place of a message does not depend on them.
#include <algorithm>
#include <map>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/internal/lowering.h"
#include "partition/schedule/spec.h"

namespace pipetwin::schedule_internal {

namespace {

int TwoBufferVersion(int microbatch, int per_batch) {
  // PipeDream-2BW (ICML'21) section 3.1: micro-batch k (from 1) of batch floor((k-1)/m) uses
  // W(t-1): version max(floor((k-1)/m) - 1, 0). Here microbatch counts from 0.
  return std::max(microbatch / per_batch - 1, 0);
}

}  // namespace

void AssignWeightVersions(PipelineSchedule& s, VersionPolicy policy) {
  Routing routing(s);
  const int M = routing.microbatches();
  // Vertical sync: the version stage 0 used for each minibatch (stage 0 uses its latest).
  std::vector<int> input_version(M, 0);
  const int per_batch = std::max(s.microbatches_per_batch, 1);
  const size_t slots = static_cast<size_t>(routing.model_stages()) * M;
  std::vector<int> forward_version(slots, -1);  // by stage * M + micro-batch
  auto assign = [&](WorkerProgram& w, bool record_input) {
    int current = 0;
    for (Op& op : w.ops) {
      if (op.kind == OpKind::kForward) {
        int v = current;
        if (policy == VersionPolicy::kTwoBuffer) v = TwoBufferVersion(op.microbatch, per_batch);
        if (policy == VersionPolicy::kVerticalSync && !record_input) v = input_version[op.microbatch];
        if (record_input && op.stage == 0) input_version[op.microbatch] = v;
        if (v > current)
          throw InputError("schedule " + ScheduleKindName(s.kind) + ": worker " +
                           std::to_string(w.worker) + " would run " + DescribeOp(op) +
                           " with weight version " + std::to_string(v) +
                           " before it exists (current " + std::to_string(current) + ")");
        op.weight_version = v;
        forward_version[static_cast<size_t>(op.stage) * M + op.microbatch] = v;
      } else if (IsComputeOp(op.kind) && policy == VersionPolicy::kLatestEverywhere) {
        op.weight_version = current;
      } else if (IsComputeOp(op.kind)) {
        op.weight_version = forward_version[static_cast<size_t>(op.stage) * M + op.microbatch];
      } else if (op.kind == OpKind::kAllReduce) {
        op.weight_version = current + 1;
      } else if (op.kind == OpKind::kUpdate) {
        op.weight_version = ++current;
      }
    }
  };
  if (policy == VersionPolicy::kVerticalSync)
    for (auto& w : s.workers)
      if (w.stage == 0) assign(w, true);
  for (auto& w : s.workers)
    if (policy != VersionPolicy::kVerticalSync || w.stage != 0) assign(w, false);
}

namespace {

// Follows one worker's ops in order and appends each with the stash and release ops it implies:
// StashActivation after a Forward, ReleaseActivation after a Backward or BackwardWeight,
// StashWeights before an Update when the current version is used later, ReleaseWeights after
// the last use of a stashed version.
class StashAnnotator {
 public:
  // `ops` holds the worker's compute ops and updates in order (communication may be absent).
  StashAnnotator(const std::vector<Op>& ops, int stage, bool recompute)
      : stage_(stage), recompute_(recompute) {
    for (size_t i = 0; i < ops.size(); ++i) {
      const int v = ops[i].weight_version;
      if (!IsComputeOp(ops[i].kind) || v < 0) continue;
      if (static_cast<size_t>(v) >= last_use_.size()) last_use_.resize(v + 1, 0);
      last_use_[v] = i + 1;
    }
  }

  // Appends `op`, which sits at index `i` of the list given to the constructor (any index for an
  // op not in it), and what it implies.
  void Append(const Op& op, size_t i, std::vector<Op>& out) {
    if (op.kind == OpKind::kUpdate) {
      if (UsedAfter(current_, i)) {
        out.push_back(Weights(OpKind::kStashWeights, current_));
        stashed_.push_back(current_);
      }
      out.push_back(op);
      current_ = op.weight_version;
      return;
    }
    out.push_back(op);
    if (op.kind == OpKind::kForward) {
      Op stash = MakeOp(OpKind::kStashActivation, op.stage, op.chunk, op.microbatch);
      stash.input_only = recompute_;
      out.push_back(stash);
    }
    if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardWeight)
      out.push_back(MakeOp(OpKind::kReleaseActivation, op.stage, op.chunk, op.microbatch));
    if (!IsComputeOp(op.kind) || UsedAfter(op.weight_version, i)) return;
    auto it = std::find(stashed_.begin(), stashed_.end(), op.weight_version);
    if (it == stashed_.end()) return;
    out.push_back(Weights(OpKind::kReleaseWeights, op.weight_version));
    stashed_.erase(it);
  }

 private:
  bool UsedAfter(int v, size_t i) const {
    return v >= 0 && static_cast<size_t>(v) < last_use_.size() && last_use_[v] > i + 1;
  }
  Op Weights(OpKind kind, int version) const {
    Op op = MakeOp(kind, stage_, 0, -1);
    op.weight_version = version;
    return op;
  }

  int stage_;
  bool recompute_;
  std::vector<size_t> last_use_;  // index of each version's last compute op, +1 (0: none)
  std::vector<int> stashed_;
  int current_ = 0;
};

// Checks that the compute orders can complete and lays each message out where it is best
// placed: the Send right after the op that produces the data, the Recv right before the op that
// consumes it (op.h's contract: a Send is posted and never waited for in line, receives are
// posted early, a Recv op is the wait). Under recomputation in the backward (the frameworks'
// way) the Recompute consumes the gradient, so it waits for it too; under early recomputation
// the Backward does.
class CommunicationPlacer {
 public:
  explicit CommunicationPlacer(PipelineSchedule& s)
      : s_(s), routing_(s), G_(routing_.model_stages()), M_(routing_.microbatches()) {
    const size_t n = static_cast<size_t>(G_) * M_;
    forward_done_.assign(n, false);
    backward_done_.assign(n, false);
    for (auto& w : s.workers) replicas_of_[w.stage].push_back(w.worker);
  }

  void Run() {
    CheckCompletes();
    for (auto& w : s_.workers) Lower(w);
  }

 private:
  size_t Index(int stage, int mb) const { return static_cast<size_t>(stage) * M_ + mb; }

  // Whether op (the next of worker w) has its inputs. Under the lists' contract a worker waits
  // only for data another op produces, and for its replicas at an AllReduce.
  bool Ready(int w, const Op& op, const std::vector<size_t>& next) const {
    const int g = op.stage, k = op.microbatch;
    switch (op.kind) {
      case OpKind::kForward:
        return g == 0 || routing_.ForwardWorker(g - 1, k) < 0 || forward_done_[Index(g - 1, k)];
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
        if (!forward_done_[Index(g, k)]) return false;
        return g + 1 >= G_ || routing_.BackwardWorker(g + 1, k) < 0 ||
               backward_done_[Index(g + 1, k)];
      case OpKind::kBackwardWeight: return backward_done_[Index(g, k)];
      case OpKind::kRecompute:
        if (!forward_done_[Index(g, k)]) return false;
        return s_.recompute_timing == RecomputeTiming::kEarly || g + 1 >= G_ ||
               routing_.BackwardWorker(g + 1, k) < 0 || backward_done_[Index(g + 1, k)];
      case OpKind::kAllReduce:
        for (int r : replicas_of_.at(s_.workers[w].stage)) {
          const auto& ops = s_.workers[r].ops;
          if (next[r] >= ops.size() || ops[next[r]].kind != OpKind::kAllReduce ||
              ops[next[r]].weight_version != op.weight_version)
            return false;
        }
        return true;
      default: return true;
    }
  }

  // Runs the compute orders without times (every op as soon as its inputs exist); throws when a
  // worker can never go on (a dependency cycle). Completing proves the lists deadlock-free: it
  // is a global order in which every wait is satisfied by an op placed before it.
  void CheckCompletes() {
    const int W = s_.WorkerCount();
    std::vector<size_t> next(W, 0);
    std::vector<int> queue;
    for (int w = 0; w < W; ++w) queue.push_back(w);
    while (!queue.empty()) {
      const int w = queue.back();
      queue.pop_back();
      const auto& ops = s_.workers[w].ops;
      while (next[w] < ops.size() && Ready(w, ops[next[w]], next)) {
        const Op& op = ops[next[w]];
        if (op.kind == OpKind::kAllReduce) {
          for (int r : replicas_of_.at(s_.workers[w].stage)) {
            ++next[r];
            if (r != w) queue.push_back(r);
          }
          continue;
        }
        ++next[w];
        const int g = op.stage, k = op.microbatch;
        if (op.kind == OpKind::kForward) {
          forward_done_[Index(g, k)] = true;
          for (int u : {routing_.ForwardWorker(g + 1, k), routing_.BackwardWorker(g, k)})
            if (u >= 0 && u != w) queue.push_back(u);
        } else if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput) {
          backward_done_[Index(g, k)] = true;
          for (int u : {routing_.BackwardWorker(g - 1, k), routing_.ForwardWorker(g - 1, k)})
            if (u >= 0 && u != w) queue.push_back(u);
        }
      }
    }
    for (int w = 0; w < W; ++w)
      if (next[w] < s_.workers[w].ops.size()) Stuck(w, s_.workers[w].ops[next[w]]);
  }

  int ChunkOf(int worker, int stage) const {
    const auto& stages = s_.workers[worker].model_stages;
    auto it = std::find(stages.begin(), stages.end(), stage);
    return it == stages.end() ? 0 : static_cast<int>(it - stages.begin());
  }

  void Message(bool activation, int from, int to, int sender_stage, int mb, bool send,
               std::vector<Op>& out) const {
    const MessageKey key{activation, sender_stage, mb, from, to};
    Op op = send ? SendOf(key) : RecvOf(key);
    op.chunk = ChunkOf(send ? from : to, op.stage);
    out.push_back(op);
  }

  // Worker w's compute order with its messages and stash ops.
  void Lower(WorkerProgram& w) {
    std::vector<Op> plan = std::move(w.ops);
    StashAnnotator annotator(plan, w.stage, s_.recompute);
    w.ops.clear();
    w.ops.reserve(plan.size() * 3 + 8);
    std::vector<bool> gradient_in(static_cast<size_t>(G_) * M_, false);
    const bool in_backward = s_.recompute_timing == RecomputeTiming::kInBackward;
    for (size_t i = 0; i < plan.size(); ++i) {
      const Op& op = plan[i];
      const int g = op.stage, k = op.microbatch;
      // The Recv right before the op that consumes it.
      if (op.kind == OpKind::kForward && g > 0) {
        const int u = routing_.ForwardWorker(g - 1, k);
        if (u >= 0 && u != w.worker) Message(true, u, w.worker, g - 1, k, false, w.ops);
      }
      const bool takes_gradient = op.kind == OpKind::kBackward ||
                                  op.kind == OpKind::kBackwardInput ||
                                  (op.kind == OpKind::kRecompute && in_backward);
      if (takes_gradient && g + 1 < G_ && !gradient_in[Index(g, k)]) {
        const int u = routing_.BackwardWorker(g + 1, k);
        if (u >= 0 && u != w.worker) Message(false, u, w.worker, g + 1, k, false, w.ops);
        gradient_in[Index(g, k)] = true;
      }
      annotator.Append(op, i, w.ops);
      // The Send right after the op that produces it.
      if (op.kind == OpKind::kForward && g + 1 < G_) {
        const int u = routing_.ForwardWorker(g + 1, k);
        if (u >= 0 && u != w.worker) Message(true, w.worker, u, g, k, true, w.ops);
      } else if ((op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput) && g > 0) {
        const int u = routing_.BackwardWorker(g - 1, k);
        if (u >= 0 && u != w.worker) Message(false, w.worker, u, g, k, true, w.ops);
      }
    }
  }

  [[noreturn]] void Stuck(int w, const Op& op) const {
    std::string why = "its input never arrives";
    if (op.kind == OpKind::kAllReduce) why = "the stage's replicas never all reach it";
    if (IsBackwardOp(op.kind) || op.kind == OpKind::kRecompute)
      why = "its forward or its gradient never comes first";
    throw InputError("schedule " + ScheduleKindName(s_.kind) +
                     ": the compute order cannot complete: worker " + std::to_string(w) +
                     " waits forever at " + DescribeOp(op) + " (" + why + ")");
  }

  PipelineSchedule& s_;
  Routing routing_;
  int G_, M_;
  std::vector<bool> forward_done_, backward_done_;
  std::map<int, std::vector<int>> replicas_of_;
};

}  // namespace

void PlaceCommunication(PipelineSchedule& s) { CommunicationPlacer(s).Run(); }

void AnnotateStashes(PipelineSchedule& s) {
  for (auto& w : s.workers) {
    StashAnnotator annotator(w.ops, w.stage, s.recompute);
    std::vector<Op> out;
    out.reserve(w.ops.size() * 3 / 2 + 8);
    for (size_t i = 0; i < w.ops.size(); ++i) annotator.Append(w.ops[i], i, out);
    w.ops = std::move(out);
  }
}

}  // namespace pipetwin::schedule_internal
