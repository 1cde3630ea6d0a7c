// The picture every pipeline paper draws, of a schedule's replay: the timeline picture (svg.cc)
// of ReplayTimeline, in the replay's time units.
#include <string>

#include "partition/schedule/replay.h"
#include "partition/timeline/svg.h"
#include "partition/timeline/svg_style.h"

namespace pipetwin {

std::string ScheduleToSvg(const PipelineSchedule& s, const ReplayResult& replay) {
  Timeline t = ReplayTimeline(s, replay);
  t.label = "replay";
  const std::string title =
      std::string(ScheduleKindName(s.kind)) + ": " + std::to_string(s.stages) + " stages, " +
      std::to_string(s.WorkerCount()) + " workers, " + std::to_string(s.microbatches) +
      " micro-batches" + (s.chunks > 1 ? ", " + std::to_string(s.chunks) + " chunks" : "") +
      " - makespan " + SvgNumber(replay.makespan) + ", bubble " +
      SvgNumber(100 * replay.bubble_fraction) + "%";
  return TimelineSvg({t}, {"time units", 1}, title);
}

}  // namespace pipetwin
