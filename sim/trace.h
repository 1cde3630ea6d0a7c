// The simulated timeline as pictures: a Chrome trace (Trace Event Format, which Perfetto and
// chrome://tracing open) and the SVG `pipetwin schedule` draws, with simulated times.
//
// Trace layout: one process (pid) per device, named "device D: worker W, stage S"; threads
// (tid) 0 compute, 1 send, 2 receive, 3 all-reduce (the communication stream); complete events
// ("ph": "X") with ts and dur in microseconds; a counter ("ph": "C") "memory" per device with one
// series per category, in bytes.
//
//   WriteTextFileAtomically("run.json", ChromeTrace(setup, record).dump());
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/runner.h"
#include "sim/setup.h"

namespace pipetwin::sim {

nlohmann::json ChromeTrace(const SimulationSetup& setup, const SimulationRecord& record);

std::string TimelineSvg(const SimulationSetup& setup, const SimulationRecord& record);

}  // namespace pipetwin::sim
