// The simulated timeline as pictures: a Chrome trace (Trace Event Format, which Perfetto and
// chrome://tracing open) and an SVG of the workers' rows, with simulated times. Both are the
// shared writers of partition/timeline.h over SimulatedTimeline, so the executor's trace of a
// real run (exec/measurement.h) has the same layout.
//
// Trace layout: partition/timeline/timeline.h. Here a send's event lasts until SimGrid's
// transfer of its message ends, and an update's is its optimizer step.
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
