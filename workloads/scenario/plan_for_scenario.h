// The plan a scenario asks for: its explicit plan, or what its planner decides for its workload
// and cluster. Shared by `pipetwin plan SCENARIO`, the simulator and the executor, so all three
// see the same plan.
#pragma once

#include "partition/model/plan.h"
#include "partition/cost/pipeline_cost_model.h"
#include "workloads/scenario/scenario.h"
#include "partition/planners/settings.h"

namespace pipetwin {

// Throws InputError when the planner finds no feasible plan (naming the shortfall).
Plan PlanForScenario(const Scenario& scenario);

// The planner settings a scenario implies (training settings, the workload's stash bytes).
PlannerSettings PlannerSettingsFor(const Scenario& scenario);

}  // namespace pipetwin
