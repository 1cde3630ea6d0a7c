// What the SVG pictures of pipetwin share (`pipetwin schedule --format svg`, the simulated and
// measured timelines): the colour of each op kind and the number format.
//
//   out << "<rect fill=\"" << OpFill(op.kind, op.chunk) << "\" x=\"" << SvgNumber(x) << "\"/>";
#pragma once

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "partition/schedule/op.h"

namespace pipetwin {

// Per op kind; interleaved chunks alternate dark and light shades.
inline const char* OpFill(OpKind kind, int chunk) {
  const bool light = chunk % 2 == 1;
  switch (kind) {
    case OpKind::kForward: return light ? "#9fc5e8" : "#1f5fa8";
    case OpKind::kBackward: return light ? "#a8dba8" : "#2e7d32";
    case OpKind::kBackwardInput: return light ? "#c5e8b7" : "#66a61e";
    case OpKind::kBackwardWeight: return light ? "#d9b8d6" : "#8e4b8a";
    case OpKind::kRecompute: return "#b0a8a0";
    default: return "#000000";
  }
}

// The colour of the micro-batch number written inside a box of OpFill(kind, chunk).
inline const char* OpTextColour(OpKind kind, int chunk) {
  return (chunk % 2 == 1 || kind == OpKind::kRecompute) ? "#000000" : "#ffffff";
}

// A coordinate with one decimal.
inline std::string SvgNumber(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v;
  return s.str();
}

// The opening of a pipetwin SVG: the XML declaration, the <svg> element of this size in the
// monospace font every picture uses, and a white background.
inline void WriteSvgHeader(std::ostream& out, double width, double height) {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << SvgNumber(width) << "\" height=\""
      << SvgNumber(height) << "\" viewBox=\"0 0 " << SvgNumber(width) << " " << SvgNumber(height)
      << "\" font-family=\"DejaVu Sans Mono, Menlo, monospace\" font-size=\"11\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

// Grid lines and labels about every 1/20 of the span, at 1, 2 or 5 times a power of ten.
inline double SvgTickStep(double span) {
  const double raw_step = span / 20;
  const double magnitude = std::pow(10, std::floor(std::log10(std::max(raw_step, 1e-9))));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * magnitude >= raw_step) return f * magnitude;
  return magnitude;
}

// The time axis: a grid line and its label every SvgTickStep(end) from 0 to `end`, at
// x = left + t * scale, the lines from y_top to y_bottom.
inline void WriteSvgTimeAxis(std::ostream& out, double end, double left, double scale,
                             double y_top, double y_bottom) {
  const double step = SvgTickStep(end);
  for (int k = 0; k * step <= end + 1e-9; ++k) {
    const double x = left + k * step * scale;
    out << "<line x1=\"" << SvgNumber(x) << "\" y1=\"" << SvgNumber(y_top - 6) << "\" x2=\""
        << SvgNumber(x) << "\" y2=\"" << SvgNumber(y_bottom) << "\" stroke=\"#dddddd\"/>"
        << "<text x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y_top - 9)
        << "\" text-anchor=\"middle\" fill=\"#555555\">" << k * step << "</text>\n";
  }
}

// A row's label, right-aligned before the plot at `left`, and its idle background (whatever no
// box covers is a bubble); the boxes are kBoxHeight tall.
constexpr double kSvgBoxHeight = 19;
inline void WriteSvgRow(std::ostream& out, const std::string& label, double left, double y,
                        double plot_width) {
  out << "<text x=\"" << SvgNumber(left - 8) << "\" y=\"" << SvgNumber(y + kSvgBoxHeight - 5)
      << "\" text-anchor=\"end\">" << label << "</text>\n";
  out << "<rect x=\"" << SvgNumber(left) << "\" y=\"" << SvgNumber(y) << "\" width=\""
      << SvgNumber(plot_width) << "\" height=\"" << SvgNumber(kSvgBoxHeight)
      << "\" fill=\"#eeeeee\"/>\n";
}

// An update to `version` as a black tick at x.
inline void WriteSvgUpdate(std::ostream& out, double x, double y, int version) {
  out << "<rect x=\"" << SvgNumber(x - 1) << "\" y=\"" << SvgNumber(y - 2)
      << "\" width=\"2\" height=\"" << SvgNumber(kSvgBoxHeight + 4)
      << "\" fill=\"#000000\"><title>update to version " << version << "</title></rect>\n";
}

// A compute op's box from x, `width` wide, its micro-batch inside when it fits.
inline void WriteSvgOpBox(std::ostream& out, const Op& op, double x, double y, double width) {
  out << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y) << "\" width=\""
      << SvgNumber(width) << "\" height=\"" << SvgNumber(kSvgBoxHeight) << "\" fill=\""
      << OpFill(op.kind, op.chunk) << "\" stroke=\"#ffffff\" stroke-width=\"0.8\"><title>"
      << OpKindName(op.kind) << " stage " << op.stage << " micro-batch " << op.microbatch
      << " version " << op.weight_version << "</title></rect>";
  if (width >= 12)
    out << "<text x=\"" << SvgNumber(x + width / 2) << "\" y=\""
        << SvgNumber(y + kSvgBoxHeight - 5) << "\" text-anchor=\"middle\" fill=\""
        << OpTextColour(op.kind, op.chunk) << "\">" << op.microbatch << "</text>";
  out << "\n";
}

// The legend under a timeline picture: the compute kinds present, then idle and update, and the
// light shade of odd chunks under interleaving.
class SvgLegend {
 public:
  SvgLegend(const std::set<OpKind>& present, bool odd_chunks) {
    for (auto [kind, label] : {std::pair{OpKind::kForward, "forward"},
                               {OpKind::kBackward, "backward"},
                               {OpKind::kBackwardInput, "backward (input)"},
                               {OpKind::kBackwardWeight, "backward (weights)"},
                               {OpKind::kRecompute, "recompute"}})
      if (present.count(kind)) entries_.push_back({OpFill(kind, 0), label});
    entries_.push_back({"#eeeeee", "idle (bubble)"});
    entries_.push_back({"#000000", "update"});
    if (odd_chunks) entries_.push_back({OpFill(OpKind::kForward, 1), "odd chunks: light"});
  }

  double Width() const {
    double width = 0;
    for (const auto& entry : entries_) width += EntryWidth(entry.second);
    return width;
  }

  // One row of swatches from (x, y), y the text's baseline.
  void Write(std::ostream& out, double x, double y) const {
    for (const auto& [fill, label] : entries_) {
      out << "<rect x=\"" << SvgNumber(x) << "\" y=\"" << SvgNumber(y - 11)
          << "\" width=\"14\" height=\"14\" fill=\"" << fill << "\" stroke=\"#999999\"/><text x=\""
          << SvgNumber(x + 19) << "\" y=\"" << SvgNumber(y) << "\">" << label << "</text>\n";
      x += EntryWidth(label);
    }
  }

 private:
  static double EntryWidth(const std::string& label) { return 30 + 7.2 * label.size(); }
  std::vector<std::pair<std::string, std::string>> entries_;  // (fill, label)
};

}  // namespace pipetwin
