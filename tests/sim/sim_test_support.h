// Small workloads, clusters and plans built in code, and running the simulator on them in a
// child process (SimGrid's engine is one per process, and every TEST wants a fresh one).
#pragma once

#include <string>
#include <vector>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/report/report.h"
#include "partition/model/workload.h"
#include "sim/setup.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::simtest {

// `layers` equal layers of forward_ms / backward_ms at reference batch 1, each with its output
// of `activation_bytes` and `parameter_bytes` of fp32 weights.
Workload EqualLayers(int layers, double forward_ms, double backward_ms, double activation_bytes,
                     double parameter_bytes);

// Servers of `per_server` devices on links of gbps0 / latency_us0, `servers` of them joined by
// NICs of gbps1 / latency_us1 (one level when servers == 1). Device memory `memory_bytes`.
Cluster TwoLevelCluster(int per_server, int servers, double gbps0, double latency_us0,
                        double gbps1, double latency_us1, double memory_bytes = 1e12);

// One stage per layer group of `layers_per_stage` layers, `replicas` each (devices left to the
// default placement unless given per stage).
Plan EvenPlan(int stages, int layers_per_stage, int replicas,
              const std::vector<std::vector<int>>& devices = {});

// A scenario of these parts: schedule `schedule`, m micro-batches per pipeline, `iterations`.
Scenario MakeScenario(const Workload& workload, const Cluster& cluster, const Plan& plan,
                      const std::string& schedule, int microbatches, int iterations);

// Simulates in a child process.
Report Simulate(const Scenario& scenario, const sim::SimOptions& options = {});

// The scenario as a JSON file in a fresh temporary directory; returns its path.
std::string WriteScenario(const Scenario& scenario);

// Relative difference |a - b| / |b|.
double RelativeError(double a, double b);

}  // namespace pipetwin::simtest
