// Timelines as SVG pictures: workers as rows, time as columns (TimelineSvg).
#include "partition/timeline/svg.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "partition/timeline/svg_style.h"

namespace pipetwin {

namespace {

constexpr double kMinLeft = 150;      // room for the row labels, at least
constexpr double kCharWidth = 6.7;    // DejaVu Sans Mono at 11 px: 0.6 em per character
constexpr double kTop = 46;           // title and time axis
constexpr double kGroupHeader = 22;   // a timeline's label above its rows
constexpr double kGroupGap = 10;
constexpr double kRowHeight = 24;
constexpr double kMaxPlotWidth = 7000;


std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The heading: the first timeline's scenario and schedule, when it names them.
std::string Title(const std::vector<Timeline>& timelines) {
  if (timelines.empty()) return "timeline";
  const nlohmann::json& d = timelines.front().other_data;
  std::string title;
  if (d.contains("scenario") && d["scenario"].is_string()) title = d["scenario"];
  if (d.contains("schedule") && d["schedule"].is_string()) {
    if (!title.empty()) title += ", ";
    title += "schedule " + d["schedule"].get<std::string>();
  }
  return title.empty() ? "timeline" : title;
}

// The row label: "worker W (stage S)", with ", rR" when the stage has several replicas.
std::string RowLabel(const Timeline& t, const TimelineProcess& p) {
  int replicas = 0;
  for (const auto& q : t.processes) replicas += q.stage == p.stage;
  std::string label = "worker " + std::to_string(p.worker) + " (stage " + std::to_string(p.stage);
  if (replicas > 1) label += ", r" + std::to_string(p.replica);
  return label + ")";
}

// One worker's row: its label, the idle background, update ticks, a box per compute op.
// `left` is where the plot starts, `scale` its pixels per ms.
void DrawRow(const Timeline& t, const TimelineProcess& p,
             const std::vector<const TimelineEvent*>& events,
             const std::vector<const TimelineEvent*>& updates, double left, double y,
             double scale, double plot_width, std::ostringstream& out) {
  WriteSvgRow(out, RowLabel(t, p), left, y, plot_width);
  for (const TimelineEvent* update : updates)
    WriteSvgUpdate(out, left + update->start_s * 1e3 * scale, y, update->op.weight_version);
  for (const TimelineEvent* e : events) {
    const double width = (e->end_s - e->start_s) * 1e3 * scale;
    if (IsComputeOp(e->op.kind) && width > 0)
      WriteSvgOpBox(out, e->op, left + e->start_s * 1e3 * scale, y, width);
  }
}

}  // namespace

std::string TimelineSvg(const std::vector<Timeline>& timelines) {
  // One scale for all: the shortest compute op at least 20 px wide, within a sane total width.
  double shortest_ms = 0, end_ms = 0;
  for (const Timeline& t : timelines) {
    end_ms = std::max(end_ms, t.EndSeconds() * 1e3);
    for (const auto& e : t.events) {
      const double d = (e.end_s - e.start_s) * 1e3;
      if (IsComputeOp(e.op.kind) && d > 0)
        shortest_ms = shortest_ms == 0 ? d : std::min(shortest_ms, d);
    }
  }
  end_ms = std::max(end_ms, 1e-9);
  double scale = shortest_ms > 0 ? 20.0 / shortest_ms : 20.0;  // px per ms
  scale = std::min(scale, kMaxPlotWidth / end_ms);
  const double plot_width = end_ms * scale;

  std::set<OpKind> present;
  bool odd_chunks = false;
  for (const Timeline& t : timelines)
    for (const auto& e : t.events) {
      present.insert(e.op.kind);
      odd_chunks = odd_chunks || (IsComputeOp(e.op.kind) && e.op.chunk % 2 == 1);
    }
  const SvgLegend legend(present, odd_chunks);
  const double legend_width = legend.Width();

  double rows_height = 0;
  size_t longest_label = 0;
  for (const Timeline& t : timelines) {
    rows_height += kGroupHeader + t.processes.size() * kRowHeight + kGroupGap;
    for (const TimelineProcess& p : t.processes)
      longest_label = std::max(longest_label, RowLabel(t, p).size());
  }
  const double left = std::max(kMinLeft, 18 + kCharWidth * longest_label);
  const double width = left + std::max(plot_width, legend_width) + 20;
  const double height = kTop + rows_height + 50;

  std::ostringstream out;
  WriteSvgHeader(out, width, height);
  out << "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">"
      << Escape(Title(timelines)) << " - time in ms</text>\n";

  // The shared time axis, its grid lines through every group.
  WriteSvgTimeAxis(out, end_ms, left, scale, kTop, kTop + rows_height - kGroupGap);

  double y = kTop;
  for (size_t i = 0; i < timelines.size(); ++i) {
    const Timeline& t = timelines[i];
    out << "<text x=\"10\" y=\"" << SvgNumber(y + 15) << "\" font-weight=\"bold\">"
        << Escape(TimelineLabel(t, i)) << ": makespan " << SvgNumber(t.EndSeconds() * 1e3) << " ms, "
        << t.processes.size() << " workers</text>\n";
    y += kGroupHeader;
    auto events = EventsByWorker(t.events), updates = EventsByWorker(t.updates);
    for (const TimelineProcess& p : t.processes) {
      DrawRow(t, p, events[p.worker], updates[p.worker], left, y, scale, plot_width, out);
      y += kRowHeight;
    }
    y += kGroupGap;
  }

  legend.Write(out, left, y + 12);
  out << "</svg>\n";
  return out.str();
}

}  // namespace pipetwin
