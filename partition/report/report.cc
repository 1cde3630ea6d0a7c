#include "partition/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/schema_version.h"

namespace pipetwin {

namespace {

// Timelines are columns: {"time_s": [...], "weights": [...], ...}, one entry per sample.
nlohmann::json TimelineToJson(const std::vector<MemorySample>& timeline) {
  nlohmann::json out = nlohmann::json::object();
  std::vector<double> column(timeline.size());
  for (size_t k = 0; k < timeline.size(); ++k) column[k] = timeline[k].time_s;
  out["time_s"] = column;
  for (int i = 0; i < kMemoryCategoryCount; ++i) {
    for (size_t k = 0; k < timeline.size(); ++k) column[k] = timeline[k].bytes.Of(i);
    out[MemoryCategoryName(i)] = column;
  }
  return out;
}

std::vector<MemorySample> TimelineFromJson(JsonReader r) {
  auto column = [&](const std::string& key) {
    std::vector<double> values;
    for (const JsonReader& v : r.Array(key)) values.push_back(v.AsNonNegativeNumber());
    return values;
  };
  const std::vector<double> times = column("time_s");
  std::vector<MemorySample> out(times.size());
  for (size_t k = 0; k < times.size(); ++k) out[k].time_s = times[k];
  for (int i = 0; i < kMemoryCategoryCount; ++i) {
    const std::vector<double> values = column(MemoryCategoryName(i));
    if (values.size() != times.size())
      r.FailAt(MemoryCategoryName(i), "expected " + std::to_string(times.size()) +
                                          " values (one per time_s), got " +
                                          std::to_string(values.size()));
    for (size_t k = 0; k < times.size(); ++k) out[k].bytes.Of(i) = values[k];
  }
  r.Finish();
  return out;
}

// A string that may be empty (JsonReader's strings are non-empty).
std::string Text(JsonReader& r, const std::string& key) {
  if (!r.Has(key)) return "";
  JsonReader value = r.Member(key);
  if (!value.value().is_string())
    value.Fail("expected a string, got " + DescribeJson(value.value()));
  return value.value().get<std::string>();
}

int Int(JsonReader& r, const std::string& key) {
  return r.OptionalInteger(key, 0, kMaxCount, 0);
}

}  // namespace

nlohmann::json ReportToJson(const Report& r, bool timelines) {
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerReport& w : r.workers) {
    workers.push_back({{"worker", w.worker},
                       {"device", w.device},
                       {"stage", w.stage},
                       {"replica", w.replica},
                       {"busy_s", w.busy_s},
                       {"idle_s", w.idle_s},
                       {"bubble_fraction", w.bubble_fraction},
                       {"exposed_communication_s", w.exposed_communication_s}});
    if (!w.busy_by_op_s.empty()) workers.back()["busy_by_op_s"] = w.busy_by_op_s;
    if (!w.steady_busy_by_op_s.empty())
      workers.back()["steady_busy_by_op_s"] = w.steady_busy_by_op_s;
    if (w.kept_core_share >= 0) workers.back()["kept_core_share"] = w.kept_core_share;
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceReport& d : r.devices) {
    nlohmann::json device = {{"device", d.device},
                             {"worker", d.worker},
                             {"capacity_bytes", d.capacity_bytes},
                             {"peak_memory_bytes", d.peak_memory_bytes},
                             {"peak_time_s", d.peak_time_s},
                             {"over_capacity", d.over_capacity},
                             {"at_peak", MemoryCategoriesToJson(d.at_peak)},
                             {"category_peaks", MemoryCategoriesToJson(d.category_peaks)}};
    if (d.cuda_allocator)
      device["cuda_allocator"] = {{"allocated_bytes", d.cuda_allocator->allocated_bytes},
                                  {"allocated_peak_bytes", d.cuda_allocator->allocated_peak_bytes},
                                  {"reserved_bytes", d.cuda_allocator->reserved_bytes},
                                  {"reserved_peak_bytes", d.cuda_allocator->reserved_peak_bytes}};
    if (timelines) device["timeline"] = TimelineToJson(d.timeline);
    devices.push_back(device);
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const StageSummary& s : r.stages)
    stages.push_back({{"stage", s.stage},
                      {"staleness", {{"min", s.staleness_min},
                                     {"mean", s.staleness_mean},
                                     {"max", s.staleness_max}}},
                      {"max_weight_versions", s.max_weight_versions},
                      {"max_in_flight_activations", s.max_in_flight_activations},
                      {"updates", s.updates}});
  nlohmann::json communication = nlohmann::json::array();
  for (const CommunicationLevel& c : r.communication)
    communication.push_back({{"level", c.level},
                             {"name", c.name},
                             {"link", c.link},
                             {"pipeline_bytes", c.pipeline_bytes},
                             {"allreduce_bytes", c.allreduce_bytes},
                             {"tensor_parallel_bytes", c.tensor_parallel_bytes},
                             {"bytes", c.Bytes()},
                             {"messages", c.messages}});
  // The batch stated three ways (README, "Batch sizes"): samples per micro-batch, micro-batches
  // per update on each replica of the input stage, and samples per update over all replicas.
  int input_replicas = 0;
  for (const WorkerReport& w : r.workers) input_replicas += w.stage == 0;
  nlohmann::json out = {{"schema_version", kSchemaVersion},
          {"source", r.source},
          {"scenario", r.scenario},
          {"schedule", r.schedule},
          {"recompute", r.recompute},
          {"p2p", r.p2p},
          {"data_loading", r.data_loading},
          {"load_s_per_microbatch", r.load_s_per_microbatch},
          {"planner", r.planner},
          {"network_model", r.network_model},
          {"pipeline_depth", r.pipeline_depth},
          {"worker_count", r.worker_count},
          {"microbatch_size", r.microbatch_size},
          {"microbatches_per_iteration", r.microbatches_per_iteration},
          {"microbatches_per_replica",
           input_replicas > 0 ? r.microbatches_per_iteration / input_replicas : 0},
          {"global_batch_size", std::llround(r.samples_per_iteration)},
          {"iterations", r.iterations},
          {"samples_per_iteration", r.samples_per_iteration},
          {"samples_per_s", r.samples_per_s},
          {"iteration_s", r.iteration_s},
          {"measurement", r.measurement},
          {"makespan_s", r.makespan_s},
          {"bubble_fraction", r.bubble_fraction},
          {"exposed_communication_s", r.exposed_communication_s},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"over_capacity", r.over_capacity},
          {"workers", workers},
          {"devices", devices},
          {"stages", stages},
          {"communication", communication},
          {"warnings", r.warnings},
          {"details", r.details}};
  if (r.tflops_per_gpu > 0) {  // a workload that states its model FLOPs
    out["tflops_per_gpu"] = r.tflops_per_gpu;
    out["mfu"] = r.mfu;
  }
  return out;
}

namespace {

WorkerReport WorkerFromJson(JsonReader w) {
  WorkerReport x;
  x.worker = Int(w, "worker");
  x.device = Int(w, "device");
  x.stage = Int(w, "stage");
  x.replica = Int(w, "replica");
  x.busy_s = w.NonNegativeNumber("busy_s");
  x.idle_s = w.NonNegativeNumber("idle_s");
  x.bubble_fraction = w.NonNegativeNumber("bubble_fraction");
  x.exposed_communication_s = w.NonNegativeNumber("exposed_communication_s");
  // An object of seconds by op kind (busy_by_op_s, steady_busy_by_op_s).
  const auto by_op_kind = [&w](const std::string& key, std::map<std::string, double>& out) {
    std::optional<JsonReader> by_op = w.OptionalMember(key);
    if (!by_op) return;
    if (!by_op->value().is_object())
      by_op->Fail("expected an object of seconds by op kind, got " + DescribeJson(by_op->value()));
    for (const auto& [kind, seconds] : by_op->value().items()) {
      if (!ParseOpKind(kind))
        by_op->FailAt(kind, "expected an op kind (forward, backward, update, ...), got \"" +
                                kind + "\"");
      out[kind] = by_op->NonNegativeNumber(kind);
    }
    by_op->Finish();
  };
  by_op_kind("busy_by_op_s", x.busy_by_op_s);
  by_op_kind("steady_busy_by_op_s", x.steady_busy_by_op_s);
  if (w.Has("kept_core_share")) {
    x.kept_core_share = w.NonNegativeNumber("kept_core_share");
    if (x.kept_core_share > 1) w.FailAt("kept_core_share", "expected a share in [0, 1]");
  }
  w.Finish();
  return x;
}

DeviceReport DeviceFromJson(JsonReader d) {
  DeviceReport x;
  x.device = Int(d, "device");
  x.worker = static_cast<int>(d.Number("worker"));
  x.capacity_bytes = d.NonNegativeNumber("capacity_bytes");
  x.peak_memory_bytes = d.NonNegativeNumber("peak_memory_bytes");
  x.peak_time_s = d.OptionalNonNegativeNumber("peak_time_s", 0);
  x.over_capacity = d.OptionalBool("over_capacity", false);
  x.at_peak = MemoryCategoriesFromJson(d.Member("at_peak"));
  x.category_peaks = MemoryCategoriesFromJson(d.Member("category_peaks"));
  if (auto t = d.OptionalMember("timeline")) x.timeline = TimelineFromJson(*t);
  if (auto a = d.OptionalMember("cuda_allocator")) {
    AllocatorView v;
    v.allocated_bytes = a->NonNegativeNumber("allocated_bytes");
    v.allocated_peak_bytes = a->NonNegativeNumber("allocated_peak_bytes");
    v.reserved_bytes = a->NonNegativeNumber("reserved_bytes");
    v.reserved_peak_bytes = a->NonNegativeNumber("reserved_peak_bytes");
    a->Finish();
    x.cuda_allocator = v;
  }
  d.Finish();
  return x;
}

StageSummary StageFromJson(JsonReader s) {
  StageSummary x;
  x.stage = Int(s, "stage");
  JsonReader staleness = s.Member("staleness");
  x.staleness_min = staleness.NonNegativeNumber("min");
  x.staleness_mean = staleness.NonNegativeNumber("mean");
  x.staleness_max = staleness.NonNegativeNumber("max");
  staleness.Finish();
  x.max_weight_versions = Int(s, "max_weight_versions");
  x.max_in_flight_activations = Int(s, "max_in_flight_activations");
  x.updates = Int(s, "updates");
  s.Finish();
  return x;
}

CommunicationLevel CommunicationFromJson(JsonReader c) {
  CommunicationLevel x;
  x.level = Int(c, "level");
  x.name = Text(c, "name");
  x.link = Text(c, "link");
  x.pipeline_bytes = c.NonNegativeNumber("pipeline_bytes");
  x.allreduce_bytes = c.NonNegativeNumber("allreduce_bytes");
  x.tensor_parallel_bytes = c.OptionalNonNegativeNumber("tensor_parallel_bytes", 0);
  c.Accept("bytes");
  x.messages = static_cast<long long>(c.OptionalTally("messages", 0));
  c.Finish();
  return x;
}

}  // namespace

Report ReportFromJson(const nlohmann::json& doc, const std::string& file) {
  JsonReader root(doc, file);
  CheckSchemaVersion(root);
  // Derived from the fields read below (ReportToJson).
  root.Accept("microbatches_per_replica");
  root.Accept("global_batch_size");
  Report r;
  r.source = root.Choice("source", {"simulator", "executor"});
  r.scenario = Text(root, "scenario");
  r.schedule = Text(root, "schedule");
  r.recompute = root.OptionalChoice("recompute", {"", "in_backward", "early"}, "");
  r.p2p = root.OptionalChoice("p2p", {"eager", "blocking"}, "eager");
  r.data_loading = root.OptionalChoice("data_loading", {"", "overlapped", "serial"}, "");
  r.load_s_per_microbatch = root.OptionalNonNegativeNumber("load_s_per_microbatch", 0);
  r.planner = Text(root, "planner");
  r.network_model = Text(root, "network_model");
  r.pipeline_depth = Int(root, "pipeline_depth");
  r.worker_count = Int(root, "worker_count");
  r.microbatch_size = Int(root, "microbatch_size");
  r.microbatches_per_iteration = Int(root, "microbatches_per_iteration");
  r.iterations = Int(root, "iterations");
  r.samples_per_iteration = root.OptionalNonNegativeNumber("samples_per_iteration", 0);
  r.samples_per_s = root.NonNegativeNumber("samples_per_s");
  r.tflops_per_gpu = root.OptionalNonNegativeNumber("tflops_per_gpu", 0);
  r.mfu = root.OptionalNonNegativeNumber("mfu", 0);
  r.iteration_s = root.NonNegativeNumber("iteration_s");
  r.measurement = Text(root, "measurement");
  r.makespan_s = root.OptionalNonNegativeNumber("makespan_s", 0);
  r.bubble_fraction = root.OptionalNonNegativeNumber("bubble_fraction", 0);
  r.exposed_communication_s = root.OptionalNonNegativeNumber("exposed_communication_s", 0);
  r.peak_memory_bytes = root.OptionalNonNegativeNumber("peak_memory_bytes", 0);
  r.over_capacity = root.OptionalBool("over_capacity", false);
  for (JsonReader w : root.Array("workers")) r.workers.push_back(WorkerFromJson(w));
  for (JsonReader d : root.Array("devices")) r.devices.push_back(DeviceFromJson(d));
  for (JsonReader s : root.Array("stages")) r.stages.push_back(StageFromJson(s));
  for (JsonReader c : root.Array("communication"))
    r.communication.push_back(CommunicationFromJson(c));
  if (root.Has("warnings"))
    for (const JsonReader& w : root.Array("warnings")) r.warnings.push_back(w.AsString());
  if (auto details = root.OptionalMember("details")) r.details = details->value();
  root.Finish();
  return r;
}

}  // namespace pipetwin
