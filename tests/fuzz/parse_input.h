// What every fuzz target feeds its bytes to, by input kind, shared with the suite that replays
// the findings (tests/fuzz_regressions_test.cc): parse `text` as a file `name` of `kind`
// (scenario, workload, cluster, plan, graph, schedule_csv). Bad input must come back as an
// InputError naming `name`; anything else is a finding.
#pragma once

#include <string>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"
#include "partition/schedule/format.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "workloads/import/pipedream_profile.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::fuzz {

inline void ParseInput(const std::string& kind, const std::string& text, const std::string& name) {
  if (kind == "scenario") ScenarioFromJson(ParseJsonText(text, name), name, ".");
  else if (kind == "workload") WorkloadFromJson(ParseJsonText(text, name), name);
  else if (kind == "cluster") ClusterFromJson(ParseJsonText(text, name), name);
  else if (kind == "plan") PlanFromJson(ParseJsonText(text, name), name);
  else if (kind == "graph") ParsePipeDreamProfile(text, name, 1);
  else if (kind == "schedule_csv") ScheduleFromCsv(text, name);
  else throw std::logic_error("unknown fuzz input kind " + kind);
}

}  // namespace pipetwin::fuzz
