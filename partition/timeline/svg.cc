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

// Events by worker, in their order.
std::map<int, std::vector<const TimelineEvent*>> ByWorker(
    const std::vector<TimelineEvent>& events) {
  std::map<int, std::vector<const TimelineEvent*>> by_worker;
  for (const auto& e : events) by_worker[e.worker].push_back(&e);
  return by_worker;
}

constexpr double kMinLeft = 150;      // room for the row labels, at least
constexpr double kCharWidth = 6.7;    // DejaVu Sans Mono at 11 px: 0.6 em per character
constexpr double kTop = 46;           // title and time axis
constexpr double kGroupHeader = 22;   // a timeline's label above its rows
constexpr double kGroupGap = 10;
constexpr double kRowHeight = 24;
constexpr double kBoxHeight = 19;
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

// Grid lines and labels about every 1/20 of the span, at 1, 2 or 5 times a power of ten.
double TickStep(double span_ms) {
  const double raw_step = span_ms / 20;
  const double magnitude = std::pow(10, std::floor(std::log10(std::max(raw_step, 1e-9))));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * magnitude >= raw_step) return f * magnitude;
  return magnitude;
}

// One worker's row: its label, the idle background, update ticks, a box per compute op.
// `left` is where the plot starts, `scale` its pixels per ms.
void DrawRow(const Timeline& t, const TimelineProcess& p,
             const std::vector<const TimelineEvent*>& events,
             const std::vector<const TimelineEvent*>& updates, double left, double y,
             double scale, double plot_width, std::ostringstream& out) {
  out << "<text x=\"" << SvgNumber(left - 8) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
      << "\" text-anchor=\"end\">" << RowLabel(t, p) << "</text>\n";
  // The idle background: whatever no box covers is a bubble.
  out << "<rect x=\"" << SvgNumber(left) << "\" y=\"" << SvgNumber(y) << "\" width=\"" << SvgNumber(plot_width)
      << "\" height=\"" << SvgNumber(kBoxHeight) << "\" fill=\"#eeeeee\"/>\n";
  for (const TimelineEvent* update : updates) {
    const double x = left + update->start_s * 1e3 * scale;
    out << "<rect x=\"" << SvgNumber(x - 1) << "\" y=\"" << SvgNumber(y - 2) << "\" width=\"2\" height=\""
        << SvgNumber(kBoxHeight + 4) << "\" fill=\"#000000\"><title>update to version "
        << update->op.weight_version << "</title></rect>\n";
  }
  for (const TimelineEvent* event : events) {
    const TimelineEvent& e = *event;
    const double bw = (e.end_s - e.start_s) * 1e3 * scale;
    if (!IsComputeOp(e.op.kind) || bw <= 0) continue;
    const double x = left + e.start_s * 1e3 * scale;
    out << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y) << "\" width=\"" << SvgNumber(bw)
        << "\" height=\"" << SvgNumber(kBoxHeight) << "\" fill=\"" << OpFill(e.op.kind, e.op.chunk)
        << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"><title>" << OpKindName(e.op.kind)
        << " stage " << e.op.stage << " micro-batch " << e.op.microbatch << " version "
        << e.op.weight_version << "</title></rect>";
    if (bw >= 12)
      out << "<text x=\"" << SvgNumber(x + bw / 2) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
          << "\" text-anchor=\"middle\" fill=\"" << OpTextColour(e.op.kind, e.op.chunk) << "\">"
          << e.op.microbatch << "</text>";
    out << "\n";
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
  const double step = TickStep(end_ms);
  for (int k = 0; k * step <= end_ms + 1e-9; ++k) {
    const double x = left + k * step * scale;
    out << "<line x1=\"" << SvgNumber(x) << "\" y1=\"" << SvgNumber(kTop - 6) << "\" x2=\"" << SvgNumber(x)
        << "\" y2=\"" << SvgNumber(kTop + rows_height - kGroupGap) << "\" stroke=\"#dddddd\"/>"
        << "<text x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(kTop - 9)
        << "\" text-anchor=\"middle\" fill=\"#555555\">" << k * step << "</text>\n";
  }

  double y = kTop;
  for (size_t i = 0; i < timelines.size(); ++i) {
    const Timeline& t = timelines[i];
    out << "<text x=\"10\" y=\"" << SvgNumber(y + 15) << "\" font-weight=\"bold\">"
        << Escape(TimelineLabel(t, i)) << ": makespan " << SvgNumber(t.EndSeconds() * 1e3) << " ms, "
        << t.processes.size() << " workers</text>\n";
    y += kGroupHeader;
    auto events = ByWorker(t.events), updates = ByWorker(t.updates);
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
