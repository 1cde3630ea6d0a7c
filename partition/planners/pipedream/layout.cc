#include "partition/planners/pipedream/layout.h"

#include <algorithm>

namespace pipetwin {

namespace {

class LayoutWalker {
 public:
  LayoutWalker(const std::vector<PipeDreamLevelTable>& tables, const PipeDreamOptions& options)
      : tables_(tables),
        levels_(tables.size()),
        path_(tables.size()),
        first_in_range_(tables.size()),
        span_index_(tables.size()) {
    int devices = 1;
    for (const PipeDreamLevel& level : options.levels) {
      unit_devices_.push_back(devices);
      devices *= level.machines;
    }
    layout_.device_count = devices;
  }

  PipeDreamLayout Walk(int state_count) {
    Place(static_cast<int>(tables_.size()) - 1, 0, state_count - 1, {0});
    layout_.levels_highest_first.assign(levels_.rbegin(), levels_.rend());
    return std::move(layout_);
  }

 private:
  // Splits states first..last at `level`, on every level machine whose first device is in
  // `bases` (one entry per machine of the level above that runs this range).
  void Place(int level, int first, int last, const std::vector<int>& bases) {
    int cursor = 0;  // level machines taken so far inside each base
    for (const PipeDreamSpan& span : tables_[level].Layout(first, last)) {
      span_index_[level] = static_cast<int>(levels_[level].size());
      levels_[level].push_back(span);
      path_[level] = span;
      first_in_range_[level] = cursor == 0;
      std::vector<int> machines;
      for (int base : bases)
        for (int r = 0; r < span.replicas; ++r)
          machines.push_back(base + (cursor + r) * unit_devices_[level]);
      cursor += span.replicas;
      if (level > 0) {
        Place(level - 1, span.first_state, span.last_state, machines);
        continue;
      }
      std::sort(machines.begin(), machines.end());
      layout_.stages.push_back({path_, first_in_range_, span_index_, machines});
    }
  }

  const std::vector<PipeDreamLevelTable>& tables_;
  std::vector<int> unit_devices_;                   // devices in one machine of each level
  std::vector<std::vector<PipeDreamSpan>> levels_;  // lowest first while walking
  std::vector<PipeDreamSpan> path_;
  std::vector<bool> first_in_range_;
  std::vector<int> span_index_;
  PipeDreamLayout layout_;
};

}  // namespace

PipeDreamLayout WalkPipeDreamLayout(const std::vector<PipeDreamLevelTable>& tables,
                                    const PipeDreamOptions& options, int state_count) {
  return LayoutWalker(tables, options).Walk(state_count);
}

}  // namespace pipetwin
