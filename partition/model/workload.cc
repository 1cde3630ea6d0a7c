#include "partition/model/workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <tuple>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/limits.h"
#include "partition/util/spread.h"
#include "partition/util/json_writer.h"

namespace pipetwin {

bool Workload::IsChain() const {
  for (size_t i = 0; i < layers.size(); ++i) {
    if (i == 0 ? !layers[i].inputs.empty()
               : layers[i].inputs.size() != 1 || layers[i].inputs[0] != static_cast<int>(i) - 1)
      return false;
  }
  return true;
}

double Workload::TotalForwardMs() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.forward_ms;
  return sum;
}

double Workload::TotalBackwardMs() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.backward_ms;
  return sum;
}

double Workload::TotalParameterBytes() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.parameter_bytes;
  return sum;
}

double Workload::TotalParameters() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.parameters;
  return sum;
}

double Workload::TotalActivationBytes() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.activation_bytes;
  return sum;
}

double Workload::StashBytes(int i) const {
  return layers[i].stash_bytes ? *layers[i].stash_bytes : layers[i].activation_bytes;
}

double Workload::LayerParameters(int i) const {
  const Layer& l = layers[i];
  return l.parameters > 0 ? l.parameters : l.parameter_bytes / parameter_dtype_bytes;
}

std::vector<std::vector<int>> Workload::Successors() const {
  std::vector<std::vector<int>> out(layers.size());
  for (size_t i = 0; i < layers.size(); ++i)
    for (int j : layers[i].inputs) out[j].push_back(static_cast<int>(i));
  return out;
}

namespace {

void CheckNumber(double v, const std::string& file, const std::string& where, bool positive) {
  if (!std::isfinite(v) || v < 0 || (positive && v == 0) || v > kMaxMagnitude) {
    throw InputError(file, where,
                     std::string("expected a number ") + (positive ? "> 0" : ">= 0") +
                         (v > kMaxMagnitude ? " of at most 1e18 in size (pipetwin's limit for "
                                              "any quantity)" : "") +
                         ", got " + DescribeJson(nlohmann::json(v)));
  }
}

// Finds one cycle among the layers that Kahn's algorithm could not place, for the message.
std::string DescribeCycle(const Workload& w, const std::vector<int>& unplaced_flags) {
  // Walk inputs from an unplaced layer; every unplaced layer has an unplaced input.
  int start = -1;
  for (size_t i = 0; i < unplaced_flags.size(); ++i)
    if (unplaced_flags[i]) { start = static_cast<int>(i); break; }
  std::vector<int> seen_at(w.layers.size(), -1);
  std::vector<int> path;
  int cur = start;
  while (seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    int next = -1;
    for (int in : w.layers[cur].inputs)
      if (unplaced_flags[in]) { next = in; break; }
    cur = next;
  }
  // `path` follows inputs (against the data flow); print the cycle in the data's direction.
  std::string out = w.layers[cur].id;
  for (size_t k = path.size(); k-- > static_cast<size_t>(seen_at[cur]);)
    out += " -> " + w.layers[path[k]].id;
  return out;
}

// `pipetwin workload ... --json` writes totals beside the layers; when a file carries them they
// must agree with its layers (a hand-edited layer with stale totals is an inconsistency).
void CheckDeclaredTotals(JsonReader& root, const Workload& w) {
  const std::pair<const char*, double> totals[] = {
      {"parameter_bytes", w.TotalParameterBytes()},
      {"parameters", w.TotalParameters()},
      {"forward_ms", w.TotalForwardMs()},
      {"backward_ms", w.TotalBackwardMs()},
      {"layer_count", static_cast<double>(w.layers.size())}};
  for (const auto& [key, actual] : totals) {
    if (!root.Has(key)) continue;
    double declared = root.NonNegativeNumber(key);
    if (std::fabs(declared - actual) > 1e-6 * std::max(1.0, std::fabs(actual)))
      root.FailAt(key, "expected the sum over the layers (" + DescribeJson(actual) + "), got " +
                           DescribeJson(declared));
  }
  root.Accept("is_chain");
}

}  // namespace

void ValidateAndSortWorkload(Workload& w, const std::string& file, const std::string& path) {
  const std::string prefix = path.empty() ? "" : path + ".";
  if (w.layers.empty())
    throw InputError(file, prefix + "layers", "expected at least one layer, got none");
  if (w.reference.batch_size < 1)
    throw InputError(file, prefix + "reference.batch_size", "expected an integer >= 1");
  CheckNumber(w.parameter_dtype_bytes, file, prefix + "parameter_dtype_bytes", true);
  const int n = w.LayerCount();
  std::map<std::string, int> seen;
  for (int i = 0; i < n; ++i) {
    const Layer& l = w.layers[i];
    const std::string at = prefix + "layers[" + std::to_string(i) + "]";
    if (l.id.empty()) throw InputError(file, at + ".id", "expected a non-empty string");
    if (!seen.emplace(l.id, i).second)
      throw InputError(file, at + ".id", "duplicate layer id \"" + l.id + "\"");
    CheckNumber(l.forward_ms, file, at + ".forward_ms", false);
    CheckNumber(l.backward_ms, file, at + ".backward_ms", false);
    CheckNumber(l.activation_bytes, file, at + ".activation_bytes", false);
    CheckNumber(l.parameter_bytes, file, at + ".parameter_bytes", false);
    CheckNumber(l.parameters, file, at + ".parameters", false);
    if (l.forward_flops) CheckNumber(*l.forward_flops, file, at + ".forward_flops", false);
    if (l.stash_bytes) CheckNumber(*l.stash_bytes, file, at + ".stash_bytes", false);
    if (l.weight_stash_bytes)
      CheckNumber(*l.weight_stash_bytes, file, at + ".weight_stash_bytes", false);
    if (l.update_ms) CheckNumber(*l.update_ms, file, at + ".update_ms", false);
    // A part of a figure: a number, at most the figure it is part of.
    const auto part = [&](const std::optional<double>& value, const char* key, double whole,
                          const char* whole_key) {
      if (!value) return;
      CheckNumber(*value, file, at + "." + key, false);
      if (*value > whole * (1 + 1e-9))
        throw InputError(file, at + "." + key,
                         std::string("expected at most the layer's ") + whole_key + " (" +
                             DescribeJson(whole) + "), got " + DescribeJson(*value));
    };
    part(l.update_sharded_ms, "update_sharded_ms", l.update_ms.value_or(0), "update_ms");
    part(l.update_copy_ms, "update_copy_ms", l.update_ms.value_or(0), "update_ms");
    part(l.gradient_add_ms, "gradient_add_ms", l.backward_ms, "backward_ms");
    if (l.checkpoint_bytes) {
      CheckNumber(*l.checkpoint_bytes, file, at + ".checkpoint_bytes", false);
      if (!l.recomputed)
        throw InputError(file, at + ".checkpoint_bytes",
                         "expected no checkpoint on a layer with \"recomputed\": false");
    }
    for (const auto& [spread, key] : {std::pair{&l.forward_ms_spread, ".forward_ms_spread"},
                                      std::pair{&l.backward_ms_spread, ".backward_ms_spread"},
                                      std::pair{&l.update_ms_spread, ".update_ms_spread"}})
      if (*spread) CheckNumber(**spread, file, at + key, false);
    if (l.backward_input_ms.has_value() != l.backward_weight_ms.has_value())
      throw InputError(file, at + (l.backward_input_ms ? ".backward_weight_ms" : ".backward_input_ms"),
                       "expected a number beside " +
                           std::string(l.backward_input_ms ? "backward_input_ms" : "backward_weight_ms") +
                           " (both or neither)");
    if (l.backward_input_ms) {
      CheckNumber(*l.backward_input_ms, file, at + ".backward_input_ms", false);
      CheckNumber(*l.backward_weight_ms, file, at + ".backward_weight_ms", false);
    }
    if (l.collectives) {
      const GroupCollectives& c = *l.collectives;
      const std::string cat = at + ".collectives.";
      for (const GroupCollectives::Field& f : GroupCollectives::Fields()) {
        CheckNumber(c.*f.member, file, cat + f.key, false);
        if (f.split && !l.backward_input_ms && c.*f.member > 0)
          throw InputError(file, cat + f.key,
                           "expected the I/W split of the collectives only with the layer's "
                           "backward_input_ms and backward_weight_ms");
      }
      if (l.backward_input_ms && c.input_exposed_ms > *l.backward_input_ms * (1 + 1e-9))
        throw InputError(file, cat + "input_exposed_ms",
                         "expected at most the layer's backward_input_ms (" +
                             DescribeJson(*l.backward_input_ms) + "), got " +
                             DescribeJson(c.input_exposed_ms));
      if (l.backward_weight_ms && c.weight_exposed_ms > *l.backward_weight_ms * (1 + 1e-9))
        throw InputError(file, cat + "weight_exposed_ms",
                         "expected at most the layer's backward_weight_ms (" +
                             DescribeJson(*l.backward_weight_ms) + "), got " +
                             DescribeJson(c.weight_exposed_ms));
      if (c.forward_exposed_ms > l.forward_ms * (1 + 1e-9))
        throw InputError(file, cat + "forward_exposed_ms",
                         "expected at most the layer's forward_ms (" + DescribeJson(l.forward_ms) +
                             "), got " + DescribeJson(c.forward_exposed_ms));
      if (c.backward_exposed_ms > l.backward_ms * (1 + 1e-9))
        throw InputError(file, cat + "backward_exposed_ms",
                         "expected at most the layer's backward_ms (" +
                             DescribeJson(l.backward_ms) + "), got " +
                             DescribeJson(c.backward_exposed_ms));
    }
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      if (l.inputs[k] < 0 || l.inputs[k] >= n)
        throw InputError(file, at + ".inputs[" + std::to_string(k) + "]", "dangling edge");
      if (l.inputs[k] == i)
        throw InputError(file, at + ".inputs[" + std::to_string(k) + "]",
                         "layer \"" + l.id + "\" feeds itself (a cycle)");
    }
  }
  // Kahn's algorithm, taking ready layers in their listed order so chains keep their order.
  std::vector<int> missing_inputs(n);
  std::vector<std::vector<int>> successors(n);
  for (int i = 0; i < n; ++i) {
    missing_inputs[i] = static_cast<int>(w.layers[i].inputs.size());
    for (int in : w.layers[i].inputs) successors[in].push_back(i);
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (missing_inputs[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int s : successors[i])
      if (--missing_inputs[s] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) != n) {
    std::vector<int> unplaced(n, 1);
    for (int i : order) unplaced[i] = 0;
    throw InputError(file, prefix + "layers",
                     "the layer graph has a cycle: " + DescribeCycle(w, unplaced));
  }
  std::vector<int> new_index(n);
  for (int k = 0; k < n; ++k) new_index[order[k]] = k;
  std::vector<Layer> sorted;
  sorted.reserve(n);
  for (int k = 0; k < n; ++k) {
    Layer l = std::move(w.layers[order[k]]);
    for (int& in : l.inputs) in = new_index[in];
    sorted.push_back(std::move(l));
  }
  w.layers = std::move(sorted);
}

const std::vector<GroupCollectives::Field>& GroupCollectives::Fields() {
  using G = GroupCollectives;
  static const std::vector<Field> fields = {
      {"forward_exposed_ms", &G::forward_exposed_ms, true, false},
      {"forward_overlapped_ms", &G::forward_overlapped_ms, true, false},
      {"forward_bytes", &G::forward_bytes, false, false},
      {"backward_exposed_ms", &G::backward_exposed_ms, true, false},
      {"backward_overlapped_ms", &G::backward_overlapped_ms, true, false},
      {"backward_bytes", &G::backward_bytes, false, false},
      {"input_exposed_ms", &G::input_exposed_ms, true, true},
      {"input_overlapped_ms", &G::input_overlapped_ms, true, true},
      {"input_bytes", &G::input_bytes, false, true},
      {"weight_exposed_ms", &G::weight_exposed_ms, true, true},
      {"weight_overlapped_ms", &G::weight_overlapped_ms, true, true},
      {"weight_bytes", &G::weight_bytes, false, true}};
  return fields;
}

void GroupCollectives::SplitBackward(double input_share) {
  input_exposed_ms = input_share * backward_exposed_ms;
  input_overlapped_ms = input_share * backward_overlapped_ms;
  input_bytes = input_share * backward_bytes;
  weight_exposed_ms = (1 - input_share) * backward_exposed_ms;
  weight_overlapped_ms = (1 - input_share) * backward_overlapped_ms;
  weight_bytes = (1 - input_share) * backward_bytes;
}

bool Workload::HasSpread() const {
  for (const Layer& l : layers)
    if (l.forward_ms_spread || l.backward_ms_spread || l.update_ms_spread) return true;
  return false;
}

Workload Workload::AtSpreadEdge(int side) const {
  Workload w = *this;
  const auto edge = [side](double& ms, const std::optional<double>& spread) {
    if (spread) ms = std::max(0.0, ms + side * *spread);
  };
  for (Layer& l : w.layers) {
    edge(l.forward_ms, l.forward_ms_spread);
    const double backward = l.backward_ms;
    edge(l.backward_ms, l.backward_ms_spread);
    if (l.backward_input_ms && backward > 0) {  // the split moves with the backward it splits
      *l.backward_input_ms *= l.backward_ms / backward;
      *l.backward_weight_ms *= l.backward_ms / backward;
    }
    if (l.gradient_add_ms && backward > 0) *l.gradient_add_ms *= l.backward_ms / backward;
    if (l.update_ms) {
      const double update = *l.update_ms;
      edge(*l.update_ms, l.update_ms_spread);
      if (l.update_copy_ms && update > 0) *l.update_copy_ms *= *l.update_ms / update;
    }
  }
  w.name += side > 0 ? " (slow end of its spread)" : " (fast end of its spread)";
  return w;
}

Workload MeanOfProfiles(const std::vector<Workload>& profiles,
                        const std::vector<std::string>& files) {
  if (profiles.empty()) throw InputError("no profiles to average");
  Workload mean = profiles.front();
  const size_t k = profiles.size();
  for (size_t p = 1; p < k; ++p) {
    const Workload& w = profiles[p];
    if (w.layers.size() != mean.layers.size())
      throw InputError(files.at(p), "layers", "expected the " + std::to_string(mean.layers.size()) +
                                                  " layers of " + files.front() + ", got " +
                                                  std::to_string(w.layers.size()));
    for (size_t i = 0; i < w.layers.size(); ++i)
      if (w.layers[i].id != mean.layers[i].id)
        throw InputError(files.at(p), "layers[" + std::to_string(i) + "].id",
                         "expected \"" + mean.layers[i].id + "\" as in " + files.front() +
                             ", got \"" + w.layers[i].id + "\"");
  }
  if (k == 1) return mean;
  const auto combine = [&](auto time, auto spread) {
    std::vector<double> means;
    double widest = 0;
    for (const Workload& w : profiles) {
      means.push_back(time(w));
      widest = std::max(widest, spread(w));
    }
    const RoundEstimate e = EstimateFromRounds(means);
    return std::pair{e.mean, std::max(e.half_width, widest / std::sqrt(static_cast<double>(k)))};
  };
  for (size_t i = 0; i < mean.layers.size(); ++i) {
    Layer& l = mean.layers[i];
    std::tie(l.forward_ms, l.forward_ms_spread) =
        combine([i](const Workload& w) { return w.layers[i].forward_ms; },
                [i](const Workload& w) { return w.layers[i].forward_ms_spread.value_or(0); });
    std::tie(l.backward_ms, l.backward_ms_spread) =
        combine([i](const Workload& w) { return w.layers[i].backward_ms; },
                [i](const Workload& w) { return w.layers[i].backward_ms_spread.value_or(0); });
    // A part of a figure: the mean over the profiles that measured it, at most the figure.
    const auto part = [&](std::optional<double> Layer::*member, double whole) {
      double sum = 0;
      int measured = 0;
      for (const Workload& w : profiles)
        if (w.layers[i].*member) sum += *(w.layers[i].*member), ++measured;
      if (measured > 0) l.*member = std::min(whole, sum / measured);
    };
    part(&Layer::gradient_add_ms, l.backward_ms);
    if (l.update_ms)
      std::tie(l.update_ms, l.update_ms_spread) =
          combine([i](const Workload& w) { return w.layers[i].update_ms.value_or(0); },
                  [i](const Workload& w) { return w.layers[i].update_ms_spread.value_or(0); });
    part(&Layer::update_copy_ms, l.update_ms.value_or(0));
  }
  // The own-core shares: the mean of the profiles that measured each.
  const auto mean_share = [&](double OwnCoreShare::*figure) {
    double sum = 0;
    int measured = 0;
    for (const Workload& w : profiles)
      if (w.own_core.*figure > 0) sum += w.own_core.*figure, ++measured;
    return measured > 0 ? sum / measured : 0;
  };
  mean.own_core = {mean_share(&OwnCoreShare::forward), mean_share(&OwnCoreShare::backward),
                   mean_share(&OwnCoreShare::update)};
  if (mean.stability) {
    ProfileStability q;
    std::vector<double> steps;
    q.settled = true;
    int speeds = 0;
    for (size_t p = 0; p < k; ++p) {
      if (!profiles[p].stability) continue;
      const ProfileStability& s = *profiles[p].stability;
      if (s.one_core_gflops > 0) q.one_core_gflops += s.one_core_gflops, ++speeds;
      q.rounds += s.rounds;
      q.seconds += s.seconds;
      steps.push_back(s.step_ms);
      q.lowest_round_ms = p == 0 ? s.lowest_round_ms : std::min(q.lowest_round_ms, s.lowest_round_ms);
      q.highest_round_ms = std::max(q.highest_round_ms, s.highest_round_ms);
      q.target_spread = s.target_spread;
      q.settled = q.settled && s.settled;
      for (const std::string& d : s.disturbances)
        q.disturbances.push_back("profile " + std::to_string(p + 1) + " of " + std::to_string(k) +
                                 ": " + d);
    }
    if (speeds > 0) q.one_core_gflops /= speeds;
    const RoundEstimate e = EstimateFromRounds(steps);
    q.step_ms = e.mean;
    q.step_spread_ms = e.half_width;
    mean.stability = q;
  }
  mean.name += " (mean of " + std::to_string(k) + " profiles)";
  return mean;
}

nlohmann::json WorkloadToJson(const Workload& w) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const Layer& l = w.layers[i];
    nlohmann::json j = {{"id", l.id},
                        {"forward_ms", l.forward_ms},
                        {"backward_ms", l.backward_ms},
                        {"activation_bytes", l.activation_bytes},
                        {"parameter_bytes", l.parameter_bytes},
                        {"parameters", l.parameters}};
    if (!l.description.empty()) j["description"] = l.description;
    if (!l.output_bytes.empty()) j["output_bytes"] = l.output_bytes;
    if (l.forward_flops) j["forward_flops"] = *l.forward_flops;
    if (l.stash_bytes) j["stash_bytes"] = *l.stash_bytes;
    if (l.weight_stash_bytes) j["weight_stash_bytes"] = *l.weight_stash_bytes;
    if (l.checkpoint_bytes) j["checkpoint_bytes"] = *l.checkpoint_bytes;
    if (!l.recomputed) j["recomputed"] = false;
    if (l.update_ms) j["update_ms"] = *l.update_ms;
    if (l.update_sharded_ms) j["update_sharded_ms"] = *l.update_sharded_ms;
    if (l.gradient_add_ms) j["gradient_add_ms"] = *l.gradient_add_ms;
    if (l.update_copy_ms) j["update_copy_ms"] = *l.update_copy_ms;
    if (l.forward_ms_spread) j["forward_ms_spread"] = *l.forward_ms_spread;
    if (l.backward_ms_spread) j["backward_ms_spread"] = *l.backward_ms_spread;
    if (l.update_ms_spread) j["update_ms_spread"] = *l.update_ms_spread;
    if (l.backward_input_ms) {
      j["backward_input_ms"] = *l.backward_input_ms;
      j["backward_weight_ms"] = *l.backward_weight_ms;
    }
    if (l.collectives) {
      nlohmann::json c = nlohmann::json::object();
      for (const GroupCollectives::Field& f : GroupCollectives::Fields())
        if (!f.split || l.backward_input_ms) c[f.key] = (*l.collectives).*f.member;
      j["collectives"] = c;
    }
    nlohmann::json inputs = nlohmann::json::array();
    for (int in : l.inputs) inputs.push_back(w.layers[in].id);
    j["inputs"] = inputs;
    layers.push_back(j);
  }
  nlohmann::json out = {{"name", w.name},
          {"reference",
           {{"batch_size", w.reference.batch_size},
            {"device", w.reference.device},
            {"source", w.reference.source}}},
          {"parameter_dtype_bytes", w.parameter_dtype_bytes},
          {"data_loading_ms", w.data_loading_ms},
          {"layers", layers}};
  if (w.gradient_dtype_bytes > 0) out["gradient_dtype_bytes"] = w.gradient_dtype_bytes;
  if (w.tensor_parallel > 1) out["tensor_parallel"] = w.tensor_parallel;
  if (w.model_flops_per_sample > 0) out["model_flops_per_sample"] = w.model_flops_per_sample;
  if (w.stash_holds_input) out["stash_holds_input"] = true;
  if (w.own_core.Measured())
    out["own_core"] = {{"forward", w.own_core.forward},
                       {"backward", w.own_core.backward},
                       {"update", w.own_core.update}};
  if (const auto& q = w.stability)
    out["stability"] = {{"rounds", q->rounds},
                        {"seconds", q->seconds},
                        {"step_ms", q->step_ms},
                        {"step_spread_ms", q->step_spread_ms},
                        {"lowest_round_ms", q->lowest_round_ms},
                        {"highest_round_ms", q->highest_round_ms},
                        {"target_spread", q->target_spread},
                        {"settled", q->settled},
                        {"disturbances", q->disturbances}};
  if (w.stability && w.stability->one_core_gflops > 0)
    out["stability"]["one_core_gflops"] = w.stability->one_core_gflops;
  return out;
}

Workload WorkloadFromJson(const nlohmann::json& doc, const std::string& file,
                          const std::string& path) {
  JsonReader root(doc, file, path);
  Workload w;
  w.name = root.OptionalString("name", "workload");
  if (auto ref = root.OptionalMember("reference")) {
    w.reference.batch_size = ref->Integer("batch_size", 1, kMaxSamples);
    w.reference.device = ref->OptionalString("device", "unknown");
    w.reference.source = ref->OptionalString("source", "manual");
    ref->Finish();
  }
  w.parameter_dtype_bytes = root.OptionalPositiveNumber("parameter_dtype_bytes", 4);
  w.data_loading_ms = root.OptionalNonNegativeNumber("data_loading_ms", 0);
  w.gradient_dtype_bytes = root.OptionalNonNegativeNumber("gradient_dtype_bytes", 0);
  w.model_flops_per_sample = root.OptionalNonNegativeNumber("model_flops_per_sample", 0);
  if (root.Has("tensor_parallel"))
    w.tensor_parallel = root.OptionalInteger("tensor_parallel", 1, kMaxDevices, 1);
  w.stash_holds_input = root.OptionalBool("stash_holds_input", false);
  if (auto o = root.OptionalMember("own_core")) {
    w.own_core.forward = o->OptionalNonNegativeNumber("forward", 0);
    w.own_core.backward = o->OptionalNonNegativeNumber("backward", 0);
    w.own_core.update = o->OptionalNonNegativeNumber("update", 0);
    o->Finish();
  }
  if (auto q = root.OptionalMember("stability")) {
    ProfileStability s;
    s.rounds = q->OptionalInteger("rounds", 0, kMaxCount, 0);
    s.seconds = q->OptionalNonNegativeNumber("seconds", 0);
    s.step_ms = q->OptionalNonNegativeNumber("step_ms", 0);
    s.step_spread_ms = q->OptionalNonNegativeNumber("step_spread_ms", 0);
    s.lowest_round_ms = q->OptionalNonNegativeNumber("lowest_round_ms", 0);
    s.highest_round_ms = q->OptionalNonNegativeNumber("highest_round_ms", 0);
    s.target_spread = q->OptionalNonNegativeNumber("target_spread", 0);
    s.settled = q->OptionalBool("settled", false);
    s.one_core_gflops = q->OptionalNonNegativeNumber("one_core_gflops", 0);
    if (auto d = q->OptionalMember("disturbances"))
      for (const JsonReader& line : d->Elements()) s.disturbances.push_back(line.AsString());
    q->Finish();
    w.stability = s;
  }
  std::vector<JsonReader> entries = root.Array("layers");
  if (entries.empty()) root.FailAt("layers", "expected at least one layer, got none");
  if (entries.size() > static_cast<size_t>(kMaxLayers.max))
    root.FailAt("layers", "expected at most " + std::to_string(kMaxLayers.max) + " layers (" +
                              "pipetwin's limit for " + kMaxLayers.what + "), got " +
                              std::to_string(entries.size()));
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string id = entries[i].OptionalString("id", "layer" + std::to_string(i));
    if (!index_of.emplace(id, static_cast<int>(i)).second)
      entries[i].FailAt("id", "duplicate layer id \"" + id + "\"");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    JsonReader& e = entries[i];
    Layer l;
    l.id = e.OptionalString("id", "layer" + std::to_string(i));
    l.description = e.OptionalString("description", "");
    l.forward_ms = e.NonNegativeNumber("forward_ms");
    l.backward_ms = e.NonNegativeNumber("backward_ms");
    l.activation_bytes = e.NonNegativeNumber("activation_bytes");
    l.parameter_bytes = e.NonNegativeNumber("parameter_bytes");
    l.parameters = e.OptionalNonNegativeNumber("parameters", l.parameter_bytes / w.parameter_dtype_bytes);
    l.forward_flops = e.MaybeNonNegativeNumber("forward_flops");
    l.stash_bytes = e.MaybeNonNegativeNumber("stash_bytes");
    l.weight_stash_bytes = e.MaybeNonNegativeNumber("weight_stash_bytes");
    l.checkpoint_bytes = e.MaybeNonNegativeNumber("checkpoint_bytes");
    l.recomputed = e.OptionalBool("recomputed", true);
    l.update_ms = e.MaybeNonNegativeNumber("update_ms");
    l.update_sharded_ms = e.MaybeNonNegativeNumber("update_sharded_ms");
    l.gradient_add_ms = e.MaybeNonNegativeNumber("gradient_add_ms");
    l.update_copy_ms = e.MaybeNonNegativeNumber("update_copy_ms");
    l.forward_ms_spread = e.MaybeNonNegativeNumber("forward_ms_spread");
    l.backward_ms_spread = e.MaybeNonNegativeNumber("backward_ms_spread");
    l.update_ms_spread = e.MaybeNonNegativeNumber("update_ms_spread");
    l.backward_input_ms = e.MaybeNonNegativeNumber("backward_input_ms");
    l.backward_weight_ms = e.MaybeNonNegativeNumber("backward_weight_ms");
    if (auto c = e.OptionalMember("collectives")) {
      GroupCollectives g;
      for (const GroupCollectives::Field& f : GroupCollectives::Fields())
        g.*f.member = c->OptionalNonNegativeNumber(f.key, 0);
      c->Finish();
      l.collectives = g;
    }
    if (auto outs = e.OptionalMember("output_bytes")) {
      double sum = 0;
      for (const JsonReader& o : outs->Elements()) {
        l.output_bytes.push_back(o.AsNonNegativeNumber());
        sum += l.output_bytes.back();
      }
      if (std::fabs(sum - l.activation_bytes) > 1e-6 * std::max(1.0, l.activation_bytes))
        e.FailAt("output_bytes", "expected outputs summing to activation_bytes (" +
                                     DescribeJson(l.activation_bytes) + "), got " +
                                     DescribeJson(sum));
    }
    if (auto inputs = e.OptionalMember("inputs")) {
      for (const JsonReader& in : inputs->Elements()) {
        std::string name = in.AsString();
        auto it = index_of.find(name);
        if (it == index_of.end())
          in.Fail("dangling edge: no layer has id \"" + name + "\"");
        l.inputs.push_back(it->second);
      }
    } else if (i > 0) {
      l.inputs.push_back(static_cast<int>(i) - 1);  // no "inputs": a chain
    }
    e.Finish();
    w.layers.push_back(std::move(l));
  }
  CheckDeclaredTotals(root, w);
  root.Finish();
  ValidateAndSortWorkload(w, file, path);
  return w;
}

Workload LoadWorkloadFile(const std::string& path) {
  return WorkloadFromJson(ParseJsonFile(path), path);
}

void SaveWorkloadFile(const Workload& workload, const std::string& path) {
  WriteTextFileAtomically(path, JsonText(WorkloadToJson(workload), 2) + "\n");
}

}  // namespace pipetwin
