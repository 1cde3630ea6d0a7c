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
constexpr double kBoxHeight = 19;
constexpr double kMaxPlotWidth = 7000;

}  // namespace

std::string ScheduleToSvg(const PipelineSchedule& s, const ReplayResult& replay) {
  // Scale so that the shortest compute op is at least 20 px wide, within a sane total width.
  double shortest = 0;
  for (size_t w = 0; w < s.workers.size() && w < replay.workers.size(); ++w) {
    const auto& ops = s.workers[w].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      double d = replay.workers[w].op_end[i] - replay.workers[w].op_start[i];
      if (IsComputeOp(ops[i].kind) && d > 0) shortest = shortest == 0 ? d : std::min(shortest, d);
    }
  }
  const double makespan = std::max(replay.makespan, 1e-9);
  double scale = shortest > 0 ? 20.0 / shortest : 20.0;
  scale = std::min(scale, kMaxPlotWidth / makespan);
  const double plot_width = makespan * scale;
  std::set<OpKind> present;
  for (const auto& w : s.workers)
    for (const Op& op : w.ops) present.insert(op.kind);
  const SvgLegend legend(present, s.chunks > 1);
  const double legend_width = legend.Width();
  const double width = kLeft + std::max(plot_width, legend_width) + 20;
  const double rows_height = s.WorkerCount() * kRowHeight;
  const double height = kTop + rows_height + 60;

  std::ostringstream out;
  WriteSvgHeader(out, width, height);
  out << "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << ScheduleKindName(s.kind)
      << ": " << s.stages << " stages, " << s.WorkerCount() << " workers, " << s.microbatches
      << " micro-batches" << (s.chunks > 1 ? ", " + std::to_string(s.chunks) + " chunks" : "")
      << " - makespan " << SvgNumber(replay.makespan) << ", bubble "
      << SvgNumber(100 * replay.bubble_fraction) << "%</text>\n";

  // Time axis: about 20 ticks.
  const double raw_step = makespan / 20;
  const double magnitude = std::pow(10, std::floor(std::log10(std::max(raw_step, 1e-9))));
  double step = magnitude;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * magnitude >= raw_step) { step = f * magnitude; break; }
  for (double t = 0; t <= makespan + 1e-9; t += step) {
    const double x = kLeft + t * scale;
    out << "<line x1=\"" << SvgNumber(x) << "\" y1=\"" << SvgNumber(kTop - 6) << "\" x2=\"" << SvgNumber(x)
        << "\" y2=\"" << SvgNumber(kTop + rows_height) << "\" stroke=\"#dddddd\"/>"
        << "<text x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(kTop - 9)
        << "\" text-anchor=\"middle\" fill=\"#555555\">" << t << "</text>\n";
  }

  for (size_t w = 0; w < s.workers.size(); ++w) {
    const auto& program = s.workers[w];
    const double y = kTop + w * kRowHeight;
    out << "<text x=\"" << SvgNumber(kLeft - 8) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
        << "\" text-anchor=\"end\">worker " << program.worker << " (stage " << program.stage;
    if (s.replicas.size() > static_cast<size_t>(program.stage) && s.replicas[program.stage] > 1)
      out << ", r" << program.replica;
    out << ")</text>\n";
    // The idle background: whatever no box covers is a bubble.
    out << "<rect x=\"" << SvgNumber(kLeft) << "\" y=\"" << SvgNumber(y) << "\" width=\"" << SvgNumber(plot_width)
        << "\" height=\"" << SvgNumber(kBoxHeight) << "\" fill=\"#eeeeee\"/>\n";
    if (w >= replay.workers.size()) continue;
    const auto& timing = replay.workers[w];
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      const double x = kLeft + timing.op_start[i] * scale;
      const double bw = (timing.op_end[i] - timing.op_start[i]) * scale;
      if (op.kind == OpKind::kUpdate) {
        out << "<rect x=\"" << SvgNumber(x - 1) << "\" y=\"" << SvgNumber(y - 2) << "\" width=\"2\" height=\""
            << SvgNumber(kBoxHeight + 4) << "\" fill=\"#000000\"><title>update to version "
            << op.weight_version << "</title></rect>\n";
        continue;
      }
      if (!IsComputeOp(op.kind) || bw <= 0) continue;
      out << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y) << "\" width=\"" << SvgNumber(bw)
          << "\" height=\"" << SvgNumber(kBoxHeight) << "\" fill=\"" << OpFill(op.kind, op.chunk)
          << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"><title>" << OpKindName(op.kind)
          << " stage " << op.stage << " micro-batch " << op.microbatch << " version "
          << op.weight_version << "</title></rect>";
      if (bw >= 12)
        out << "<text x=\"" << SvgNumber(x + bw / 2) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
            << "\" text-anchor=\"middle\" fill=\"" << OpTextColour(op.kind, op.chunk) << "\">"
            << op.microbatch << "</text>";
      out << "\n";
    }
  }

  legend.Write(out, kLeft, kTop + rows_height + 22);
  out << "</svg>\n";
  return out.str();
}

}  // namespace pipetwin
