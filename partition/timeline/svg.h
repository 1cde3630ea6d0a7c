// The SVG pictures of pipetwin: a schedule's replay (`pipetwin schedule --format svg`) and one or
// several timelines (`simulate --svg`, `run --svg`, `compare --svg`).
#pragma once

#include <string>
#include <vector>

#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"
#include "partition/timeline/timeline.h"

namespace pipetwin {

// Each timeline's workers as rows (one box per compute op, coloured by kind as `pipetwin
// schedule --format svg` draws them, micro-batch numbers inside, updates as black ticks, idle
// time grey), the timelines one above the other under their label, on one time axis in ms.
std::string TimelineSvg(const std::vector<Timeline>& timelines);

// Workers as rows, time as columns, micro-batch numbers in boxes.
std::string ScheduleToSvg(const PipelineSchedule& schedule, const ReplayResult& replay);

}  // namespace pipetwin
