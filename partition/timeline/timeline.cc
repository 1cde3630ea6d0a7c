#include "partition/timeline/timeline.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

namespace pipetwin {

namespace {

}  // namespace

int LaneOf(OpKind kind) {
  if (kind == OpKind::kSendActivation || kind == OpKind::kSendGradient) return kSendLane;
  if (kind == OpKind::kRecvActivation || kind == OpKind::kRecvGradient) return kReceiveLane;
  if (kind == OpKind::kAllReduce) return kAllReduceLane;
  return kComputeLane;
}

TimelineEvent OpEvent(const Op& op, int device, int worker, double start_s, double end_s,
                      double bytes) {
  TimelineEvent e;
  e.device = device;
  e.worker = worker;
  e.op = op;
  e.name = op.kind == OpKind::kUpdate ? "optimizer step" : ActionName(op);
  e.category = OpKindName(op.kind);
  e.lane = LaneOf(op.kind);
  e.start_s = start_s;
  e.end_s = end_s;
  e.args = {{"stage", op.stage}, {"microbatch", op.microbatch}};
  if (IsComputeOp(op.kind) || op.kind == OpKind::kUpdate)
    e.args["weight_version"] = op.weight_version;
  if (IsCommunicationOp(op.kind)) {
    e.args["peer_worker"] = op.peer_worker;
    e.args["bytes"] = bytes;
  }
  if (op.kind == OpKind::kAllReduce) e.args["bytes"] = bytes;
  return e;
}

TimelineEvent AllReduceEvent(int device, int worker, int stage, int bucket, double bytes,
                             double start_s, double end_s) {
  TimelineEvent e;
  e.device = device;
  e.worker = worker;
  e.op.kind = OpKind::kAllReduce;
  e.op.stage = stage;
  e.name = "all-reduce";
  e.category = "all_reduce";
  e.lane = kAllReduceLane;
  e.start_s = start_s;
  e.end_s = end_s;
  e.args = {{"bytes", bytes}, {"bucket", bucket}};
  return e;
}

std::string ProcessName(const TimelineProcess& p) {
  return "device " + std::to_string(p.device) + ": worker " + std::to_string(p.worker) +
         ", stage " + std::to_string(p.stage);
}

std::vector<PipelinePhase> PipelinePhases(const Timeline& t) {
  struct Flight {
    double start = 0, end = 0;
  };
  std::map<int, Flight> flights;  // by micro-batch
  for (const TimelineEvent& e : t.events) {
    if (!IsComputeOp(e.op.kind) || e.op.microbatch < 0) continue;
    auto [it, fresh] = flights.try_emplace(e.op.microbatch, Flight{e.start_s, e.end_s});
    if (!fresh) {
      it->second.start = std::min(it->second.start, e.start_s);
      it->second.end = std::max(it->second.end, e.end_s);
    }
  }
  std::vector<std::pair<Flight, int>> by_start;  // flight, micro-batch
  for (const auto& [mb, f] : flights) by_start.push_back({f, mb});
  std::sort(by_start.begin(), by_start.end(),
            [](const auto& a, const auto& b) { return a.first.start < b.first.start; });
  std::vector<Flight> periods;
  std::map<int, size_t> period_of;  // micro-batch -> index into periods
  for (const auto& [f, mb] : by_start) {
    if (periods.empty() || f.start >= periods.back().end) periods.push_back(f);
    else periods.back().end = std::max(periods.back().end, f.end);
    period_of[mb] = periods.size() - 1;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> first_backward(periods.size(), inf), last_forward(periods.size(), -inf);
  for (const TimelineEvent& e : t.events) {
    if (!IsComputeOp(e.op.kind) || e.op.microbatch < 0) continue;
    const size_t p = period_of.at(e.op.microbatch);
    if (e.op.kind == OpKind::kForward) last_forward[p] = std::max(last_forward[p], e.end_s);
    else first_backward[p] = std::min(first_backward[p], e.start_s);
  }
  std::vector<PipelinePhase> phases;
  auto add = [&](const char* name, double start, double end) {
    if (end > start) phases.push_back({name, start, end});
  };
  for (size_t p = 0; p < periods.size(); ++p) {
    const auto [start, end] = periods[p];
    if (first_backward[p] == inf) {
      add("steady", start, end);
      continue;
    }
    const double steady_end = std::max(first_backward[p], std::min(last_forward[p], end));
    add("warm-up", start, first_backward[p]);
    add("steady", first_backward[p], steady_end);
    add("cool-down", steady_end, end);
  }
  return phases;
}

Timeline ReplayTimeline(const PipelineSchedule& s, const ReplayResult& replay) {
  Timeline t;
  t.other_data = {{"schedule", ScheduleKindName(s.kind)}};
  for (const WorkerProgram& p : s.workers) {
    t.processes.push_back({p.worker, p.worker, p.stage, p.replica, {}});
    if (static_cast<size_t>(p.worker) >= replay.workers.size()) continue;
    const WorkerTiming& timing = replay.workers[p.worker];
    for (size_t i = 0; i < p.ops.size() && i < timing.op_start.size(); ++i)
      t.AddOp(OpEvent(p.ops[i], p.worker, p.worker, timing.op_start[i], timing.op_end[i]));
  }
  return t;
}

std::string TimelineLabel(const Timeline& t, size_t index) {
  return t.label.empty() ? "timeline " + std::to_string(index + 1) : t.label;
}

double Timeline::EndSeconds() const {
  double end = 0;
  for (const auto& e : events) end = std::max(end, e.end_s);
  for (const auto& e : updates) end = std::max(end, e.start_s);
  return end;
}

std::map<int, std::vector<const TimelineEvent*>> EventsByWorker(
    const std::vector<TimelineEvent>& events) {
  std::map<int, std::vector<const TimelineEvent*>> by_worker;
  for (const auto& e : events) by_worker[e.worker].push_back(&e);
  return by_worker;
}

std::vector<MessageEvents> MatchMessages(const std::vector<TimelineEvent>& events) {
  // Per key, its sends and its receives in order of start.
  std::map<MessageKey, std::pair<std::vector<size_t>, std::vector<size_t>>> by_key;
  for (size_t i = 0; i < events.size(); ++i) {
    const TimelineEvent& e = events[i];
    if (!IsCommunicationOp(e.op.kind)) continue;
    auto& [sends, recvs] = by_key[MessageOf(e.op, e.worker)];
    (IsSendOp(e.op.kind) ? sends : recvs).push_back(i);
  }
  auto by_start = [&](size_t a, size_t b) { return events[a].start_s < events[b].start_s; };
  std::vector<MessageEvents> pairs;
  for (auto& [key, lists] : by_key) {
    auto& [sends, recvs] = lists;
    std::stable_sort(sends.begin(), sends.end(), by_start);
    std::stable_sort(recvs.begin(), recvs.end(), by_start);
    for (size_t k = 0; k < std::min(sends.size(), recvs.size()); ++k)
      pairs.push_back({sends[k], recvs[k]});
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const MessageEvents& a, const MessageEvents& b) { return a.send < b.send; });
  return pairs;
}

void EndSendsWhenReceived(std::vector<TimelineEvent>& events) {
  for (const MessageEvents& m : MatchMessages(events))
    events[m.send].end_s = std::max(events[m.send].end_s, events[m.recv].end_s);
}

void Timeline::AddOp(const TimelineEvent& event) {
  if (IsComputeOp(event.op.kind) || IsCommunicationOp(event.op.kind)) events.push_back(event);
  if (event.op.kind == OpKind::kUpdate) updates.push_back(event);
}

}  // namespace pipetwin
