// The replayer: a discrete-event execution of the op lists (the semantics the simulator and the
// executor follow), and the memory and staleness figures that follow from the lists alone.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "partition/schedule/replay.h"
#include "partition/schedule/internal/lowering.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

namespace {

using schedule_internal::DescribeOp;
using schedule_internal::Routing;

}  // namespace

void SummarizeStaleness(const std::vector<double>& delays, StageSummary& stage) {
  if (delays.empty()) return;
  double sum = 0;
  for (double d : delays) sum += d;
  stage.staleness_min = *std::min_element(delays.begin(), delays.end());
  stage.staleness_max = *std::max_element(delays.begin(), delays.end());
  stage.staleness_mean = sum / delays.size();
}

std::vector<StageSummary> AnalyzeSchedule(const PipelineSchedule& s) {
  std::vector<StageSummary> stages(s.stages);
  std::vector<std::vector<double>> delays(s.stages);
  for (int i = 0; i < s.stages; ++i) stages[i].stage = i;
  for (const auto& w : s.workers) {
    if (w.stage < 0 || w.stage >= s.stages) continue;
    StageSummary& r = stages[w.stage];
    int activations = 0, versions = 1, current = 0, updates = 0;
    int oldest_gradient = std::numeric_limits<int>::max();
    r.max_weight_versions = std::max(r.max_weight_versions, 1);
    for (const Op& op : w.ops) {
      switch (op.kind) {
        case OpKind::kStashActivation: ++activations; break;
        case OpKind::kReleaseActivation: --activations; break;
        case OpKind::kStashWeights: ++versions; break;
        case OpKind::kReleaseWeights: --versions; break;
        case OpKind::kBackward:
        case OpKind::kBackwardWeight:
          if (op.weight_version >= 0) oldest_gradient = std::min(oldest_gradient, op.weight_version);
          break;
        case OpKind::kUpdate:
          // The gradients this update applies were computed with oldest_gradient..current.
          if (oldest_gradient != std::numeric_limits<int>::max())
            delays[w.stage].push_back(current - oldest_gradient);
          oldest_gradient = std::numeric_limits<int>::max();
          current = op.weight_version;
          ++updates;
          break;
        default: break;
      }
      r.max_in_flight_activations = std::max(r.max_in_flight_activations, activations);
      r.max_weight_versions = std::max(r.max_weight_versions, versions);
    }
    r.updates = std::max(r.updates, updates);
  }
  for (int i = 0; i < s.stages; ++i) SummarizeStaleness(delays[i], stages[i]);
  return stages;
}

namespace {

// The discrete-event execution under op.h's contract. Each worker advances through its list
// until it blocks on a Recv (its Send not posted yet) or an AllReduce (replicas missing). A Send
// is posted and the worker goes on; its message arrives `transfer` later, and the Recv ends at
// the later of its start and that arrival. With blocking sends a compute op starts no earlier
// than the arrival of every message its worker has sent.
class Replayer {
 public:
  Replayer(const PipelineSchedule& s, const OpCosts& costs)
      : s_(s), costs_(costs), routing_(s) {
    const int W = s.WorkerCount();
    const size_t slots = routing_.MessageSlots();
    arrival_.assign(slots, -1);
    clock_.assign(W, 0);
    sent_until_.assign(W, 0);
    pc_.assign(W, 0);
    posted_.assign(W, false);
    result_.workers.resize(W);
    for (int w = 0; w < W; ++w) {
      result_.workers[w].worker = w;
      result_.workers[w].op_start.assign(s.workers[w].ops.size(), 0);
      result_.workers[w].op_end.assign(s.workers[w].ops.size(), 0);
      replicas_of_[s.workers[w].stage].push_back(w);
    }
  }

  ReplayResult Run() {
    for (int w = 0; w < s_.WorkerCount(); ++w) ready_.push_back(w);
    while (!ready_.empty()) {
      int w = ready_.front();
      ready_.pop_front();
      Advance(w);
    }
    Finish();
    return result_;
  }

 private:
  // Completes the op at worker w's pc, started at `start`, ended at `end`.
  void Complete(int w, double start, double end) {
    result_.workers[w].op_start[pc_[w]] = start;
    result_.workers[w].op_end[pc_[w]] = end;
    clock_[w] = end;
    ++pc_[w];
    posted_[w] = false;
  }

  void Advance(int w) {
    const auto& ops = s_.workers[w].ops;
    while (pc_[w] < ops.size()) {
      const Op& op = ops[pc_[w]];
      const double t = clock_[w];
      if (IsCommunicationOp(op.kind)) {
        if (!Communicate(w, op, t)) return;
      } else if (op.kind == OpKind::kAllReduce) {
        if (!Collective(w, op, t)) return;
      } else {
        const double cost = costs_.Of(op, s_.chunks);
        double start = t;
        if (IsComputeOp(op.kind)) {
          result_.workers[w].busy += cost;
          if (s_.send_mode == SendMode::kBlocking) start = std::max(t, sent_until_[w]);
        }
        Complete(w, start, start + cost);
      }
    }
  }

  // Returns whether the op completed now.
  bool Communicate(int w, const Op& op, double t) {
    if (posted_[w]) return false;  // waiting; the partner completes it
    // An op that names no message never matches and shows as a deadlock.
    const long slot = routing_.MessageSlot(MessageOf(op, w));
    if (slot < 0) {
      posted_[w] = true;
      return false;
    }
    if (IsSendOp(op.kind)) {
      arrival_[slot] = t + costs_.transfer;
      sent_until_[w] = std::max(sent_until_[w], arrival_[slot]);
      Complete(w, t, t);
      Wake(op.peer_worker);
      return true;
    }
    if (arrival_[slot] < 0) return false;  // re-checked when the send is posted
    Complete(w, t, std::max(t, arrival_[slot]));
    return true;
  }

  bool Collective(int w, const Op& op, double t) {
    if (posted_[w]) return false;
    const auto& group = replicas_of_[s_.workers[w].stage];
    auto& arrived = collectives_[{s_.workers[w].stage, op.weight_version}];
    arrived.push_back({w, t});
    posted_[w] = true;
    if (arrived.size() < group.size()) return false;
    double start = 0;
    for (const auto& [r, when] : arrived) start = std::max(start, when);
    const double end = start + costs_.Of(op, s_.chunks);
    for (const auto& [r, when] : arrived) {
      Complete(r, when, end);
      if (r != w) Wake(r);
    }
    collectives_.erase({s_.workers[w].stage, op.weight_version});
    return true;
  }

  void Wake(int w) { ready_.push_back(w); }

  void Finish() {
    std::string stuck;
    int stuck_count = 0;
    for (int w = 0; w < s_.WorkerCount(); ++w) {
      const auto& ops = s_.workers[w].ops;
      if (pc_[w] >= ops.size()) continue;
      if (++stuck_count <= 4)
        stuck += std::string(stuck.empty() ? "" : "; ") + "worker " + std::to_string(w) +
                 " waits at " + DescribeOp(ops[pc_[w]]);
    }
    if (stuck_count > 4) stuck += "; " + std::to_string(stuck_count - 4) + " more";
    result_.completed = stuck_count == 0;
    result_.deadlock = stuck;
    double makespan = 0;
    for (int w = 0; w < s_.WorkerCount(); ++w) makespan = std::max(makespan, clock_[w]);
    double idle = 0, busy = 0;
    for (auto& wt : result_.workers) {
      wt.finish = clock_[wt.worker];
      wt.idle = makespan - wt.busy;
      idle += wt.idle;
      busy += wt.busy;
    }
    result_.makespan = makespan;
    const double capacity = makespan * s_.WorkerCount();
    result_.bubble_fraction = capacity > 0 ? idle / capacity : 0;
    result_.bubble_over_compute = busy > 0 ? idle / busy : 0;
    result_.stages = AnalyzeSchedule(s_);
  }

  const PipelineSchedule& s_;
  const OpCosts& costs_;
  Routing routing_;
  std::vector<double> clock_;
  std::vector<double> sent_until_;  // per worker: when the messages it has sent have all arrived
  std::vector<size_t> pc_;
  std::vector<bool> posted_;
  std::deque<int> ready_;
  std::vector<double> arrival_;  // by message slot, -1: not sent yet
  std::map<std::pair<int, int>, std::vector<std::pair<int, double>>> collectives_;
  std::map<int, std::vector<int>> replicas_of_;
  ReplayResult result_;
};

}  // namespace

ReplayResult ReplaySchedule(const PipelineSchedule& schedule, const OpCosts& costs) {
  return Replayer(schedule, costs).Run();
}

}  // namespace pipetwin
