// From solved PipeDream level tables to stages on devices.
//
// optimizer_graph_hierarchical.py (main, analyze_partitioning) reads the layout from the
// highest level down: each stage of a level is split again by the level below. A stage with r
// replicas at level l runs on r consecutive level-l machines inside every level-(l+1) machine
// that runs the stage above it; a level-l machine holds the product of the machine counts of the
// levels below it in devices, so device ids count servers-major, as Cluster does (device d sits
// in server d / levels[0].machines).
//
//   PipeDreamLayout layout = WalkPipeDreamLayout(tables, options, states.StateCount());
//   layout.stages[0].devices;          // {0, 1, 2, 3} for a stage replicated over a server
//   layout.levels_highest_first[0];    // the top level's stages of the whole model
#pragma once

#include <vector>

#include "partition/planners/pipedream/dp.h"

namespace pipetwin {

// One stage of the final (lowest-level) layout.
struct PipeDreamLeafStage {
  std::vector<PipeDreamSpan> path;   // path[l]: the span holding it at level l; path[0] is itself
  std::vector<bool> first_in_range;  // path[l] is the first stage of the range it splits
  std::vector<int> span_index;       // path[l]'s index in levels_highest_first[top - l]
  std::vector<int> devices;          // ascending
  int Replicas() const { return static_cast<int>(devices.size()); }
};

struct PipeDreamLayout {
  std::vector<PipeDreamLeafStage> stages;                   // in state order
  std::vector<std::vector<PipeDreamSpan>> levels_highest_first;
  int device_count = 1;                                     // of the whole topology
};

// Requires every table solved and Best(0, state_count - 1) of the highest one finite.
PipeDreamLayout WalkPipeDreamLayout(const std::vector<PipeDreamLevelTable>& tables,
                                    const PipeDreamOptions& options, int state_count);

}  // namespace pipetwin
