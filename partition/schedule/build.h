// Building a schedule's op lists from its spec.
//
//   ScheduleSpec spec;
//   spec.kind = ScheduleKind::kFlush;  spec.stages = 4;  spec.microbatches = 8;
//   PipelineSchedule schedule = BuildSchedule(spec);    // throws InputError on a broken rule
#pragma once

#include <string>

#include "partition/schedule/op.h"
#include "partition/schedule/spec.h"
#include "partition/util/error.h"

namespace pipetwin {

// A spec that breaks a rule of its schedule. The message names the rule, not a command-line flag
// or a file's field: `field()` is the spec's member it concerns ("stages", "microbatches",
// "replicas", "chunks", "batches", "vertical_sync", "allreduce_buckets", "kind", "costs"), which
// the caller maps to its own input (a scenario's JSON path, a command's option).
class ScheduleSpecError : public InputError {
 public:
  ScheduleSpecError(std::string field, const std::string& what)
      : InputError(what), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Checks the spec's rules (ScheduleSpecError, one line naming the rule) and builds the lists.
PipelineSchedule BuildSchedule(const ScheduleSpec& spec);
// The rules alone, without building anything (what `plan` checks before it reports); `repeats`:
// the passes RepeatSchedule will run back to back, counted in the run's size (a run too large
// for its lists is refused under field "batches").
void CheckScheduleSpec(const ScheduleSpec& spec, int repeats = 1);

// The workers per position of a spec, from the replicas of a plan's stages (as many as the
// model stages: positions x chunks). The first positions' counts; for DualPipe, whose plan
// lists its PP ranks' stages, stage h's and stage PP - 1 - h's together (a mirror pair holds
// both), which must be equal (ScheduleSpecError on "replicas").
std::vector<int> PositionReplicas(ScheduleKind kind, int chunks,
                                  const std::vector<int>& stage_replicas);

// The same op lists run `repeats` times back to back: micro-batch k of repeat r becomes
// r * microbatches + k and weight versions continue (how a flushing schedule's next iterations
// follow its first). The lists stay valid: every repeat ends with all its messages received and
// its updates made.
PipelineSchedule RepeatSchedule(const PipelineSchedule& schedule, int repeats);

}  // namespace pipetwin
