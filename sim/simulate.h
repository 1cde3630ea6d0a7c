// The simulator's entry points: a scenario and a plan in, a Report (and what it was made of) out.
//
//   Scenario scenario = LoadScenarioFile("scenarios/sim-gpipe-4.json");
//   Simulation run = Simulate(scenario, PlanForScenario(scenario), SimOptions{});
//   run.report.samples_per_s;
//   Report again = SimulateInChild(scenario, plan, options);   // a second one in this process
//
// Simulate starts SimGrid's engine, which exists once per process: call it once, or use
// SimulateInChild (a forked process per simulation, as sweeps and tests do).
#pragma once

#include <string>

#include "partition/model/plan.h"
#include "partition/report/report.h"
#include "sim/actors.h"
#include "sim/setup.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::sim {

struct Simulation {
  SimulationSetup setup;
  SimulationRecord record;
  Report report;
};

Simulation Simulate(const Scenario& scenario, const Plan& plan, const SimOptions& options,
                    const std::string& plan_file = "");

// The same in a child process; the Report comes back through JSON (timelines included when
// options.record_memory_timeline).
Report SimulateInChild(const Scenario& scenario, const Plan& plan, const SimOptions& options);

}  // namespace pipetwin::sim
