// The rules every op list must follow, checked before a back end runs it.
#pragma once

#include "partition/schedule/op.h"

namespace pipetwin {

// Structural rules: every (stage, micro-batch) forward and backward exactly once, backward after
// forward, inputs received before use, every Send with exactly one matching Recv, versions alive
// when used. Throws InputError naming the first broken rule.
void ValidateSchedule(const PipelineSchedule& schedule);
// ValidateSchedule, then a replay with unit times (op.h); throws InputError on a deadlock.
void CheckSchedule(const PipelineSchedule& schedule);

}  // namespace pipetwin
