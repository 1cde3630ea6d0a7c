// A schedule and its replay as text (`pipetwin schedule`): each worker's compute order, then the
// replay's makespan, bubble, memory and staleness.
#include <iomanip>
#include <sstream>

#include "partition/schedule/format.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

std::string ScheduleToText(const PipelineSchedule& s, const ReplayResult& replay,
                           const OpCosts& costs) {
  std::ostringstream out;
  out << ScheduleKindName(s.kind) << " schedule: " << s.stages << " stages";
  if (s.kind == ScheduleKind::kDualPipe)  // positions are mirror pairs (kind.h)
    out << " of mirror pairs, " << PlanStagesWithWorkers(s.kind, s.stages) << " ranks";
  out << ", replicas";
  for (size_t i = 0; i < s.replicas.size(); ++i) out << (i ? "," : " ") << s.replicas[i];
  out << ", " << s.microbatches << (s.kind == ScheduleKind::kPipeDream ? " minibatches" : " micro-batches");
  if (s.microbatches_per_batch != s.microbatches && s.kind != ScheduleKind::kPipeDream)
    out << " (" << s.microbatches_per_batch << " per update)";
  if (s.chunks > 1) out << ", " << s.chunks << " chunks per worker";
  if (s.vertical_sync) out << ", vertical sync";
  if (!s.weight_stashing) out << ", no weight stashing (backwards on the latest weights)";
  if (s.recompute)
    out << (s.recompute_timing == RecomputeTiming::kEarly
                ? ", recomputation early (before the gradient arrives)"
                : ", recomputation in the backward (after the gradient arrives)");
  if (s.send_mode == SendMode::kBlocking) out << ", blocking sends";
  out << "\n";
  for (const auto& w : s.workers) {
    out << "worker " << w.worker << " (stage " << w.stage << ", replica " << w.replica << "):";
    for (const Op& op : w.ops) {
      if (IsComputeOp(op.kind)) {
        out << " " << (op.kind == OpKind::kRecompute ? std::to_string(op.stage) + "R" +
                                                           std::to_string(op.microbatch)
                                                     : ActionName(op));
        if (op.weight_version > 0) out << "@v" << op.weight_version;
      } else if (op.kind == OpKind::kAllReduce) {
        out << " AR";
        if (op.buckets > 1) out << "x" << op.buckets;
      } else if (op.kind == OpKind::kUpdate) {
        out << " U" << op.weight_version;
      }
    }
    out << "\n";
  }
  out << std::setprecision(4) << "replay (F=" << costs.forward << ", B=" << costs.backward
      << ", each op once its inputs arrive): makespan " << replay.makespan << ", bubble fraction "
      << replay.bubble_fraction << " (idle/compute " << replay.bubble_over_compute << ")\n";
  for (const auto& r : replay.stages)
    out << "stage " << r.stage << ": max activations " << r.max_in_flight_activations
        << ", max weight versions " << r.max_weight_versions << ", staleness min "
        << r.staleness_min << " mean " << r.staleness_mean << " max " << r.staleness_max << "\n";
  return out.str();
}

}  // namespace pipetwin
