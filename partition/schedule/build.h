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

// The same op lists run `repeats` times back to back: micro-batch k of repeat r becomes
// r * microbatches + k and weight versions continue (how a flushing schedule's next iterations
// follow its first). The lists stay valid: every repeat ends with all its messages received and
// its updates made.
PipelineSchedule RepeatSchedule(const PipelineSchedule& schedule, int repeats);

}  // namespace pipetwin
