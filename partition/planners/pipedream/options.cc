#include "partition/planners/pipedream/options.h"

#include <cmath>
#include <sstream>

#include "partition/util/error.h"

namespace pipetwin {

std::string PipeDreamPlannerName(PipeDreamCostModel model) {
  return model == PipeDreamCostModel::kCompat ? "pipedream-compat" : "pipedream";
}

namespace {

std::string Number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

void ValidatePipeDreamOptions(const PipeDreamOptions& o) {
  const std::string who = PipeDreamPlannerName(o.cost_model) + ": ";
  if (o.levels.empty())
    throw InputError(who + "expected at least one topology level (machines and bandwidth)");
  for (size_t l = 0; l < o.levels.size(); ++l) {
    const std::string at = "level " + std::to_string(l) + " (lowest is 0): ";
    // The tables store machine counts in 16 bits; far more than any level's fan-out.
    if (o.levels[l].machines < 1 || o.levels[l].machines > 32767)
      throw InputError(who + at + "expected machines between 1 and 32767, got " +
                       std::to_string(o.levels[l].machines));
    const double b = o.levels[l].bandwidth_bytes_per_s;
    if (!std::isfinite(b) || b <= 0)
      throw InputError(who + at + "expected a bandwidth > 0 bytes/s, got " + Number(b));
  }
  if (o.activation_compression_ratio &&
      !(std::isfinite(*o.activation_compression_ratio) && *o.activation_compression_ratio > 0))
    throw InputError(who + "expected an activation compression ratio > 0, got " +
                     Number(*o.activation_compression_ratio));
  if (!std::isfinite(o.memory_bytes_per_device) || o.memory_bytes_per_device <= 0)
    throw InputError(who + "expected a memory limit > 0 bytes, got " +
                     Number(o.memory_bytes_per_device));
  if (o.batch_size < 1)
    throw InputError(who + "expected a batch size >= 1, got " + std::to_string(o.batch_size));
}

}  // namespace pipetwin
