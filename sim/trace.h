// The simulated timeline as pictures: a Chrome trace (Trace Event Format, which Perfetto and
// chrome://tracing open) and an SVG of the workers' rows, with simulated times. Both are the
// shared writers of partition/timeline.h over SimulatedTimeline, so the executor's trace of a
// real run (exec/measurement.h) has the same layout.
//
// Trace layout: one process (pid) per device, named "device D: worker W, stage S"; threads
// (tid) 0 compute, 1 send, 2 receive, 3 all-reduce (the communication stream); complete events
// ("ph": "X") with ts and dur in microseconds; a counter ("ph": "C") "memory" per device with one
// series per category, in bytes.
//
//   WriteTextFileAtomically("run.json", ChromeTrace(setup, record).dump());
//   Timeline predicted = SimulatedTimeline(setup, record);  // to draw beside a measured one
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "partition/timeline/timeline.h"
#include "sim/actors.h"
#include "sim/setup.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"

namespace pipetwin::sim {

// The record as a Timeline labelled "predicted": per worker its compute and Send/Recv ops
// (message bytes from the setup), its all-reduce buckets, its updates and its memory samples.
Timeline SimulatedTimeline(const SimulationSetup& setup, const SimulationRecord& record);

// ChromeTrace(SimulatedTimeline(setup, record)).
nlohmann::json ChromeTrace(const SimulationSetup& setup, const SimulationRecord& record);

// TimelineSvg({SimulatedTimeline(setup, record)}).
std::string TimelineSvg(const SimulationSetup& setup, const SimulationRecord& record);

}  // namespace pipetwin::sim
