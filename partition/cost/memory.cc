#include "partition/cost/memory.h"

#include "partition/schedule/spec.h"

#include <algorithm>

namespace pipetwin {

namespace {

const char* const kNames[kMemoryCategoryCount] = {"weights", "optimizer", "gradients",
                                                  "activations", "recompute"};

}  // namespace

double& MemoryCategories::Of(int i) {
  double* fields[kMemoryCategoryCount] = {&weights, &optimizer, &gradients, &activations,
                                          &recompute};
  return *fields[i];
}

double MemoryCategories::Of(int i) const { return const_cast<MemoryCategories*>(this)->Of(i); }

const char* MemoryCategoryName(int i) { return kNames[i]; }

nlohmann::json MemoryCategoriesToJson(const MemoryCategories& m) {
  nlohmann::json out = nlohmann::json::object();
  for (int i = 0; i < kMemoryCategoryCount; ++i) out[kNames[i]] = m.Of(i);
  out["total"] = m.Total();
  return out;
}

MemoryCategories MemoryCategoriesFromJson(JsonReader r) {
  MemoryCategories m;
  for (int i = 0; i < kMemoryCategoryCount; ++i) m.Of(i) = r.NonNegativeNumber(kNames[i]);
  r.Accept("total");
  r.Finish();
  return m;
}

double KeptActivationBytes(double input_bytes, double stash_bytes, bool input_only,
                           bool stash_holds_input) {
  if (input_only) return input_bytes;
  return stash_holds_input ? stash_bytes : input_bytes + stash_bytes;
}

RecomputeFootprint StageRecomputeFootprint(const std::vector<RecomputedLayer>& layers,
                                           bool stash_holds_input) {
  RecomputeFootprint out;
  double run = -1;  // the stash of the run of layers recomputed together so far; -1: none open
  for (const RecomputedLayer& l : layers) {
    if (!l.recomputed) {
      out.kept_bytes += KeptActivationBytes(l.input_bytes, l.stash_bytes, false, stash_holds_input);
      run = -1;
      continue;
    }
    out.recompute_ms += l.forward_ms;
    if (l.checkpoint_bytes) {  // opens a run, which the following layers without one join
      out.kept_bytes += *l.checkpoint_bytes;
      run = l.stash_bytes;
      out.rebuilt_bytes = std::max(out.rebuilt_bytes, run);
      continue;
    }
    if (run < 0) run = 0, out.kept_bytes += l.input_bytes;
    run += l.stash_bytes;
    out.rebuilt_bytes = std::max(out.rebuilt_bytes, run);
  }
  return out;
}

MemoryCategories WorkerMemory(const WorkerMemoryInputs& in) {
  MemoryCategories m;
  m.weights = in.parameters * in.parameter_dtype_bytes * in.weight_versions;
  m.gradients = in.parameters * in.gradient_dtype_bytes;
  m.optimizer = in.parameters * in.optimizer_bytes_per_parameter;
  // PipeDream-2BW appendix A.1.2, per stage with n = stashed micro-batches (d for 2BW):
  //   without recomputation  n |A_total(b)| / d + n |A_input(b)|
  //   with recomputation     |A_total(b)| / d + n |A_input(b)|
  // (GPipe with recomputation, section 3.1: |A_total(b)| / d + m |A_input(b)|.)
  const std::optional<RecomputeFootprint>& f = in.recompute ? in.recompute_footprint : std::nullopt;
  m.activations = in.stashed_microbatches *
                  (f ? f->kept_bytes
                     : KeptActivationBytes(in.input_bytes_per_microbatch,
                                           in.stash_bytes_per_microbatch, in.recompute,
                                           in.stash_holds_input));
  if (in.recompute) m.recompute = f ? f->rebuilt_bytes : in.stash_bytes_per_microbatch;
  return m;
}

double ModelStateBytes(const Workload& workload, double optimizer_bytes_per_parameter) {
  WorkerMemoryInputs in;
  in.parameters = workload.TotalParameters();
  in.parameter_dtype_bytes = workload.parameter_dtype_bytes;
  in.gradient_dtype_bytes = workload.GradientDtypeBytes();
  in.optimizer_bytes_per_parameter = optimizer_bytes_per_parameter;
  in.stashed_microbatches = 0;
  return WorkerMemory(in).Total();
}

int StashedMicrobatches(ScheduleKind kind, int stage, int depth, int microbatches, int chunks) {
  switch (kind) {
    case ScheduleKind::kGPipe:
    case ScheduleKind::kImported: return microbatches;  // no closed form: every micro-batch
    case ScheduleKind::kZeroBubbleH1:
    case ScheduleKind::kInterleavedZeroBubble:
      return std::min((chunks - 1) * MicrobatchesPerRound(depth, microbatches) + depth,
                      microbatches * chunks);
    case ScheduleKind::kZeroBubbleH2: return std::min(2 * depth - 1, microbatches);
    case ScheduleKind::kInterleaved:
      return std::min(2 * (depth - stage - 1) +
                          (chunks - 1) * MicrobatchesPerRound(depth, microbatches) + 1,
                      microbatches * chunks);
    case ScheduleKind::kLoopedBFS: return microbatches * chunks;
    case ScheduleKind::kZeroBubbleV:
      return std::min({2 * depth, microbatches + 1 + stage, 2 * microbatches});
    case ScheduleKind::kDualPipeV:
    case ScheduleKind::kDualPipe: return 2 * depth + 1;
    default: return std::min(depth - stage, microbatches);
  }
}

int WeightVersions(ScheduleKind kind, int stage, int depth, int microbatches) {
  if (kind == ScheduleKind::kTwoBW) return 2;
  if (kind == ScheduleKind::kPipeDream) {
    const int in_flight = depth - stage;
    if (in_flight == 1 || microbatches == 1) return 1;
    return std::min(in_flight, std::max(2, microbatches - in_flight + 2));
  }
  return 1;
}

}  // namespace pipetwin
