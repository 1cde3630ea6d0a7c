#include "partition/timeline/timeline.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
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
