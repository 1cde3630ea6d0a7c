// Names of the schedule kinds (kind.h).
#include "partition/schedule/kind.h"

#include "partition/util/error.h"

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

bool IsAsynchronous(ScheduleKind kind) {
  return kind == ScheduleKind::kPipeDream || kind == ScheduleKind::kTwoBW;
}

const std::vector<std::string>& ScheduleKindNames() {
  static const std::vector<std::string> names = {"gpipe", "flush", "pipedream",
                                                 "2bw",   "interleaved", "zb-h1"};
  return names;
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

}  // namespace pipetwin
