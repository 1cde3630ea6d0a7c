// Timelines as SVG pictures (svg.h says what a picture shows).
#include "partition/timeline/svg.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "partition/timeline/svg_style.h"
#include "partition/util/format.h"

namespace pipetwin {

namespace {

constexpr double kPlotWidth = 1200;  // the plot, in viewBox units, whatever the span
constexpr double kMinLeft = 150;     // room for the row labels, at least
constexpr double kRight = 330;       // after the plot: the row's idle share and peak memory
constexpr double kCharWidth = 6.7;   // DejaVu Sans Mono at 11 px: 0.6 em per character
constexpr double kBoxHeight = 19;    // compute boxes
constexpr double kLaneHeight = 4;    // sends, receives, all-reduce buckets
constexpr double kMemoryHeight = 12;
constexpr double kLaneGap = 2;
constexpr double kRowGap = 7;
constexpr double kGroupHeader = 20;  // a timeline's label
constexpr double kPhaseBand = 14;
constexpr double kGroupGap = 16;

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

// A figure with up to 4 significant digits: 0.3, 12.5, 1250.
std::string Figure(double v) {
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
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

SvgTimeUnit ChooseUnit(const SvgTimeUnit& given, double span_s) {
  if (given.per_second > 0) return given;
  if (span_s < 1e-3) return {"\u00b5s", 1e6};
  if (span_s < 1) return {"ms", 1e3};
  return {"s", 1};
}

// "workers 0-7", "workers 0, 16, ..., 1008", "workers 3, 5, 11, ... (9)".
std::string WorkersText(const std::vector<int>& w) {
  if (w.size() == 1) return "worker " + std::to_string(w[0]);
  bool progression = w.size() > 2;
  for (size_t i = 2; i < w.size() && progression; ++i)
    progression = w[i] - w[i - 1] == w[1] - w[0];
  if (w.size() == 2 || (progression && w.size() <= 3))
    return "workers " + std::to_string(w[0]) + ", " +
           (w.size() == 3 ? std::to_string(w[1]) + ", " : "") + std::to_string(w.back());
  if (progression && w[1] - w[0] == 1)
    return "workers " + std::to_string(w[0]) + "-" + std::to_string(w.back());
  if (progression)
    return "workers " + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", ..., " +
           std::to_string(w.back());
  return "workers " + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", ... (" +
         std::to_string(w.size()) + ")";
}

// One row of the picture: a worker, or a stage's replicas that run the same ops.
struct Row {
  const TimelineProcess* drawn = nullptr;  // the lowest worker
  std::vector<int> workers;
  std::string label, tooltip;
};

// What a timeline's group draws.
struct Group {
  const Timeline* timeline = nullptr;
  std::string header;
  std::vector<Row> rows;
  std::map<int, std::vector<const TimelineEvent*>> events, updates;  // by worker
  std::vector<PipelinePhase> phases;
  bool comm = false, all_reduce = false, memory = false, versions = false, chunks = false;
  double RowHeight() const {
    return kBoxHeight + (comm ? 2 * kLaneHeight + kLaneGap : 0) +
           (all_reduce ? kLaneHeight + kLaneGap : 0) + (memory ? kMemoryHeight + kLaneGap : 0) +
           kRowGap;
  }
  double Height() const { return kGroupHeader + kPhaseBand + 4 + rows.size() * RowHeight(); }
};

// A replica folds into a row when it runs the same kinds of compute op on the same chunks in the
// same order, each starting within half the row's shortest op of the drawn one's: drawn, the
// two would look alike. Data-parallel replicas do (each on micro-batches of its own); the
// replicas of PipeDream's 1F1B-RR, a forward apart, do not.
struct ComputeOps {
  std::vector<std::pair<int, int>> kinds;  // kind, chunk
  std::vector<double> starts, ends;
  double shortest = 0;
  explicit ComputeOps(const std::vector<const TimelineEvent*>& events) {
    for (const TimelineEvent* e : events) {
      if (!IsComputeOp(e->op.kind)) continue;
      kinds.push_back({static_cast<int>(e->op.kind), e->op.chunk});
      starts.push_back(e->start_s);
      ends.push_back(e->end_s);
      const double d = e->end_s - e->start_s;
      if (d > 0) shortest = shortest == 0 ? d : std::min(shortest, d);
    }
  }
  bool LooksLike(const ComputeOps& other) const {
    if (kinds != other.kinds) return false;
    for (size_t k = 0; k < starts.size(); ++k)
      if (std::abs(starts[k] - other.starts[k]) >= shortest / 2) return false;
    return true;
  }
};

Group MakeGroup(const Timeline& t, size_t index, const SvgTimeUnit& unit) {
  Group g;
  g.timeline = &t;
  g.events = EventsByWorker(t.events);
  g.updates = EventsByWorker(t.updates);
  g.phases = PipelinePhases(t);
  std::set<int> versions;
  double busy = 0;
  for (const TimelineEvent& e : t.events) {
    g.comm = g.comm || IsCommunicationOp(e.op.kind);
    g.all_reduce = g.all_reduce || e.lane == kAllReduceLane;
    if (IsComputeOp(e.op.kind)) {
      versions.insert(e.op.weight_version);
      busy += e.end_s - e.start_s;
      g.chunks = g.chunks || e.op.chunk > 0;
    }
  }
  g.versions = versions.size() > 1;
  for (const TimelineProcess& p : t.processes) g.memory = g.memory || !p.memory.empty();

  // Rows: by stage position; within one, the replicas with the same compute ops fold together.
  std::map<int, std::vector<const TimelineProcess*>> by_stage;
  for (const TimelineProcess& p : t.processes) by_stage[p.stage].push_back(&p);
  for (auto& [stage, processes] : by_stage) {
    std::sort(processes.begin(), processes.end(),
              [](const auto* a, const auto* b) { return a->worker < b->worker; });
    std::vector<std::pair<ComputeOps, Row>> folds;
    for (const TimelineProcess* p : processes) {
      ComputeOps ops(g.events[p->worker]);
      auto same = std::find_if(folds.begin(), folds.end(),
                               [&](const auto& f) { return f.first.LooksLike(ops); });
      if (same == folds.end()) {
        folds.push_back({std::move(ops), Row{p, {p->worker}, "", ""}});
      } else {
        same->second.workers.push_back(p->worker);
      }
    }
    for (auto& [drawn_ops, row] : folds) {
      const TimelineProcess& p = *row.drawn;
      if (row.workers.size() == 1) {
        row.label = "worker " + std::to_string(p.worker) + " (stage " + std::to_string(stage) +
                    (processes.size() > 1 ? ", r" + std::to_string(p.replica) : "") + ")";
      } else {
        row.label = "stage " + std::to_string(stage) + " x" + std::to_string(row.workers.size()) +
                    " (" + WorkersText(row.workers) + ")";
        double spread = 0;
        for (int w : row.workers) {
          const ComputeOps ops(g.events[w]);
          for (size_t k = 0; k < ops.ends.size() && k < drawn_ops.ends.size(); ++k)
            spread = std::max(spread, std::abs(ops.ends[k] - drawn_ops.ends[k]));
        }
        row.tooltip = std::to_string(row.workers.size()) + " replicas of stage " +
                      std::to_string(stage) + " run the same ops, each on micro-batches of its " +
                      "own, drawn from worker " + std::to_string(p.worker) +
                      "; their op ends differ by up to " + Figure(spread * unit.per_second) +
                      " " + unit.name;
      }
      g.rows.push_back(std::move(row));
    }
  }
  const double makespan = t.EndSeconds();
  const double idle = t.processes.empty() || makespan <= 0
                          ? 0
                          : 1 - busy / (t.processes.size() * makespan);
  g.header = Escape(TimelineLabel(t, index)) + ": makespan " +
             Figure(makespan * unit.per_second) + " " + unit.name + ", " +
             std::to_string(t.processes.size()) + " workers in " + std::to_string(g.rows.size()) +
             " rows, idle " + SvgNumber(100 * idle) + "% of device time";
  return g;
}

// Draws into `out` at x = left + t * scale (t in seconds).
class Painter {
 public:
  Painter(std::ostream& out, double left, double scale, const SvgTimeUnit& unit)
      : out_(out), left_(left), scale_(scale), unit_(unit) {}

  double X(double t_s) const { return left_ + t_s * scale_; }
  std::string Span(double a_s, double b_s) const {
    return Figure(a_s * unit_.per_second) + "-" + Figure(b_s * unit_.per_second) + " " +
           unit_.name;
  }

  void Rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& title, const std::string& extra = "") {
    out_ << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y) << "\" width=\""
         << SvgNumber(std::max(w, 0.6)) << "\" height=\"" << SvgNumber(h) << "\" fill=\"" << fill
         << "\"" << extra;
    if (title.empty()) out_ << "/>\n";
    else out_ << "><title>" << title << "</title></rect>\n";
  }

  void Phases(const Group& g, double y, double bottom) {
    for (const PipelinePhase& p : g.phases) {
      const double x = X(p.start_s), w = (p.end_s - p.start_s) * scale_;
      Rect(x, y, w, kPhaseBand, PhaseFill(p.name), std::string(p.name) + ": " +
           Span(p.start_s, p.end_s));
      if (w >= kCharWidth * std::string(p.name).size() + 4)
        out_ << "<text x=\"" << SvgNumber(x + w / 2) << "\" y=\"" << SvgNumber(y + 11)
             << "\" text-anchor=\"middle\" fill=\"#444444\">" << p.name << "</text>\n";
      if (p.start_s > 0)
        out_ << "<line x1=\"" << SvgNumber(x) << "\" y1=\"" << SvgNumber(y) << "\" x2=\""
             << SvgNumber(x) << "\" y2=\"" << SvgNumber(bottom)
             << "\" stroke=\"#888888\" stroke-dasharray=\"3,3\"/>\n";
    }
  }

  void Row(const Group& g, const pipetwin::Row& row, double y, double makespan_s,
           double memory_peak) {
    const auto events = Lookup(g.events, row.drawn->worker);
    const auto updates = Lookup(g.updates, row.drawn->worker);
    out_ << "<text x=\"" << SvgNumber(left_ - 8) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
         << "\" text-anchor=\"end\">" << Escape(row.label);
    if (!row.tooltip.empty()) out_ << "<title>" << Escape(row.tooltip) << "</title>";
    out_ << "</text>\n";

    // Bubbles: whatever no compute box covers, from 0 to the makespan.
    std::vector<const TimelineEvent*> compute;
    for (const TimelineEvent* e : events)
      if (IsComputeOp(e->op.kind)) compute.push_back(e);
    std::sort(compute.begin(), compute.end(),
              [](const auto* a, const auto* b) { return a->start_s < b->start_s; });
    double covered = 0, idle = 0;
    auto bubble = [&](double from, double to) {
      if (to <= from) return;
      idle += to - from;
      Rect(X(from), y, (to - from) * scale_, kBoxHeight, kBubbleFill,
           "bubble: " + Figure((to - from) * unit_.per_second) + " " + unit_.name + " idle");
    };
    for (const TimelineEvent* e : compute) {
      bubble(covered, e->start_s);
      covered = std::max(covered, e->end_s);
    }
    bubble(covered, makespan_s);

    for (const TimelineEvent* e : compute) Box(g, *e, y);
    for (const TimelineEvent* u : updates)
      Rect(X(u->start_s) - 1, y - 2, 2, kBoxHeight + 4, "#000000",
           "update to version " + std::to_string(u->op.weight_version) + ": " +
               Span(u->start_s, u->end_s));

    double lane = y + kBoxHeight + kLaneGap;
    if (g.comm) {
      for (const TimelineEvent* e : events) {
        if (!IsCommunicationOp(e->op.kind)) continue;
        const bool send = IsSendOp(e->op.kind);
        Rect(X(e->start_s), lane + (send ? 0 : kLaneHeight), (e->end_s - e->start_s) * scale_,
             kLaneHeight, send ? kSendFill : kReceiveFill,
             std::string(OpKindName(e->op.kind)) + " micro-batch " +
                 std::to_string(e->op.microbatch) + (send ? " to" : " from") + " worker " +
                 std::to_string(e->op.peer_worker) + ": " + Span(e->start_s, e->end_s));
      }
      lane += 2 * kLaneHeight + kLaneGap;
    }
    if (g.all_reduce) {
      for (const TimelineEvent* e : events)
        if (e->lane == kAllReduceLane)
          Rect(X(e->start_s), lane, (e->end_s - e->start_s) * scale_, kLaneHeight,
               kAllReduceFill, "all-reduce: " + Span(e->start_s, e->end_s));
      lane += kLaneHeight + kLaneGap;
    }
    double peak = 0;
    const double capacity = row.drawn->capacity_bytes;
    if (g.memory) peak = Memory(row.drawn->memory, capacity, lane, makespan_s, memory_peak);
    std::string right = "idle " + SvgNumber(makespan_s > 0 ? 100 * idle / makespan_s : 0) + "%";
    if (g.memory) {
      right += ", peak " + BinaryBytes(peak);
      if (capacity > 0 && peak > capacity)
        right += " OVER " + BinaryBytes(capacity) + " (" + SvgNumber(peak / capacity) + "x)";
      else if (capacity > 0)
        right += " of " + BinaryBytes(capacity);
    }
    out_ << "<text x=\"" << SvgNumber(left_ + kPlotWidth + 8) << "\" y=\""
         << SvgNumber(y + kBoxHeight - 5) << "\" fill=\"#444444\">" << right << "</text>\n";
  }

 private:
  static std::vector<const TimelineEvent*> Lookup(
      const std::map<int, std::vector<const TimelineEvent*>>& by_worker, int worker) {
    auto it = by_worker.find(worker);
    return it == by_worker.end() ? std::vector<const TimelineEvent*>{} : it->second;
  }

  // A compute op: its box, the weight version's strip on top, its text where it fits.
  void Box(const Group& g, const TimelineEvent& e, double y) {
    const Op& op = e.op;
    const double x = X(e.start_s), w = (e.end_s - e.start_s) * scale_;
    const bool chunks = g.chunks;
    std::string title = std::string(OpKindName(op.kind)) + " stage " + std::to_string(op.stage);
    if (chunks) title += " chunk " + std::to_string(op.chunk);
    title += " micro-batch " + std::to_string(op.microbatch) + " version " +
             std::to_string(op.weight_version) + ": " + Span(e.start_s, e.end_s);
    Rect(x, y, w, kBoxHeight, OpFill(op.kind, op.chunk), title,
         " stroke=\"#ffffff\" stroke-width=\"0.6\"");
    if (g.versions)
      out_ << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y) << "\" width=\""
           << SvgNumber(std::max(w, 0.6)) << "\" height=\"3\" fill=\""
           << WeightVersionFill(op.weight_version) << "\"/>\n";
    std::string text = (chunks ? "c" + std::to_string(op.chunk) + ":" : "") +
                       std::to_string(op.microbatch);
    const std::string with_version = text + " v" + std::to_string(op.weight_version);
    if (g.versions && w >= kCharWidth * with_version.size() + 4) text = with_version;
    // In a narrow box the text shrinks (down to 5 units, legible when zoomed in); below, none.
    const double size = std::min(11.0, (w - 2) / (0.6 * text.size()));
    if (size >= 5) {
      out_ << "<text x=\"" << SvgNumber(x + w / 2) << "\" y=\"" << SvgNumber(y + kBoxHeight - 5)
           << "\" text-anchor=\"middle\" fill=\"" << OpTextColour(op.kind, op.chunk) << "\"";
      if (size < 11) out_ << " font-size=\"" << SvgNumber(size) << "\"";
      out_ << ">" << text << "</text>\n";
    }
  }

  // The device's total bytes as a step function from 0 to the makespan, `full` bytes at the
  // strip's top; samples closer than half a unit of the plot merge into their larger one.
  // Returns the peak.
  double Memory(const std::vector<MemorySample>& samples, double capacity, double y,
                double makespan_s, double full) {
    const double bottom = y + kMemoryHeight;
    out_ << "<rect x=\"" << SvgNumber(X(0)) << "\" y=\"" << SvgNumber(y) << "\" width=\""
         << SvgNumber(makespan_s * scale_) << "\" height=\"" << SvgNumber(kMemoryHeight)
         << "\" fill=\"#fafafa\" stroke=\"#e0e0e0\" stroke-width=\"0.5\"/>\n";
    if (samples.empty() || full <= 0) return 0;
    auto level = [&](double bytes) { return bottom - kMemoryHeight * bytes / full; };
    std::ostringstream path;
    path << "M" << SvgNumber(X(samples.front().time_s)) << "," << SvgNumber(bottom);
    double peak = 0, last_x = -1, held = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const double x = X(samples[i].time_s), bytes = samples[i].bytes.Total();
      peak = std::max(peak, bytes);
      held = (x - last_x < 0.5 && i > 0) ? std::max(held, bytes) : bytes;
      if (x - last_x < 0.5 && i > 0 && i + 1 < samples.size() &&
          X(samples[i + 1].time_s) - last_x < 0.5)
        continue;
      path << " L" << SvgNumber(x) << "," << SvgNumber(level(held)) << " H";
      const double next = i + 1 < samples.size() ? X(samples[i + 1].time_s) : X(makespan_s);
      path << SvgNumber(std::max(next, x));
      last_x = x;
    }
    path << " V" << SvgNumber(bottom) << " Z";
    const bool over = capacity > 0 && peak > capacity;
    out_ << "<path d=\"" << path.str() << "\" fill=\"" << (over ? kOverCapacityFill : kMemoryFill)
         << "\" stroke=\"" << kMemoryStroke << "\" stroke-width=\"0.6\"><title>device memory, peak "
         << BinaryBytes(peak);
    if (capacity > 0) out_ << (over ? ", over the device's " : " of the device's ") << BinaryBytes(capacity);
    out_ << " (the strip's top: " << BinaryBytes(full) << ")</title></path>\n";
    // The device's capacity as a line across the strip, where it lies within the strip's scale
    // (the picture's highest peak: a device far from full keeps its strip's shape visible).
    if (capacity > 0 && capacity <= full)
      out_ << "<line x1=\"" << SvgNumber(X(0)) << "\" x2=\"" << SvgNumber(X(makespan_s))
           << "\" y1=\"" << SvgNumber(level(capacity)) << "\" y2=\"" << SvgNumber(level(capacity))
           << "\" stroke=\"" << kCapacityStroke << "\" stroke-width=\"1\" stroke-dasharray=\"4,2\">"
           << "<title>device capacity " << BinaryBytes(capacity) << "</title></line>\n";
    return peak;
  }

  std::ostream& out_;
  double left_, scale_;
  SvgTimeUnit unit_;
};

}  // namespace

std::string TimelineSvg(const std::vector<Timeline>& timelines, const SvgTimeUnit& given_unit,
                        const std::string& given_title) {
  double end_s = 0, memory_peak = 0;
  std::set<OpKind> present;
  bool comm = false, all_reduce = false, memory = false, versions = false, chunks = false,
       phases = false, over_capacity = false;
  for (const Timeline& t : timelines) end_s = std::max(end_s, t.EndSeconds());
  end_s = std::max(end_s, 1e-12);
  const SvgTimeUnit unit = ChooseUnit(given_unit, end_s);

  std::vector<Group> groups;
  for (size_t i = 0; i < timelines.size(); ++i) {
    groups.push_back(MakeGroup(timelines[i], i, unit));
    const Group& g = groups.back();
    comm = comm || g.comm;
    all_reduce = all_reduce || g.all_reduce;
    memory = memory || g.memory;
    versions = versions || g.versions;
    phases = phases || !g.phases.empty();
    chunks = chunks || g.chunks;
    for (const TimelineEvent& e : timelines[i].events)
      if (IsComputeOp(e.op.kind)) present.insert(e.op.kind);
    for (const TimelineProcess& p : timelines[i].processes) {
      double peak = 0;
      for (const MemorySample& m : p.memory) peak = std::max(peak, m.bytes.Total());
      memory_peak = std::max(memory_peak, peak);
      if (p.memory.empty() || p.capacity_bytes <= 0) continue;
      over_capacity = over_capacity || peak > p.capacity_bytes;
    }
  }

  SvgLegend legend;
  for (auto [kind, label] : {std::pair{OpKind::kForward, "forward"},
                             {OpKind::kBackward, "backward"},
                             {OpKind::kBackwardInput, "backward (input)"},
                             {OpKind::kBackwardWeight, "backward (weights)"},
                             {OpKind::kRecompute, "recompute"}})
    if (present.count(kind)) legend.Add(OpFill(kind, 0), label);
  legend.Add(kBubbleFill, "idle (bubble)");
  legend.Add("#000000", "update");
  if (chunks) legend.Add(OpFill(OpKind::kForward, 1), "c1:3 = chunk 1, micro-batch 3 (odd chunks light)");
  if (versions) legend.Add(WeightVersionFill(1), "strip on top, v3: weight version (4 colours cycle)");
  if (comm) {
    legend.Add(kSendFill, "send (until delivered)");
    legend.Add(kReceiveFill, "receive (waiting)");
  }
  if (all_reduce) legend.Add(kAllReduceFill, "all-reduce");
  if (memory) legend.Add(kMemoryFill, "device memory (peak at the right)");
  if (memory && over_capacity) legend.Add(kCapacityStroke, "dashed: device capacity");
  if (memory && over_capacity) legend.Add(kOverCapacityFill, "memory of a device over capacity");
  if (phases)
    for (const char* phase : {"warm-up", "steady", "cool-down"}) legend.Add(PhaseFill(phase), phase);

  size_t longest_label = 0;
  double rows_height = 0;
  for (const Group& g : groups) {
    for (const Row& r : g.rows) longest_label = std::max(longest_label, r.label.size());
    rows_height += g.Height() + kGroupGap;
  }
  const double left = std::max(kMinLeft, 18 + kCharWidth * longest_label);
  const double width = left + kPlotWidth + kRight;
  const double legend_top = 42;
  const double axis = legend_top + legend.Lines(width - 20) * SvgLegend::kLineHeight + 14;
  const double height = axis + rows_height + 30;
  const double scale = kPlotWidth / end_s;

  std::ostringstream out;
  WriteSvgHeader(out, width, height);
  out << "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">"
      << Escape(given_title.empty() ? Title(timelines) : given_title) << " - time in "
      << unit.name << "</text>\n";
  legend.Write(out, 10, legend_top, width - 20);

  // The time axis: labels above the first group and below the last, grid lines through all.
  const double step_units = SvgTickStep(end_s * unit.per_second);
  const double bottom = axis + rows_height;
  for (int k = 0; k * step_units <= end_s * unit.per_second * (1 + 1e-9); ++k) {
    const double x = left + k * step_units / unit.per_second * scale;
    const std::string label = Figure(k * step_units) + " " + unit.name;
    out << "<line x1=\"" << SvgNumber(x) << "\" y1=\"" << SvgNumber(axis - 4) << "\" x2=\""
        << SvgNumber(x) << "\" y2=\"" << SvgNumber(bottom) << "\" stroke=\"#dddddd\"/>";
    for (double ty : {axis - 7, bottom + 14})
      out << "<text x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(ty)
          << "\" text-anchor=\"middle\" fill=\"#555555\">" << label << "</text>";
    out << "\n";
  }

  Painter paint(out, left, scale, unit);
  double y = axis;
  for (const Group& g : groups) {
    out << "<text x=\"10\" y=\"" << SvgNumber(y + 14) << "\" font-weight=\"bold\">" << g.header
        << "</text>\n";
    y += kGroupHeader;
    paint.Phases(g, y, y + kPhaseBand + 4 + g.rows.size() * g.RowHeight());
    y += kPhaseBand + 4;
    const double makespan = g.timeline->EndSeconds();
    for (const Row& row : g.rows) {
      paint.Row(g, row, y, makespan, memory_peak);
      y += g.RowHeight();
    }
    y += kGroupGap;
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace pipetwin
