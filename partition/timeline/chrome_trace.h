// Timelines as Chrome traces, in the layout timeline.h describes, both ways.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/timeline/timeline.h"

namespace pipetwin {

// One timeline as a Chrome trace in the layout above; `label` is not used.
nlohmann::json ChromeTrace(const Timeline& timeline);
// Several timelines in one trace, one process group each (an empty label becomes "timeline N");
// otherData lists each timeline's label and other_data under "timelines".
nlohmann::json ChromeTrace(const std::vector<Timeline>& timelines);

// A timeline read back from a Chrome trace in the layout of partition/timeline.h (what
// `pipetwin simulate --trace` and `pipetwin run --trace` write), for drawing two runs together.
// Process names give each device's worker and stage; an event's category gives its op kind, its
// args the micro-batch, stage and weight version. Memory counters are read back too. Throws
// InputError naming `file` when the trace is not in that layout.
Timeline TimelineFromChromeTrace(const nlohmann::json& trace, const std::string& file);

}  // namespace pipetwin
