#include "sim/simulate.h"

#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"
#include "sim/child_process.h"
#include "sim/report_builder.h"

namespace pipetwin::sim {

Simulation Simulate(const Scenario& scenario, const Plan& plan, const SimOptions& options,
                    const std::string& plan_file) {
  Simulation run;
  run.setup = PrepareSimulation(scenario, plan, options, plan_file);
  run.record = RunSimulation(run.setup);
  run.report = BuildReport(run.setup, run.record);
  return run;
}

Report SimulateInChild(const Scenario& scenario, const Plan& plan, const SimOptions& options) {
  const std::string json = RunInChild([&] {
    return JsonText(ReportToJson(Simulate(scenario, plan, options).report,
                                 options.record_memory_timeline));
  });
  return ReportFromJson(ParseJsonText(json, "<simulation>"), "<simulation>");
}

}  // namespace pipetwin::sim
