// From what the simulation recorded to the Report both back ends share (partition/report.h).
//
// Iterations: an op belongs to the iteration of its micro-batch (ops without one, such as an
// AllReduce or an Update, to the iteration of the worker's last micro-batch before them);
// iteration j ends when its last op on any worker does, weight updates included. The steady
// state leaves the first iteration out (report/summarize.h: SteadyStateWindow, as the executor
// measures with its default --warmup 1).
//
//   SimulationRecord record = RunSimulation(setup);
//   Report report = BuildReport(setup, record);
#pragma once

#include <string>
#include <vector>

#include "partition/report/report.h"
#include "partition/schedule/op.h"
#include "sim/actors.h"
#include "sim/setup.h"
#include "partition/schedule/replay.h"

namespace pipetwin::sim {

Report BuildReport(const SimulationSetup& setup, const SimulationRecord& record);

// End of each iteration, as above.
std::vector<double> IterationEnds(const SimulationSetup& setup, const SimulationRecord& record);

}  // namespace pipetwin::sim
