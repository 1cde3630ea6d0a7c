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
  e.name = ActionName(op);
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

void Timeline::AddOp(const TimelineEvent& event) {
  if (IsComputeOp(event.op.kind) || IsCommunicationOp(event.op.kind)) events.push_back(event);
  if (event.op.kind == OpKind::kUpdate) updates.push_back(event);
}

}  // namespace pipetwin
