#include "workloads/megatron/search.h"

#include <algorithm>

#include "partition/cost/communication.h"
#include "partition/planners/two_bw.h"
#include "partition/util/error.h"
#include "workloads/megatron/megatron_workload.h"

namespace pipetwin {

namespace {

std::vector<int> Divisors(int n, int at_most) {
  std::vector<int> out;
  for (int k = 1; k <= std::min(n, at_most); ++k)
    if (n % k == 0) out.push_back(k);
  return out;
}

// The cluster of `gpus` GPUs in servers like `server`; throws InputError when they are not whole
// servers.
Cluster WholeServers(const Cluster& server, int gpus) {
  const int per_server = server.levels.empty() ? 1 : server.levels[0].count;
  if (gpus < 1 || gpus % per_server != 0)
    throw InputError(std::to_string(gpus) + " GPUs are not whole servers of " +
                     std::to_string(per_server));
  Cluster cluster = server;
  if (cluster.levels.size() > 1) cluster.levels.back().count = gpus / per_server;
  return cluster;
}

// The closed-form iteration time of one candidate (search.h), on `cluster` (the server preset
// widened to the GPUs searched).
double IterationSeconds(const MegatronModel& m, const MegatronCandidate& c, const Cluster& server,
                        const Cluster& cluster) {
  MegatronParallel p = c.parallel;
  const bool full = p.recompute == Recompute::kFull;
  if (full) p.recompute = Recompute::kNone;  // the forward rerun is added below
  const PassMs block = LayerPassMs(BlockWork(m, p), server, p.tensor);
  const PassMs embedding = LayerPassMs(EmbeddingWork(m, p), server, p.tensor);
  const PassMs output = LayerPassMs(OutputWork(m, p), server, p.tensor);
  const double blocks = static_cast<double>(m.layers) / c.pipeline;
  const double recompute = full ? 1 : 0;
  auto stage_ms = [&](const PassMs& extra) {
    return blocks * (block.forward * (1 + recompute) + block.backward) + extra.forward * (1 + recompute) +
           extra.backward;
  };
  double per_microbatch_ms = std::max(stage_ms(embedding), stage_ms(output));
  if (c.pipeline == 1) per_microbatch_ms = stage_ms(embedding) + stage_ms(output) - stage_ms(PassMs{});
  const double pipeline_ms =
      (c.microbatches + static_cast<double>(c.pipeline - 1) / c.chunks) * per_microbatch_ms;
  // The largest stage's rank synchronises its gradients (fp32) with its d replicas, the
  // tensor-parallel groups of the same stage placed side by side as Megatron orders them: a
  // ring all-reduce, or the distributed optimizer's reduce-scatter and weights' all-gather
  // (GradientSyncBytes), on the cluster's tensor-parallel view (each rank its NIC share).
  const LayerWork work = BlockWork(m, p);
  const double parameters = blocks * work.parameters + EmbeddingWork(m, p).parameters;
  double allreduce_ms = 0;
  if (p.data_parallel > 1) {
    const Cluster view = TensorParallelView(cluster, p.tensor, "");
    std::vector<int> replicas(p.data_parallel);
    for (int r = 0; r < p.data_parallel; ++r) replicas[r] = r;
    allreduce_ms = RingAllReduceCost(view, replicas)
                       .Ms(GradientSyncBytes(parameters * 4, parameters * p.DtypeBytes(),
                                             p.distributed_optimizer));
  }
  const double update_ms =
      1e3 * parameters * OptimizerStepBytes(p) /
      (server.device.memory_bandwidth_bytes_per_s * server.device.memory_bandwidth_efficiency);
  return (pipeline_ms + allreduce_ms + update_ms) / 1e3;
}

}  // namespace

MegatronSearch SearchMegatron(const MegatronModel& m, const std::string& precision,
                              bool flash_attention, const Cluster& server, int gpus,
                              int global_batch, const std::string& gradient_precision) {
  const int per_server = server.levels.empty() ? 1 : server.levels[0].count;
  const Cluster cluster = WholeServers(server, gpus);
  MegatronSearch out;
  for (int t : Divisors(per_server, per_server))
    for (int p : Divisors(m.layers, m.layers)) {
      if (gpus % (t * p) != 0) continue;
      const int d = gpus / (t * p);
      for (int b : {1, 2, 4, 8}) {
        if (global_batch % (b * d) != 0) continue;
        const int microbatches = global_batch / (b * d);
        if (microbatches < p) continue;  // a pipeline of more stages than micro-batches idles
        std::vector<int> chunk_counts = {1};
        if (p > 1 && microbatches % p == 0)
          for (int v : Divisors(m.layers / p, 8))
            if (v > 1) chunk_counts.push_back(v);
        for (int v : chunk_counts)
          for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
            MegatronCandidate c;
            c.parallel.tensor = t;
            c.parallel.sequence_parallel = t > 1;
            c.parallel.recompute = r;
            c.parallel.flash_attention = flash_attention;
            c.parallel.microbatch = b;
            c.parallel.precision = precision;
            c.parallel.gradient_precision = gradient_precision;
            c.parallel.data_parallel = d;
            c.parallel.distributed_optimizer = d > 1;
            c.pipeline = p;
            c.chunks = v;
            c.microbatches = microbatches;
            try {
              ValidateMegatron(m, c.parallel);
            } catch (const InputError&) {
              continue;  // heads, groups or the MLP not divisible by t, ...
            }
            ++out.considered;
            c.memory = FirstStageMemory(m, c.parallel, p, v, microbatches,
                                        v > 1 ? ScheduleKind::kInterleaved : ScheduleKind::kFlush);
            if (c.memory.Total() > server.device.memory_bytes) {
              ++out.over_memory;
              continue;
            }
            c.iteration_s = IterationSeconds(m, c, server, cluster);
            out.fitting.push_back(c);
          }
      }
    }
  std::stable_sort(out.fitting.begin(), out.fitting.end(),
                   [](const MegatronCandidate& a, const MegatronCandidate& b) {
                     return a.iteration_s < b.iteration_s;
                   });
  return out;
}

std::vector<TwoBWCandidate> Search2BWMegatron(const MegatronModel& m, const std::string& precision,
                                              bool flash_attention, const Cluster& server,
                                              int gpus, int global_batch,
                                              const std::string& gradient_precision) {
  const int per_server = server.levels.empty() ? 1 : server.levels[0].count;
  const Cluster cluster = WholeServers(server, gpus);
  std::vector<TwoBWCandidate> out;
  std::string shortfall;
  for (int t : Divisors(per_server, per_server))
    for (Recompute r : {Recompute::kNone, Recompute::kSelective}) {
      TwoBWCandidate c;
      c.parallel.tensor = t;
      c.parallel.sequence_parallel = t > 1;
      c.parallel.recompute = r;
      c.parallel.precision = precision;
      c.parallel.gradient_precision = gradient_precision;
      c.parallel.flash_attention = flash_attention;
      try {
        ValidateMegatron(m, c.parallel);
      } catch (const InputError&) {
        continue;  // heads, groups or the MLP not divisible by t
      }
      const Workload workload = MegatronWorkload(m, c.parallel, cluster);
      PlannerSettings settings;
      settings.max_global_batch_size = global_batch;
      settings.microbatch_candidates = {1, 2, 4, 8};
      // fp32 main weights and Adam's two moments (Megatron's mixed precision); 2BW's two
      // versions of the bf16 weights and the fp32 gradients are the planner's own.
      settings.optimizer_bytes_per_parameter = c.parallel.precision == "fp32" ? 8 : 12;
      settings.stash_bytes_per_layer.resize(workload.LayerCount());
      for (int i = 0; i < workload.LayerCount(); ++i)
        settings.stash_bytes_per_layer[i] = workload.StashBytes(i);
      try {
        c.plan = Plan2BW(workload, TensorParallelView(cluster, t, ""), settings);
      } catch (const InputError& e) {
        if (shortfall.empty()) shortfall = e.what();
        continue;  // nothing fits at this t
      }
      // Full recomputation (the plan's) reruns every forward: a selective workload under it is
      // the same run with its attention counted twice.
      if (c.plan.recompute && r == Recompute::kSelective) continue;
      c.parallel.microbatch = c.plan.microbatch_size;
      out.push_back(std::move(c));
    }
  if (out.empty())
    throw InputError("no PipeDream-2BW plan fits at any tensor-parallel size" +
                     (shortfall.empty() ? std::string() : " (" + shortfall + ")"));
  std::stable_sort(out.begin(), out.end(), [](const TwoBWCandidate& a, const TwoBWCandidate& b) {
    return a.plan.predicted_samples_per_s > b.plan.predicted_samples_per_s;
  });
  return out;
}

}  // namespace pipetwin
