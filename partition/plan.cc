#include "partition/plan.h"

#include "partition/error.h"
#include "partition/json_reader.h"

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
  return {{"planner", p.planner},
          {"schedule", p.schedule},
          {"stages", stages},
          {"microbatch_size", p.microbatch_size},
          {"microbatches_per_update", p.microbatches_per_update},
          {"recompute", p.recompute},
          {"vertical_sync", p.vertical_sync},
          {"predicted_samples_per_s", p.predicted_samples_per_s},
          {"predicted_time_per_sample_s", p.predicted_time_per_sample_s},
          {"memory_bytes_per_device", p.memory_bytes_per_device},
          {"details", p.details}};
}

Plan PlanFromJson(const nlohmann::json& doc, const std::string& file, const std::string& path) {
  JsonReader root(doc, file, path);
  Plan p;
  p.planner = root.OptionalString("planner", p.planner);
  p.schedule = root.OptionalChoice(
      "schedule", {"gpipe", "flush", "pipedream", "2bw", "interleaved", "zb-h1"}, p.schedule);
  std::vector<JsonReader> stages = root.Array("stages");
  if (stages.empty()) root.FailAt("stages", "expected at least one stage, got none");
  int next_layer = 0;
  for (JsonReader& s : stages) {
    StagePlan st;
    st.first_layer = static_cast<int>(s.OptionalNonNegativeInteger("first_layer", 0));
    if (!s.Has("first_layer")) s.FailAt("first_layer", "missing (required)");
    st.last_layer = static_cast<int>(s.OptionalNonNegativeInteger("last_layer", 0));
    if (!s.Has("last_layer")) s.FailAt("last_layer", "missing (required)");
    if (st.first_layer != next_layer)
      s.FailAt("first_layer", "expected " + std::to_string(next_layer) +
                                  " (stages cover the layers in order without gaps), got " +
                                  std::to_string(st.first_layer));
    if (st.last_layer < st.first_layer)
      s.FailAt("last_layer", "expected >= first_layer (" + std::to_string(st.first_layer) +
                                 "), got " + std::to_string(st.last_layer));
    next_layer = st.last_layer + 1;
    st.replicas = static_cast<int>(s.OptionalPositiveInteger("replicas", 1));
    if (auto devices = s.OptionalMember("devices")) {
      for (const JsonReader& d : devices->Elements())
        st.devices.push_back(static_cast<int>(d.AsNonNegativeInteger()));
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
  p.microbatch_size = static_cast<int>(root.OptionalPositiveInteger("microbatch_size", 1));
  p.microbatches_per_update =
      static_cast<int>(root.OptionalPositiveInteger("microbatches_per_update", 1));
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

void ValidatePlan(const Plan& plan, int layer_count, int device_count, const std::string& file,
                  const std::string& path) {
  const std::string stages = path.empty() ? "stages" : path + ".stages";
  const StagePlan& last = plan.stages.back();
  if (last.last_layer != layer_count - 1)
    throw InputError(file, stages + "[" + std::to_string(plan.stages.size() - 1) + "].last_layer",
                     "expected " + std::to_string(layer_count - 1) + " (the workload has " +
                         std::to_string(layer_count) + " layers), got " +
                         std::to_string(last.last_layer));
  if (plan.WorkerCount() > device_count)
    throw InputError(file, stages,
                     "the plan needs " + std::to_string(plan.WorkerCount()) +
                         " workers but the cluster has " + std::to_string(device_count) +
                         " devices");
  std::vector<int> used(device_count, 0);
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (size_t k = 0; k < plan.stages[i].devices.size(); ++k) {
      int d = plan.stages[i].devices[k];
      std::string at = stages + "[" + std::to_string(i) + "].devices[" + std::to_string(k) + "]";
      if (d >= device_count)
        throw InputError(file, at, "expected a device id < " + std::to_string(device_count) +
                                       ", got " + std::to_string(d));
      if (used[d]++)
        throw InputError(file, at, "device " + std::to_string(d) + " is used twice");
    }
}

}  // namespace pipetwin
