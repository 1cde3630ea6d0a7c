#include "workloads/scenario_plan.h"

#include "partition/error.h"

namespace pipetwin {

Plan PlanForScenario(const Scenario& scenario) {
  if (scenario.plan) return *scenario.plan;
  throw InputError(scenario.file, "planner",
                   "planner \"" + scenario.planner + "\" is not wired to scenarios yet");
}

}  // namespace pipetwin
