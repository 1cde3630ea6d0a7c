// One schedule's lists run several times back to back (build.h).
#include <algorithm>

#include "partition/schedule/build.h"

namespace pipetwin {

PipelineSchedule RepeatSchedule(const PipelineSchedule& schedule, int repeats) {
  PipelineSchedule out = schedule;
  if (repeats <= 1) return out;
  const int microbatches = schedule.microbatches;
  for (WorkerProgram& w : out.workers) {
    int versions = 0;  // versions one pass creates on this worker
    for (const Op& op : w.ops)
      if (op.kind == OpKind::kUpdate) versions = std::max(versions, op.weight_version);
    std::vector<Op> ops;
    ops.reserve(w.ops.size() * repeats);
    for (int r = 0; r < repeats; ++r) {
      for (Op op : w.ops) {
        if (op.microbatch >= 0) op.microbatch += r * microbatches;
        if (op.weight_version >= 0) op.weight_version += r * versions;
        ops.push_back(op);
      }
    }
    w.ops = std::move(ops);
  }
  out.microbatches = microbatches * repeats;
  return out;
}

}  // namespace pipetwin
