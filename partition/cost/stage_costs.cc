#include "partition/cost/stage_costs.h"

#include <algorithm>

namespace pipetwin {

double TimeScale(const Workload& w, double samples, double speed) {
  return samples / static_cast<double>(w.reference.batch_size) / speed;
}

std::vector<double> CutBytesPerSample(const Workload& w, const std::vector<int>& order) {
  const int n = w.LayerCount();
  std::vector<int> position(n);
  for (int p = 0; p < n; ++p) position[order.empty() ? p : order[p]] = p;
  std::vector<double> change(n + 1, 0);
  const auto successors = w.Successors();
  for (int i = 0; i < n; ++i) {
    int last = position[i];  // a layer's output crosses every cut up to its last consumer
    for (int s : successors[i]) last = std::max(last, position[s]);
    change[position[i]] += w.layers[i].activation_bytes;
    change[last] -= w.layers[i].activation_bytes;
  }
  std::vector<double> cut(n, 0);
  double crossing = 0;
  // Rounding never makes a cut negative.
  for (int p = 0; p + 1 < n; ++p) cut[p] = std::max(0.0, crossing += change[p]);
  for (double& x : cut) x /= w.reference.batch_size;
  return cut;
}

std::vector<StageCost> PlanStageCosts(const Workload& w, const Plan& plan, int b, double speed,
                                      double optimizer_bytes_per_parameter) {
  const double per_ms = TimeScale(w, b, speed);
  // A pass over the parameters (the optimizer step, its copy of the weights, the gradient's
  // addition into the sums) costs the same whatever the samples: only the device's speed scales
  // it.
  const double per_step_ms = 1 / speed;
  const double per_sample = b / static_cast<double>(w.reference.batch_size);
  const std::vector<double> cut = CutBytesPerSample(w, plan.layer_order);
  std::vector<StageCost> out;
  for (const StagePlan& s : plan.stages) {
    StageCost cost;
    cost.first_layer = s.first_layer;
    cost.last_layer = s.last_layer;
    const double share = BackwardInputShare(s.first_layer);
    cost.weight_stash_bytes = 0.0;  // until a layer without one
    for (int p = s.last_layer; p >= s.first_layer; --p) {
      const int i = plan.LayerAt(p);
      const Layer& layer = w.layers[i];
      const double parameters = w.LayerParameters(i);
      const bool split = layer.backward_input_ms.has_value();
      const double weight_part =
          split ? *layer.backward_weight_ms : (1 - share) * layer.backward_ms;
      // The gradient's addition, in the pass that makes the weight gradients.
      const double add = std::min(layer.gradient_add_ms.value_or(0), weight_part);
      const double backward_ms = (layer.backward_ms - add) * per_ms + add * per_step_ms;
      cost.forward_ms += layer.forward_ms * per_ms;
      cost.backward_ms += backward_ms;
      cost.backward_input_ms += (split ? *layer.backward_input_ms : share * layer.backward_ms) * per_ms;
      cost.backward_weight_ms += (weight_part - add) * per_ms + add * per_step_ms;
      cost.gradient_add_ms += add * per_step_ms;
      const double update = layer.update_ms.value_or(0);
      cost.update_ms += update * per_step_ms;
      cost.update_copy_ms += std::min(layer.update_copy_ms.value_or(0), update) * per_step_ms;
      cost.update_sharded_ms += layer.update_sharded_ms.value_or(update) * per_step_ms;
      if (layer.collectives) {
        GroupCollectives c = *layer.collectives;
        if (!split) c.SplitBackward(share);
        for (const GroupCollectives::Field& f : GroupCollectives::Fields())
          cost.collectives.*f.member += c.*f.member * (f.time ? per_ms : per_sample);
      }
      cost.stash_bytes += w.StashBytes(i) * per_sample;
      if (cost.weight_stash_bytes && layer.weight_stash_bytes)
        *cost.weight_stash_bytes += *layer.weight_stash_bytes * per_sample;
      else
        cost.weight_stash_bytes.reset();
      cost.parameters += parameters;
      cost.layer_backward_ms.push_back(backward_ms);
      cost.layer_gradient_bytes.push_back(parameters * w.GradientDtypeBytes());
    }
    cost.weight_bytes = cost.parameters * w.parameter_dtype_bytes;
    cost.gradient_bytes = cost.parameters * w.GradientDtypeBytes();
    cost.optimizer_bytes = cost.parameters * optimizer_bytes_per_parameter;
    cost.input_bytes = s.first_layer > 0 ? cut[s.first_layer - 1] * b : 0;
    cost.stash_holds_input = w.stash_holds_input;
    std::vector<RecomputedLayer> recomputed;
    for (int p = s.first_layer; p <= s.last_layer; ++p) {
      const Layer& layer = w.layers[plan.LayerAt(p)];
      RecomputedLayer r;
      r.input_bytes = p == s.first_layer ? cost.input_bytes : cut[p - 1] * b;
      r.stash_bytes = w.StashBytes(plan.LayerAt(p)) * per_sample;
      r.forward_ms = layer.forward_ms * per_ms;
      if (layer.checkpoint_bytes) r.checkpoint_bytes = *layer.checkpoint_bytes * per_sample;
      r.recomputed = layer.recomputed;
      recomputed.push_back(r);
      if (layer.recomputed && layer.collectives) {
        GroupCollectives& c = cost.recompute_collectives;
        c.forward_exposed_ms += layer.collectives->forward_exposed_ms * per_ms;
        c.forward_overlapped_ms += layer.collectives->forward_overlapped_ms * per_ms;
        c.forward_bytes += layer.collectives->forward_bytes * per_sample;
      }
    }
    cost.recompute = StageRecomputeFootprint(recomputed, w.stash_holds_input);
    cost.output_bytes = cut[s.last_layer] * b;
    out.push_back(cost);
  }
  return out;
}

double BackwardInputShare(int stage_first_layer) { return stage_first_layer == 0 ? 0.0 : 0.5; }

double UpdateMs(const StageCost& stage, int shards) {
  return stage.update_ms - stage.update_sharded_ms * (1 - 1.0 / std::max(1, shards));
}

}  // namespace pipetwin
