#include "sim/memory_tracker.h"

#include <algorithm>

namespace pipetwin::sim {

MemoryTracker::MemoryTracker(const SimulationSetup& setup, int worker, bool keep_timeline)
    : setup_(setup), keep_timeline_(keep_timeline) {
  for (int g : setup.schedule.workers[worker].model_stages) {
    const StageCost& c = setup.model_stages[g];
    weight_bytes_ += c.weight_bytes;
    current_.optimizer += c.optimizer_bytes;
    current_.gradients += c.gradient_bytes;
  }
  current_.weights = weight_bytes_;
  Record(0);
}

void MemoryTracker::Apply(const Op& op, double now_s) {
  const std::pair<int, int> id{op.stage, op.microbatch};
  switch (op.kind) {
    case OpKind::kStashActivation: {
      const StageCost& c = setup_.model_stages[op.stage];
      const double bytes = op.input_only ? c.recompute.kept_bytes
                                         : KeptActivationBytes(c.input_bytes, c.stash_bytes, false,
                                                               c.stash_holds_input);
      stashed_[id] = bytes;
      current_.activations += bytes;
      break;
    }
    case OpKind::kRecompute: {
      const double bytes = setup_.model_stages[op.stage].recompute.rebuilt_bytes;
      rebuilt_[id] = bytes;
      current_.recompute += bytes;
      break;
    }
    case OpKind::kBackwardInput: {
      // From here to its W the micro-batch holds what W needs (Layer::weight_stash_bytes):
      // Qi et al.'s M_W in place of M_B. The rebuilt stash when the forward was recomputed, else
      // the stash.
      const std::optional<double>& given = setup_.model_stages[op.stage].weight_stash_bytes;
      if (!given) return;
      const double keep = *given;
      if (auto r = rebuilt_.find(id); r != rebuilt_.end()) {
        current_.recompute += keep - r->second;
        r->second = keep;
      } else if (auto s = stashed_.find(id); s != stashed_.end()) {
        current_.activations += keep - s->second;
        s->second = keep;
      } else {
        return;
      }
      break;
    }
    case OpKind::kReleaseActivation: {
      auto it = stashed_.find(id);
      if (it != stashed_.end()) current_.activations -= it->second, stashed_.erase(it);
      auto r = rebuilt_.find(id);
      if (r != rebuilt_.end()) current_.recompute -= r->second, rebuilt_.erase(r);
      break;
    }
    case OpKind::kStashWeights:
      ++versions_;
      current_.weights = versions_ * weight_bytes_;
      break;
    case OpKind::kReleaseWeights:
      --versions_;
      current_.weights = versions_ * weight_bytes_;
      break;
    default: return;
  }
  // Float sums of equal terms come back to zero only approximately.
  if (stashed_.empty()) current_.activations = 0;
  if (rebuilt_.empty()) current_.recompute = 0;
  Record(now_s);
}

void MemoryTracker::Record(double now_s) {
  peaks_.Add(now_s, current_);
  if (!keep_timeline_ && !timeline_.empty()) return;
  if (!timeline_.empty() && timeline_.back().time_s == now_s) {
    timeline_.back().bytes = current_;
  } else {
    timeline_.push_back({now_s, current_});
  }
}

}  // namespace pipetwin::sim
