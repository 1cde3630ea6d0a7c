// What the SVG pictures of pipetwin share: the colour of each thing drawn, the number format,
// the opening of the file and the legend.
//
//   out << "<rect fill=\"" << OpFill(op.kind, op.chunk) << "\" x=\"" << SvgNumber(x) << "\"/>";
#pragma once

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
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

// The colour of the text written inside a box of OpFill(kind, chunk).
inline const char* OpTextColour(OpKind kind, int chunk) {
  return (chunk % 2 == 1 || kind == OpKind::kRecompute) ? "#000000" : "#ffffff";
}

// The communication lanes and the memory strip.
constexpr const char* kSendFill = "#e69f00";
constexpr const char* kReceiveFill = "#8c6d1f";
constexpr const char* kAllReduceFill = "#d62728";
constexpr const char* kMemoryFill = "#b0bec5";
constexpr const char* kMemoryStroke = "#546e7a";
constexpr const char* kOverCapacityFill = "#ef9a9a";  // a device whose peak exceeds its capacity
constexpr const char* kCapacityStroke = "#c62828";
constexpr const char* kBubbleFill = "url(#bubble)";  // a hatch, defined by WriteSvgHeader

// The strip on top of a compute box: weight version v is drawn in the colour v mod 4.
inline const char* WeightVersionFill(int version) {
  static const char* const fills[] = {"#ffd54f", "#ff7043", "#7e57c2", "#26c6da"};
  return fills[((version % 4) + 4) % 4];
}

// The pipeline phases' band (PipelinePhases).
inline const char* PhaseFill(const std::string& phase) {
  if (phase == "warm-up") return "#fde7c8";
  if (phase == "cool-down") return "#d6e6f5";
  return "#dcefd6";  // steady
}

// A coordinate with one decimal.
inline std::string SvgNumber(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v;
  return s.str();
}

// The opening of a pipetwin SVG: the XML declaration; the <svg> element with a viewBox of this
// size, as wide as where it is shown (it scales), in the monospace font every picture uses; the
// hatch of bubbles; a white background.
inline void WriteSvgHeader(std::ostream& out, double width, double height) {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" viewBox=\"0 0 "
      << SvgNumber(width) << " " << SvgNumber(height)
      << "\" preserveAspectRatio=\"xMinYMin meet\""
      << " font-family=\"DejaVu Sans Mono, Menlo, monospace\" font-size=\"11\">\n"
      << "<defs><pattern id=\"bubble\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\""
      << " patternTransform=\"rotate(45)\"><rect width=\"5\" height=\"5\" fill=\"#f2f2f2\"/>"
      << "<rect width=\"1.6\" height=\"5\" fill=\"#c4c4c4\"/></pattern></defs>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

// Grid lines and labels about every 1/10 of the span, at 1, 2 or 5 times a power of ten.
inline double SvgTickStep(double span) {
  const double raw_step = span / 10;
  const double magnitude = std::pow(10, std::floor(std::log10(std::max(raw_step, 1e-9))));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * magnitude >= raw_step) return f * magnitude;
  return magnitude;
}

// The legend: swatches with their labels, in lines no wider than a width.
class SvgLegend {
 public:
  void Add(const std::string& fill, const std::string& label) { entries_.push_back({fill, label}); }

  // The lines the entries take when no line is wider than `width`.
  int Lines(double width) const { return Layout(width).back().line + 1; }

  // From (x, y), y the first line's text baseline, lines kLineHeight apart.
  void Write(std::ostream& out, double x, double y, double width) const {
    const auto places = Layout(width);
    for (size_t i = 0; i < entries_.size(); ++i) {
      const double ex = x + places[i].x, ey = y + places[i].line * kLineHeight;
      out << "<rect x=\"" << SvgNumber(ex) << "\" y=\"" << SvgNumber(ey - 10)
          << "\" width=\"14\" height=\"12\" fill=\"" << entries_[i].fill
          << "\" stroke=\"#999999\"/><text x=\"" << SvgNumber(ex + 19) << "\" y=\""
          << SvgNumber(ey) << "\">" << entries_[i].label << "</text>\n";
    }
  }

  static constexpr double kLineHeight = 18;

 private:
  struct Entry {
    std::string fill, label;
  };
  struct Place {
    double x = 0;
    int line = 0;
  };
  static double EntryWidth(const std::string& label) { return 30 + 6.7 * label.size(); }
  std::vector<Place> Layout(double width) const {
    std::vector<Place> places;
    Place at;
    for (const Entry& e : entries_) {
      if (at.x > 0 && at.x + EntryWidth(e.label) > width) at = {0, at.line + 1};
      places.push_back(at);
      at.x += EntryWidth(e.label);
    }
    if (places.empty()) places.push_back({});
    return places;
  }
  std::vector<Entry> entries_;
};

}  // namespace pipetwin
