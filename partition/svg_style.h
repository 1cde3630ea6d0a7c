// What the SVG pictures of pipetwin share (`pipetwin schedule --format svg`, the simulated and
// measured timelines): the colour of each op kind and the number format.
//
//   out << "<rect fill=\"" << OpFill(op.kind, op.chunk) << "\" x=\"" << SvgNumber(x) << "\"/>";
#pragma once

#include <iomanip>
#include <sstream>
#include <string>

#include "partition/schedule.h"

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

}  // namespace pipetwin
