#include "tests/sim/sim_test_support.h"

#include <cmath>

#include "sim/simulate.h"
#include "tests/test_support.h"

namespace pipetwin::simtest {

Workload EqualLayers(int layers, double forward_ms, double backward_ms, double activation_bytes,
                     double parameter_bytes) {
  Workload w;
  w.name = "equal";
  w.reference.batch_size = 1;
  w.reference.device = "reference";
  for (int i = 0; i < layers; ++i) {
    Layer l;
    l.id = "layer" + std::to_string(i);
    l.forward_ms = forward_ms;
    l.backward_ms = backward_ms;
    l.activation_bytes = activation_bytes;
    l.parameter_bytes = parameter_bytes;
    l.parameters = parameter_bytes / 4;
    if (i > 0) l.inputs = {i - 1};
    w.layers.push_back(l);
  }
  return w;
}

Cluster TwoLevelCluster(int per_server, int servers, double gbps0, double latency_us0,
                        double gbps1, double latency_us1, double memory_bytes) {
  Cluster c;
  c.name = "test";
  c.device.name = "test-device";
  c.device.memory_bytes = memory_bytes;
  c.levels.push_back({"server", per_server, gbps0, latency_us0, "nvlink", {}});
  if (servers > 1) c.levels.push_back({"cluster", servers, gbps1, latency_us1, "ethernet", {}});
  return c;
}

Plan EvenPlan(int stages, int layers_per_stage, int replicas,
              const std::vector<std::vector<int>>& devices) {
  Plan p;
  p.planner = "manual";
  for (int s = 0; s < stages; ++s) {
    StagePlan stage;
    stage.first_layer = s * layers_per_stage;
    stage.last_layer = (s + 1) * layers_per_stage - 1;
    stage.replicas = replicas;
    if (!devices.empty()) stage.devices = devices[s];
    p.stages.push_back(stage);
  }
  return p;
}

Scenario MakeScenario(const Workload& workload, const Cluster& cluster, const Plan& plan,
                      const std::string& schedule, int microbatches, int iterations) {
  Scenario s;
  s.name = "test: " + schedule;
  s.file = "<test>";
  s.workload = workload;
  s.cluster = cluster;
  s.plan = plan;
  s.plan->schedule = ParseScheduleKind(schedule);
  s.schedule = s.plan->schedule;
  s.training.microbatch_size = 1;
  s.training.microbatches = microbatches;
  s.training.iterations = iterations;
  s.training.optimizer_bytes_per_parameter = 8;
  nlohmann::json plan_json = PlanToJson(*s.plan);
  for (const char* k : {"predicted_samples_per_s", "predicted_time_per_sample_s",
                        "memory_bytes_per_device", "details"})
    plan_json.erase(k);
  s.source = {{"name", s.name},
              {"workload", WorkloadToJson(workload)},
              {"cluster", ClusterToJson(cluster)},
              {"plan", plan_json},
              {"schedule", schedule},
              {"training",
               {{"microbatch_size", 1},
                {"microbatches", microbatches},
                {"iterations", iterations},
                {"optimizer_bytes_per_parameter", 8}}}};
  return s;
}

Report Simulate(const Scenario& scenario, const sim::SimOptions& options) {
  return sim::SimulateInChild(scenario, *scenario.plan, options);
}

std::string WriteScenario(const Scenario& scenario) {
  const std::string path = testing::TemporaryDirectory() + "/scenario.json";
  testing::WriteFile(path, scenario.source.dump(1));
  return path;
}

double RelativeError(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

}  // namespace pipetwin::simtest
