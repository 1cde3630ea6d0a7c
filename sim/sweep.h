// Sweeps: the cartesian product of variations of a scenario, one simulation per point, run in
// parallel processes (SimGrid's engine is one per process).
//
//   std::vector<Variation> v = {ParseVariation("cluster.levels[1].bandwidth_gbps=1,10,25"),
//                               ParseVariation("schedule=gpipe,flush")};
//   for (const SweepPoint& p : CartesianProduct(v)) ...            // 6 points
//   nlohmann::json doc = ApplyPoint(scenario, point);              // the varied scenario
//
// A variation's PATH is a JSON path into the scenario file ("training.microbatches",
// "cluster.levels[1].bandwidth_gbps"); values are JSON when they parse as JSON (numbers, true,
// false, null, quoted strings), else strings. A cluster given as a preset is expanded first when
// a path reaches into its levels or device. Each point reloads the scenario, so a scenario with
// a planner is replanned at every point.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/report/report.h"
#include "sim/setup.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::sim {

struct Variation {
  std::string path;                   // "cluster.levels[1].bandwidth_gbps"
  std::vector<nlohmann::json> values;
  std::vector<std::string> labels;    // the values as written
};

// Throws InputError naming the flag ("--vary expects PATH=V1,V2,...").
Variation ParseVariation(const std::string& text);

// One point: a value index per variation.
using SweepPoint = std::vector<size_t>;
std::vector<SweepPoint> CartesianProduct(const std::vector<Variation>& variations);

// The scenario document with the point's values set; throws InputError when a path does not fit
// the document (an index past an array's end, a key into a number).
nlohmann::json ApplyPoint(const Scenario& scenario, const std::vector<Variation>& variations,
                          const SweepPoint& point);

struct SweepResult {
  size_t point = 0;                 // its index in CartesianProduct's order
  std::vector<std::string> labels;  // the point's values, one per variation
  bool ok = false;
  Report report;
  std::string error;                // when not ok: the one-line error
};

// `pipetwin sweep --merge`: the rows of shards' CSVs (`--shard`, `texts` as read from `files`),
// their point column taken off, in point order, and the header they share (`header`, without
// it): the table one unsharded sweep writes. Throws InputError naming the file and line of a
// header that differs or a row without its index, a point in two shards, or one in none.
std::vector<std::string> MergeShardCsvs(const std::vector<std::string>& texts,
                                        const std::vector<std::string>& files,
                                        std::string* header);

// Simulates every point (with shards > 0, those whose index is `shard` modulo `shards`), `jobs`
// at a time (0: one per core), calling `progress(done, total)` as points finish. Results come
// back in point order.
std::vector<SweepResult> RunSweep(const Scenario& scenario,
                                  const std::vector<Variation>& variations,
                                  const SimOptions& options, int jobs,
                                  const std::function<void(size_t, size_t)>& progress,
                                  int shard = 0, int shards = 0);

}  // namespace pipetwin::sim
