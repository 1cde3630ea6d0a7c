#include "partition/planners/splits.h"

#include "partition/planners/min_max_partition.h"
#include "partition/util/error.h"

namespace pipetwin {

namespace {

void Require(bool rule_holds, const std::string& message) {
  if (!rule_holds) throw InputError("planner: " + message);
}

}  // namespace

std::vector<StageRange> UniformSplit(int layers, int depth) {
  Require(depth >= 1 && depth <= layers, "cannot split " + std::to_string(layers) +
                                             " layers into " + std::to_string(depth) + " stages");
  std::vector<StageRange> out;
  const int size = layers / depth, extra = layers % depth;
  for (int s = 0, first = 0; s < depth; ++s) {
    const int count = size + (s < extra ? 1 : 0);
    out.push_back({first, first + count - 1});
    first += count;
  }
  return out;
}

std::vector<StageRange> BalancedSplit(const PipelineCostModel& model, int depth, int b,
                                      bool recompute) {
  Require(depth >= 1 && depth <= model.LayerCount(),
          "cannot split " + std::to_string(model.LayerCount()) + " layers into " +
              std::to_string(depth) + " stages");
  auto compute = [&](int i, int j) { return model.ComputeMs(i, j, b, recompute); };
  auto cost = [&](int, int i, int j) { return compute(i, j); };
  std::vector<StageRange> ranges;
  MinMaxPartitioner().Solve(model.LayerCount(), depth, cost, compute, kInfinity, &ranges);
  return ranges;
}

}  // namespace pipetwin

namespace pipetwin {

void MinMaxPartitioner::Refuse(const std::string& why) {
  throw InputError(why + " (merge layers into fewer, or plan fewer devices)");
}

}  // namespace pipetwin
