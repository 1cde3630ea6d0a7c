// The schedule a scenario's plan runs. The simulator and the executor both build their op lists
// from this one spec, so they run the very same lists (same micro-batch counts, same placement of
// sends and receives, which BuildSchedule lays out for the spec's op times).
//
//   const Plan plan = PlanForScenario(scenario);
//   PipelineSchedule lists = ScheduleForScenario(scenario, plan, iterations);
#pragma once

#include <string>
#include <vector>

#include "partition/model/plan.h"
#include "partition/schedule/op.h"
#include "workloads/scenario/scenario.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

// The schedule the scenario asks for: its own "schedule" when its file names one, else the
// plan's.
ScheduleKind ScheduleFor(const Scenario& scenario, const Plan& plan);

struct MicrobatchSettings {
  int microbatch_size = 1;
  int microbatches = 1;  // per update, per pipeline (m)
};
// A planner's plan fixes its own micro-batch size and m; a hand-written ("manual") plan takes
// the scenario's training settings.
MicrobatchSettings MicrobatchSettingsFor(const Scenario& scenario, const Plan& plan);
// Micro-batches per iteration over every pipeline: m x the input stage's replicas (the data
// parallelism; under dualpipe each pipeline's m is split over its two directions).
int MicrobatchesPerIteration(const Scenario& scenario, const Plan& plan);

// What those two rules replace, said to the user, one line each: the plan's schedule by the
// scenario's "schedule"; the scenario's training.microbatch_size and training.microbatches,
// when it gives them, by a planner's plan's own.
// `plan_file` and `plan_path` locate the plan ("plan" inside the scenario, "" for a plan file).
std::vector<std::string> OverriddenPlanSettings(const Scenario& scenario, const Plan& plan,
                                                const std::string& plan_file,
                                                const std::string& plan_path);
// The same for a plan the scenario's planner made: the scenario's "schedule" where it is not
// the one the planner planned for (the planner's partition, micro-batches and prediction are for
// its own), the scenario's micro-batch settings and global batch the planner chose others for
// (replicas x micro-batch x micro-batches do not make that batch), and the devices a schedule of
// several chunks per worker leaves idle of those the planner planned for.
std::vector<std::string> PlannerOverrides(const Scenario& scenario, const Plan& plan);
// What plan, simulate and run warn about (stderr, and the report's `warnings`) for the plan
// they run: the plan file's (`plan_file`, "" for none) overrides, the scenario's own plan's
// (Scenario::notes), or its planner's (PlannerOverrides).
std::vector<std::string> PlanWarnings(const Scenario& scenario, const Plan& plan,
                                      const std::string& plan_file);

// `command --no-weight-stashing` (run, simulate): the scenario's training.weight_stashing set to
// false, so that both back ends build lists without stashing. Throws InputError where the
// schedule the plan runs (ScheduleFor) is not pipedream.
void TurnOffWeightStashing(Scenario& scenario, const Plan& plan, const std::string& command);

// The spec: kind, depth (plan stages / chunks for interleaved), replicas, m x replicas of the
// input stage micro-batches per iteration (each replica of stage 0 starts m; PipeDream: times
// `iterations`, 2BW: `iterations` batches), vertical sync, recomputation and when it runs, and
// the all-reduce buckets.
// Throws InputError (naming `file` and `path`) when the plan's stages do not divide into chunks.
ScheduleSpec ScheduleSpecFor(const Scenario& scenario, const Plan& plan, int iterations,
                             const std::string& file = "", const std::string& path = "");

// The op lists the scenario's plan runs for `iterations` iterations: BuildSchedule of
// ScheduleSpecFor, run `iterations` times back to back (RepeatSchedule) for a schedule that
// flushes. The simulator and the executor both take their lists from here.
PipelineSchedule ScheduleForScenario(const Scenario& scenario, const Plan& plan, int iterations,
                                     const std::string& file = "", const std::string& path = "");
// The rules of that spec alone (CheckScheduleSpec), as ScheduleForScenario reports them, for a
// command that refuses what the back ends would refuse without building the lists.
void CheckScheduleForScenario(const Scenario& scenario, const Plan& plan, int iterations,
                              const std::string& file = "", const std::string& path = "");

}  // namespace pipetwin
