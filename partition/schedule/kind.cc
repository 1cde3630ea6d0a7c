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
    case ScheduleKind::kZeroBubbleH2: return "zb-h2";
    case ScheduleKind::kLoopedBFS: return "looped-bfs";
    case ScheduleKind::kInterleavedZeroBubble: return "interleaved-zb";
    case ScheduleKind::kZeroBubbleV: return "zb-v";
    case ScheduleKind::kDualPipeV: return "dualpipe-v";
    case ScheduleKind::kDualPipe: return "dualpipe";
    case ScheduleKind::kImported: return "imported";
  }
  return "?";
}

bool IsAsynchronous(ScheduleKind kind) {
  return kind == ScheduleKind::kPipeDream || kind == ScheduleKind::kTwoBW;
}

bool IsVShaped(ScheduleKind kind) {
  return kind == ScheduleKind::kZeroBubbleV || kind == ScheduleKind::kDualPipeV ||
         kind == ScheduleKind::kDualPipe;
}

int DualPipePartner(int replicas_of_position, int replica) {
  return (replica + replicas_of_position / 2) % replicas_of_position;
}

PlanSlot PlanSlotOf(ScheduleKind kind, int positions, int replicas_of_position, int position,
                    int replica) {
  if (kind != ScheduleKind::kDualPipe) return {position, replica};
  const int half = replicas_of_position / 2;
  if (replica < half) return {position, replica};
  return {2 * positions - 1 - position, replica - half};
}

int PlanStagesWithWorkers(ScheduleKind kind, int positions) {
  return kind == ScheduleKind::kDualPipe ? 2 * positions : positions;
}

int ModelStageOf(ScheduleKind kind, int positions, int position, int chunk) {
  if (IsVShaped(kind)) return chunk == 0 ? position : 2 * positions - 1 - position;
  return chunk * positions + position;
}

bool TakesChunkCount(ScheduleKind kind) {
  return kind == ScheduleKind::kInterleaved || kind == ScheduleKind::kLoopedBFS ||
         kind == ScheduleKind::kInterleavedZeroBubble;
}

namespace {

constexpr ScheduleKind kBuildable[] = {
    ScheduleKind::kGPipe,        ScheduleKind::kFlush,        ScheduleKind::kPipeDream,
    ScheduleKind::kTwoBW,        ScheduleKind::kInterleaved,  ScheduleKind::kZeroBubbleH1,
    ScheduleKind::kZeroBubbleH2, ScheduleKind::kLoopedBFS,    ScheduleKind::kInterleavedZeroBubble,
    ScheduleKind::kZeroBubbleV,  ScheduleKind::kDualPipeV,   ScheduleKind::kDualPipe};

}  // namespace

const std::vector<std::string>& ScheduleKindNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (ScheduleKind kind : kBuildable) all.push_back(ScheduleKindName(kind));
    return all;
  }();
  return names;
}

ScheduleKind ParseScheduleKind(const std::string& name) {
  for (ScheduleKind kind : kBuildable)
    if (ScheduleKindName(kind) == name) return kind;
  std::string choices;
  for (const std::string& n : ScheduleKindNames()) choices += (choices.empty() ? "" : ", ") + n;
  throw InputError("unknown schedule kind '" + name + "' (expected one of " + choices + ")");
}

}  // namespace pipetwin
