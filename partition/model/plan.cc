#include "partition/model/plan.h"

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/schema_version.h"
#include "partition/model/workload.h"

namespace pipetwin {

int Plan::WorkerCount() const {
  int n = 0;
  for (const StagePlan& s : stages) n += s.replicas;
  return n;
}

nlohmann::json PlanToJson(const Plan& p) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StagePlan& s : p.stages)
    stages.push_back({{"first_layer", s.first_layer},
                      {"last_layer", s.last_layer},
                      {"replicas", s.replicas},
                      {"devices", s.devices},
                      {"compute_ms", s.compute_ms},
                      {"communication_ms", s.communication_ms},
                      {"memory_bytes", s.memory_bytes}});
  nlohmann::json j = {{"schema_version", kSchemaVersion},
          {"planner", p.planner},
          {"schedule", ScheduleKindName(p.schedule)},
          {"stages", stages},
          {"microbatch_size", p.microbatch_size},
          {"microbatches_per_update", p.microbatches_per_update},
          {"recompute", p.recompute},
          {"vertical_sync", p.vertical_sync},
          {"predicted_samples_per_s", p.predicted_samples_per_s},
          {"predicted_time_per_sample_s", p.predicted_time_per_sample_s},
          {"memory_bytes_per_device", p.memory_bytes_per_device},
          {"details", p.details}};
  if (!p.layer_order.empty()) j["layer_order"] = p.layer_order;
  return j;
}

Plan PlanFromJson(const nlohmann::json& doc, const std::string& file, const std::string& path) {
  JsonReader root(doc, file, path);
  CheckSchemaVersion(root);
  Plan p;
  p.planner = root.OptionalString("planner", p.planner);
  p.schedule_stated = root.Has("schedule");
  p.schedule = ParseScheduleKind(root.OptionalChoice("schedule", ScheduleKindNames(),
                                                     ScheduleKindName(p.schedule)));
  std::vector<JsonReader> stages = root.Array("stages");
  if (stages.empty()) root.FailAt("stages", "expected at least one stage, got none");
  int next_layer = 0;
  int64_t replicas = 0;  // over every stage: the workers, and so at most the devices
  for (JsonReader& s : stages) {
    StagePlan st;
    st.first_layer = s.OptionalInteger("first_layer", 0, kMaxLayers, 0);
    if (!s.Has("first_layer")) s.FailAt("first_layer", "missing (required)");
    st.last_layer = s.OptionalInteger("last_layer", 0, kMaxLayers, 0);
    if (!s.Has("last_layer")) s.FailAt("last_layer", "missing (required)");
    if (st.first_layer != next_layer)
      s.FailAt("first_layer", "expected " + std::to_string(next_layer) +
                                  " (stages cover the layers in order without gaps), got " +
                                  std::to_string(st.first_layer));
    if (st.last_layer < st.first_layer)
      s.FailAt("last_layer", "expected >= first_layer (" + std::to_string(st.first_layer) +
                                 "), got " + std::to_string(st.last_layer));
    next_layer = st.last_layer + 1;
    st.replicas = s.OptionalInteger("replicas", 1, kMaxDevices, 1);
    replicas += st.replicas;
    if (replicas > kMaxDevices.max)
      s.FailAt("replicas", "the stages so far hold " + std::to_string(replicas) +
                               " replicas; expected at most " +
                               std::to_string(kMaxDevices.max) + " (the most " +
                               kMaxDevices.what + " pipetwin takes)");
    if (auto devices = s.OptionalMember("devices")) {
      for (const JsonReader& d : devices->Elements())
        st.devices.push_back(d.AsInteger(0, kMaxDevices));
      if (!st.devices.empty() && static_cast<int>(st.devices.size()) != st.replicas)
        s.FailAt("devices", "expected " + std::to_string(st.replicas) +
                                " device ids (one per replica), got " +
                                std::to_string(st.devices.size()));
    }
    st.compute_ms = s.OptionalNonNegativeNumber("compute_ms", 0);
    st.communication_ms = s.OptionalNonNegativeNumber("communication_ms", 0);
    st.memory_bytes = s.OptionalNonNegativeNumber("memory_bytes", 0);
    s.Finish();
    p.stages.push_back(st);
  }
  if (auto order = root.OptionalMember("layer_order"))
    for (const JsonReader& o : order->Elements())
      p.layer_order.push_back(o.AsInteger(0, kMaxLayers));
  p.microbatch_size = root.OptionalInteger("microbatch_size", 1, kMaxSamples, 1);
  p.microbatches_per_update =
      root.OptionalInteger("microbatches_per_update", 1, kMaxMicrobatches, 1);
  p.recompute = root.OptionalBool("recompute", false);
  p.vertical_sync = root.OptionalBool("vertical_sync", false);
  p.predicted_samples_per_s = root.OptionalNonNegativeNumber("predicted_samples_per_s", 0);
  p.predicted_time_per_sample_s = root.OptionalNonNegativeNumber("predicted_time_per_sample_s", 0);
  if (auto mem = root.OptionalMember("memory_bytes_per_device"))
    for (const JsonReader& m : mem->Elements()) p.memory_bytes_per_device.push_back(m.AsNonNegativeNumber());
  if (auto details = root.OptionalMember("details")) p.details = details->value();
  root.Finish();
  return p;
}

Plan LoadPlanFile(const std::string& path) { return PlanFromJson(ParseJsonFile(path), path); }

namespace {

// layer_order must be a permutation of the layers in which every input precedes its consumer.
void ValidateLayerOrder(const Plan& plan, const Workload& w, const std::string& file,
                        const std::string& at) {
  if (plan.layer_order.empty()) return;
  const int n = w.LayerCount();
  if (static_cast<int>(plan.layer_order.size()) != n)
    throw InputError(file, at, "expected " + std::to_string(n) + " layer indices (one per layer), got " +
                                   std::to_string(plan.layer_order.size()));
  std::vector<int> position(n, -1);
  for (int p = 0; p < n; ++p) {
    int layer = plan.layer_order[p];
    if (layer >= n || position[layer] >= 0)
      throw InputError(file, at + "[" + std::to_string(p) + "]",
                       "expected a permutation of 0.." + std::to_string(n - 1) + ", got " +
                           std::to_string(layer) + (layer < n ? " twice" : ""));
    position[layer] = p;
  }
  for (int layer = 0; layer < n; ++layer)
    for (int input : w.layers[layer].inputs)
      if (position[input] > position[layer])
        throw InputError(file, at, "layer \"" + w.layers[layer].id + "\" comes before its input \"" +
                                       w.layers[input].id + "\" (expected a topological order)");
}

}  // namespace

void ValidatePlan(const Plan& plan, const Workload& workload, int device_count,
                  const std::string& file, const std::string& path, int chunks) {
  const int layer_count = workload.LayerCount();
  const std::string stages = path.empty() ? "stages" : path + ".stages";
  ValidateLayerOrder(plan, workload, file, path.empty() ? "layer_order" : path + ".layer_order");
  const StagePlan& last = plan.stages.back();
  if (last.last_layer != layer_count - 1)
    throw InputError(file, stages + "[" + std::to_string(plan.stages.size() - 1) + "].last_layer",
                     "expected " + std::to_string(layer_count - 1) + " (the workload has " +
                         std::to_string(layer_count) + " layers), got " +
                         std::to_string(last.last_layer));
  if (chunks < 1 || plan.StageCount() % chunks != 0)
    throw InputError(file, stages,
                     "interleaving " + std::to_string(chunks) + " chunks per worker needs a "
                     "multiple of " + std::to_string(chunks) + " stages, got " +
                         std::to_string(plan.StageCount()));
  const size_t positions = plan.stages.size() / chunks;  // the stages that hold workers
  int64_t workers = 0;  // up to 2^20 stages of 2^20 replicas each (util/limits.h)
  for (size_t i = 0; i < positions; ++i) workers += plan.stages[i].replicas;
  if (workers > device_count)
    throw InputError(file, stages,
                     "the plan needs " + std::to_string(workers) +
                         " workers but the cluster has " + std::to_string(device_count) +
                         " devices");
  std::vector<int> used(device_count, 0);
  for (size_t i = 0; i < positions; ++i)
    for (size_t k = 0; k < plan.stages[i].devices.size(); ++k) {
      int d = plan.stages[i].devices[k];
      std::string at = stages + "[" + std::to_string(i) + "].devices[" + std::to_string(k) + "]";
      if (d < 0 || d >= device_count)
        throw InputError(file, at, "expected a device id < " + std::to_string(device_count) +
                                       ", got " + std::to_string(d));
      if (used[d]++)
        throw InputError(file, at, "device " + std::to_string(d) + " is used twice");
    }
}

}  // namespace pipetwin
