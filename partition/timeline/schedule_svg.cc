// The picture every pipeline paper draws: workers as rows, time as columns, one box per compute
// op with its micro-batch number, forward and backward in different colours, bubbles left as
// grey gaps, updates as black ticks. Times come from a replay.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "partition/timeline/svg_style.h"
#include "partition/timeline/svg.h"
#include "partition/schedule/replay.h"

namespace pipetwin {

namespace {

constexpr double kLeft = 150;      // room for the row labels
constexpr double kTop = 46;        // title and time axis
constexpr double kRowHeight = 24;
constexpr double kMaxPlotWidth = 7000;

}  // namespace

namespace {

// Pixels per time unit: the shortest compute op at least 20 px wide, within a sane total width.
double Scale(const PipelineSchedule& s, const ReplayResult& replay, double makespan) {
  double shortest = 0;
  for (size_t w = 0; w < s.workers.size() && w < replay.workers.size(); ++w) {
    const auto& ops = s.workers[w].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      double d = replay.workers[w].op_end[i] - replay.workers[w].op_start[i];
      if (IsComputeOp(ops[i].kind) && d > 0) shortest = shortest == 0 ? d : std::min(shortest, d);
    }
  }
  return std::min(shortest > 0 ? 20.0 / shortest : 20.0, kMaxPlotWidth / makespan);
}

std::string RowLabel(const PipelineSchedule& s, const WorkerProgram& program) {
  std::string label = "worker " + std::to_string(program.worker) + " (stage " +
                      std::to_string(program.stage);
  if (s.replicas.size() > static_cast<size_t>(program.stage) && s.replicas[program.stage] > 1)
    label += ", r" + std::to_string(program.replica);
  return label + ")";
}

// One worker's ops at their replayed times: update ticks and a box per compute op.
void DrawOps(const WorkerProgram& program, const WorkerTiming& timing, double y, double scale,
             std::ostream& out) {
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const double x = kLeft + timing.op_start[i] * scale;
    const double width = (timing.op_end[i] - timing.op_start[i]) * scale;
    if (op.kind == OpKind::kUpdate) WriteSvgUpdate(out, x, y, op.weight_version);
    else if (IsComputeOp(op.kind) && width > 0) WriteSvgOpBox(out, op, x, y, width);
  }
}

}  // namespace

std::string ScheduleToSvg(const PipelineSchedule& s, const ReplayResult& replay) {
  const double makespan = std::max(replay.makespan, 1e-9);
  const double scale = Scale(s, replay, makespan);
  const double plot_width = makespan * scale;
  std::set<OpKind> present;
  for (const auto& w : s.workers)
    for (const Op& op : w.ops) present.insert(op.kind);
  const SvgLegend legend(present, s.chunks > 1);
  const double rows_height = s.WorkerCount() * kRowHeight;

  std::ostringstream out;
  WriteSvgHeader(out, kLeft + std::max(plot_width, legend.Width()) + 20, kTop + rows_height + 60);
  out << "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << ScheduleKindName(s.kind)
      << ": " << s.stages << " stages, " << s.WorkerCount() << " workers, " << s.microbatches
      << " micro-batches" << (s.chunks > 1 ? ", " + std::to_string(s.chunks) + " chunks" : "")
      << " - makespan " << SvgNumber(replay.makespan) << ", bubble "
      << SvgNumber(100 * replay.bubble_fraction) << "%</text>\n";
  WriteSvgTimeAxis(out, makespan, kLeft, scale, kTop, kTop + rows_height);
  for (size_t w = 0; w < s.workers.size(); ++w) {
    const double y = kTop + w * kRowHeight;
    WriteSvgRow(out, RowLabel(s, s.workers[w]), kLeft, y, plot_width);
    if (w < replay.workers.size()) DrawOps(s.workers[w], replay.workers[w], y, scale, out);
  }
  legend.Write(out, kLeft, kTop + rows_height + 22);
  out << "</svg>\n";
  return out.str();
}

}  // namespace pipetwin
