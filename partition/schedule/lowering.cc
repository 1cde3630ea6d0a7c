// From compute orders to complete op lists: weight versions, communication, stash events.
//
// PlaceCommunication replays the compute orders as a discrete-event simulation with the given
// times (communication free) and appends each Send/Recv pair to both workers' lists at the first
// instant, once the data is produced, at which both workers are between ops. Every pair thus
// sits at one point of a single global order of appends, and running the workers in that global
// order always succeeds, even when a Send must wait for its Recv (rendezvous). Since each
// worker's progress only depends on matched partners, no other interleaving can deadlock
// either. With the times the lists were placed for, both a rendezvous and a buffered replay
// reproduce this simulation exactly: no Send ever waits.
#include <algorithm>
#include <cmath>
#include <cstdint>
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

// The events due at one instant, in arrival order: messages are placed before any op that
// starts at the same instant (so that a Recv precedes the op that needs it).
struct Bucket {
  std::vector<int> messages;                 // message ids
  std::vector<std::pair<int, long>> ops;     // (worker, stamp)
  size_t next_message = 0, next_op = 0;
};

class CommunicationPlacer {
 public:
  CommunicationPlacer(PipelineSchedule& s, const OpCosts& costs)
      : s_(s), cost_(CostTable(costs)), routing_(s), G_(routing_.model_stages()),
        M_(routing_.microbatches()) {
    const int W = s.WorkerCount();
    for (auto& w : s.workers) {
      annotators_.emplace_back(w.ops, w.stage, s.recompute);
      plan_.push_back(std::move(w.ops));
      w.ops.clear();
      w.ops.reserve(plan_.back().size() * 4 + 8);  // room for Send/Recv pairs and stash ops
    }
    next_.assign(W, 0);
    free_at_.assign(W, 0);
    stamp_.assign(W, 0);
    scheduled_.assign(W, -1);
    const size_t n = static_cast<size_t>(G_) * M_;
    forward_end_.assign(n, -1);
    backward_end_.assign(n, -1);
    activation_arrival_.assign(n, -1);
    gradient_arrival_.assign(n, -1);
    for (auto& w : s.workers) replicas_of_[w.stage].push_back(w.worker);
  }

  void Run() {
    for (int w = 0; w < s_.WorkerCount(); ++w) Refresh(w);
    while (!calendar_.empty()) {
      auto it = calendar_.begin();
      const double now = it->first;
      Bucket& due = it->second;  // map nodes stay put while later events are added
      while (true) {
        if (due.next_message < due.messages.size()) {
          const int id = due.messages[due.next_message++];
          // A pair is placed only when both workers are between ops, so that neither waits for
          // the other under rendezvous; a busy one is waited for.
          const MessageKey& m = messages_[id];
          const double busy_until = std::max(free_at_[m.sender], free_at_[m.receiver]);
          if (busy_until > now) {
            calendar_[busy_until].messages.push_back(id);
          } else {
            Deliver(id, now);
          }
        } else if (due.next_op < due.ops.size()) {
          const auto [w, stamp] = due.ops[due.next_op++];
          if (stamp != stamp_[w]) continue;  // superseded
          scheduled_[w] = -1;
          Emit(w, now);
        } else {
          break;
        }
      }
      calendar_.erase(it);
    }
    for (int w = 0; w < s_.WorkerCount(); ++w) {
      if (next_[w] < plan_[w].size()) Stuck(w);
    }
  }

 private:
  size_t Index(int stage, int mb) const { return static_cast<size_t>(stage) * M_ + mb; }

  // When the worker's next op can start, or -1 while it waits.
  double ReadyTime(int w) const {
    const Op& op = plan_[w][next_[w]];
    double t = free_at_[w];
    auto need = [&t](double when) {
      if (when < 0) return false;
      t = std::max(t, when);
      return true;
    };
    const int g = op.stage, k = op.microbatch;
    switch (op.kind) {
      case OpKind::kForward:
        if (g > 0) {
          int u = routing_.ForwardWorker(g - 1, k);
          if (u == w && !need(forward_end_[Index(g - 1, k)])) return -1;
          if (u >= 0 && u != w && !need(activation_arrival_[Index(g, k)])) return -1;
        }
        return t;
      case OpKind::kBackward:
      case OpKind::kBackwardInput:
        if (!need(forward_end_[Index(g, k)])) return -1;
        if (g + 1 < G_) {
          int u = routing_.BackwardWorker(g + 1, k);
          if (u == w && !need(backward_end_[Index(g + 1, k)])) return -1;
          if (u >= 0 && u != w && !need(gradient_arrival_[Index(g, k)])) return -1;
        }
        return t;
      case OpKind::kBackwardWeight:
        return need(backward_end_[Index(g, k)]) ? t : -1;
      case OpKind::kRecompute:
        return need(forward_end_[Index(g, k)]) ? t : -1;
      case OpKind::kAllReduce:
        for (int r : replicas_of_.at(s_.workers[w].stage)) {
          if (next_[r] >= plan_[r].size()) return -1;
          const Op& other = plan_[r][next_[r]];
          if (other.kind != OpKind::kAllReduce || other.weight_version != op.weight_version)
            return -1;
          t = std::max(t, free_at_[r]);
        }
        return t;
      default:
        return t;
    }
  }

  // Re-evaluates when worker w's next op can start; keeps its pending event when unchanged.
  void Refresh(int w) {
    const double t = next_[w] < plan_[w].size() ? ReadyTime(w) : -1;
    if (t == scheduled_[w]) return;
    ++stamp_[w];
    scheduled_[w] = t;
    if (t >= 0) calendar_[t].ops.push_back({w, stamp_[w]});
  }

  void Deliver(int id, double time) {
    const MessageKey& m = messages_[id];
    Op send = SendOf(m), recv = RecvOf(m);
    send.chunk = ChunkOf(m.sender, send.stage);
    recv.chunk = ChunkOf(m.receiver, recv.stage);
    s_.workers[m.sender].ops.push_back(send);
    s_.workers[m.receiver].ops.push_back(recv);
    (m.activation ? activation_arrival_ : gradient_arrival_)[Index(recv.stage, m.microbatch)] =
        time;
    Refresh(m.receiver);
  }

  int ChunkOf(int worker, int stage) const {
    const auto& stages = s_.workers[worker].model_stages;
    auto it = std::find(stages.begin(), stages.end(), stage);
    return it == stages.end() ? 0 : static_cast<int>(it - stages.begin());
  }

  void Send(bool activation, int from, int to, int stage, int mb, double time) {
    messages_.push_back({activation, stage, mb, from, to});
    calendar_[time].messages.push_back(static_cast<int>(messages_.size()) - 1);
  }

  // Op times for placing, by kind: not divided by the chunk count (order is scale-free, and
  // 3 x 1/3 is not 1 in floating point), on a binary grid 2^-24 of the longest op so that sums
  // are exact and "both workers are between ops" does not hinge on rounding.
  static std::vector<double> CostTable(const OpCosts& costs) {
    const int kinds = static_cast<int>(OpKind::kReleaseWeights) + 1;
    std::vector<double> table(kinds, 0);
    double longest = 0;
    for (int k = 0; k < kinds; ++k) {
      table[k] = costs.Of(MakeOp(static_cast<OpKind>(k), 0, 0, 0), 1);
      if (!IsCommunicationOp(static_cast<OpKind>(k))) longest = std::max(longest, table[k]);
    }
    const double grid = longest > 0 ? std::ldexp(1.0, std::ilogb(longest) + 1 - 24) : 1.0;
    for (int k = 0; k < kinds; ++k)
      table[k] = IsCommunicationOp(static_cast<OpKind>(k)) ? 0 : std::round(table[k] / grid) * grid;
    return table;
  }

  double Cost(const Op& op) const { return cost_[static_cast<int>(op.kind)]; }

  void Emit(int w, double start) {
    const Op op = plan_[w][next_[w]];
    const double end = start + Cost(op);
    if (op.kind == OpKind::kAllReduce) {
      for (int r : replicas_of_.at(s_.workers[w].stage)) {
        annotators_[r].Append(plan_[r][next_[r]], next_[r], s_.workers[r].ops);
        ++next_[r];
        free_at_[r] = end;
        Refresh(r);
      }
      return;
    }
    annotators_[w].Append(op, next_[w], s_.workers[w].ops);
    ++next_[w];
    free_at_[w] = end;
    const int g = op.stage, k = op.microbatch;
    if (op.kind == OpKind::kForward) {
      forward_end_[Index(g, k)] = end;
      int u = routing_.ForwardWorker(g + 1, k);
      if (g + 1 < G_ && u >= 0 && u != w) Send(true, w, u, g, k, end);
    } else if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput) {
      backward_end_[Index(g, k)] = end;
      int u = routing_.BackwardWorker(g - 1, k);
      if (g > 0 && u >= 0 && u != w) Send(false, w, u, g, k, end);
    }
    Refresh(w);
  }

  [[noreturn]] void Stuck(int w) const {
    const Op& op = plan_[w][next_[w]];
    std::string why = "its input never arrives";
    if (op.kind == OpKind::kAllReduce) why = "the stage's replicas never all reach it";
    if (IsBackwardOp(op.kind) || op.kind == OpKind::kRecompute)
      why = "its forward or its gradient never comes first";
    throw InputError("schedule " + ScheduleKindName(s_.kind) +
                     ": the compute order cannot complete: worker " + std::to_string(w) +
                     " waits forever at " + DescribeOp(op) + " (" + why + ")");
  }

  PipelineSchedule& s_;
  std::vector<double> cost_;  // by OpKind
  Routing routing_;
  int G_, M_;
  std::vector<std::vector<Op>> plan_;
  std::vector<StashAnnotator> annotators_;
  std::vector<size_t> next_;
  std::vector<double> free_at_;
  std::vector<long> stamp_;
  std::vector<double> scheduled_;  // start time of the worker's pending event, -1 if none
  std::vector<double> forward_end_, backward_end_, activation_arrival_, gradient_arrival_;
  std::map<int, std::vector<int>> replicas_of_;
  std::vector<MessageKey> messages_;
  std::map<double, Bucket> calendar_;  // events by the instant they are due
};

}  // namespace

void PlaceCommunication(PipelineSchedule& s, const OpCosts& costs) {
  CommunicationPlacer(s, costs).Run();
}

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
