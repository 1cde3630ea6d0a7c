// The SVG pictures of pipetwin: one or several timelines (`simulate --svg`, `run --svg`,
// `compare --svg`) and a schedule's replay (`pipetwin schedule --format svg`), drawn by one rule.
//
// What a picture shows, from the top: the title; the legend; the time axis with its unit; then
// each timeline under its label (makespan, workers, idle share) as:
//   - a band of its pipeline phases (warm-up, steady, cool-down: PipelinePhases, timeline.h);
//   - one row per stage position, or per worker where a stage's replicas run different ops
//     (1F1B-RR). Replicas that run the same ops (data parallelism) fold into one row, drawn from
//     the lowest worker and labelled "stage S x R (workers ...)", its tooltip giving how far apart
//     the replicas' op ends lie. A row holds:
//       compute boxes (forward blue, backward green, ...), the micro-batch inside, "c1:" before it
//         for model chunk 1 under interleaving, a strip on top coloured by weight version (cycling
//         through four colours) and " v3" after it where the versions differ, as under PipeDream
//         and 2BW; every idle gap hatched as a bubble; updates as black ticks;
//       a lane of sends (until delivered) and receives (waiting), when there are any;
//       a lane of all-reduce buckets, when there are any;
//       a memory strip: the device's total bytes over time, on one scale for the picture (its
//         highest peak), red with the capacity as a dashed line where the device is over it;
//       at the right end: the row's idle share, and its peak of the device's capacity or how
//         far over it.
// The picture scales: a viewBox, width 100% of where it is shown, a plot 1,200 units wide
// whatever the run's length, so that a browser's zoom, not the file, sets the size.
#pragma once

#include <string>
#include <vector>

#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"
#include "partition/timeline/timeline.h"

namespace pipetwin {

// The time axis's unit: `name` and how many of it a second holds. per_second 0 chooses µs, ms or
// s by the longest timeline's span.
struct SvgTimeUnit {
  std::string name;
  double per_second = 0;
};

// The timelines one above the other, on one time axis. `title` replaces the one made from the
// first timeline's other_data (scenario, schedule).
std::string TimelineSvg(const std::vector<Timeline>& timelines, const SvgTimeUnit& unit = {},
                        const std::string& title = "");

// A schedule's replay, in the replay's time units (--forward-time and --backward-time's).
std::string ScheduleToSvg(const PipelineSchedule& schedule, const ReplayResult& replay);

}  // namespace pipetwin
