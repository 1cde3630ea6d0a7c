// Building a schedule's op lists from its spec.
//
//   ScheduleSpec spec;
//   spec.kind = ScheduleKind::kFlush;  spec.stages = 4;  spec.microbatches = 8;
//   PipelineSchedule schedule = BuildSchedule(spec);    // throws InputError on a broken rule
#pragma once

#include "partition/schedule/op.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

// Checks the spec's rules (InputError, one line naming the rule) and builds the lists.
PipelineSchedule BuildSchedule(const ScheduleSpec& spec);

}  // namespace pipetwin
