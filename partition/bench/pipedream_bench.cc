// Wall time of PipeDream's partitioner (antichains, every level, layout) on the shared PipeDream
// profiles at the settings the public optimizer was timed at (shared/PIPEDREAM_PLANNER.md:
// VGG-16 0.24 s, ResNet-50 3.3 s on 16 machines and 21 s on 4 x 4, GNMT 0.54 s), and on a
// GPT-3-shaped chain over 1,024 GPUs; NASNet-A mobile and Inception-v3, whose antichains exceed
// the exact search, on the same topologies (128 servers of 8); and PipeDream-2BW's full search for
// GPT 3.8B on 64 V100 (8 x p3.16xlarge), target under 50 ms; the Megatron-LM search for GPT-3
// 175B on 1,024 A100, target under 10 s. Profiles are read from
// $PIPETWIN_SHARED_DIR/profiles/pipedream (default: ../shared beside the checkout); a missing one
// is reported as skipped.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>

#include "workloads/analytic/analytic.h"
#include "partition/planners/pipedream/planner.h"
#include "partition/planners/two_bw.h"
#include "partition/model/cluster.h"
#include "workloads/import/pipedream_profile.h"
#include "workloads/networks/network.h"
#include "partition/planners/settings.h"
#include "workloads/megatron/search.h"

namespace pipetwin {
namespace {

std::string ProfilePath(const std::string& name) {
  const char* dir = std::getenv("PIPETWIN_SHARED_DIR");
  return std::string(dir ? dir : PIPETWIN_SHARED_DIR_DEFAULT) + "/profiles/pipedream/" + name +
         "/graph.txt";
}

PipeDreamOptions Settings(PipeDreamCostModel model, std::vector<PipeDreamLevel> levels) {
  PipeDreamOptions o;
  o.cost_model = model;
  o.levels = std::move(levels);
  o.activation_compression_ratio = 1;
  return o;
}

void PlanProfile(benchmark::State& state, const std::string& name, PipeDreamOptions options) {
  if (!std::ifstream(ProfilePath(name))) {
    state.SkipWithError(("profile absent: " + ProfilePath(name)).c_str());
    return;
  }
  const Workload w = ImportPipeDreamProfile(ProfilePath(name));
  for (auto _ : state) benchmark::DoNotOptimize(PlanPipeDream(w, options));
  // The process's peak resident memory so far (getrusage; each benchmark in its own run with
  // --benchmark_filter gives its own peak).
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1024;
}

// GPT-3's shape (Brown et al. 2020: 96 blocks, h = 12288, 96 heads, sequence 2048), timed on a
// V100 by the analytic generator.
Workload Gpt3() {
  TransformerConfig c;
  c.layers = 96; c.hidden = 12288; c.heads = 96; c.sequence = 2048; c.vocabulary = 50257;
  return GenerateTransformer(c, ClusterPreset("cluster-b", 1).device);
}

void PlanGpt(benchmark::State& state, PipeDreamCostModel model) {
  const Workload w = Gpt3();
  const PipeDreamOptions o = Settings(model, {{8, 300e9}, {128, 25e9}});
  for (auto _ : state) benchmark::DoNotOptimize(PlanPipeDream(w, o));
}

// PipeDream-2BW (ICML'21) section 5's GPT "3.8B": 32 blocks, h = 3072, 32 heads, sequence 512.
void Plan2BWGpt38B(benchmark::State& state) {
  TransformerConfig c;
  c.layers = 32; c.hidden = 3072; c.heads = 32; c.sequence = 512; c.vocabulary = 51200;
  const Workload w = GenerateTransformer(c, ClusterPreset("p3.16xlarge", 1).device);
  const Cluster cluster = ClusterPreset("p3.16xlarge", 8);
  PlannerSettings settings;
  settings.max_global_batch_size = 512;
  for (int i = 0; i < w.LayerCount(); ++i) settings.stash_bytes_per_layer.push_back(w.StashBytes(i));
  for (auto _ : state) benchmark::DoNotOptimize(Plan2BW(w, cluster, settings));
}

constexpr auto kCompat = PipeDreamCostModel::kCompat;
constexpr auto kPaper = PipeDreamCostModel::kPaper;

BENCHMARK_CAPTURE(PlanProfile, vgg16_16_compat, "vgg16", Settings(kCompat, {{16, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, resnet50_16_compat, "resnet50", Settings(kCompat, {{16, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, resnet50_4x4_compat, "resnet50",
                  Settings(kCompat, {{4, 1.25e10}, {4, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, gnmt_16_compat, "gnmt", Settings(kCompat, {{16, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, resnet50_4x4_paper, "resnet50",
                  Settings(kPaper, {{4, 1.25e10}, {4, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
// The largest published profiles: more antichains than the exact search enumerates
// (antichain.h), planned from the prefix states; target under 10 s and 1 GB.
BENCHMARK_CAPTURE(PlanProfile, nasnetamobile_16_paper, "nasnetamobile",
                  Settings(kPaper, {{16, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, nasnetamobile_4x4_compat, "nasnetamobile",
                  Settings(kCompat, {{4, 1.25e10}, {4, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanProfile, nasnetamobile_8x2_paper, "nasnetamobile",
                  Settings(kPaper, {{8, 1.25e10}, {2, 1.25e9}}))
    ->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(PlanProfile, inception_v3_4x4_paper, "inception_v3",
                  Settings(kPaper, {{4, 1.25e10}, {4, 1.25e9}}))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanGpt, gpt96_1024gpus_paper, kPaper)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanGpt, gpt96_1024gpus_compat, kCompat)->Unit(benchmark::kMillisecond);
BENCHMARK(Plan2BWGpt38B)->Name("2bw_gpt3.8b_64gpus")->Unit(benchmark::kMillisecond);

// The Megatron-LM search (workloads/megatron/search.h) for GPT-3 175B on 1,024 GPUs (128 DGX
// servers), global batch 1,536: every (t, p, d, micro-batch, v, recomputation) estimated;
// target under 10 s (issue: "GPT-3 175B on 1,024 A100 planned in under 10 s"). The H100 servers'
// kernels and collectives are looked up in measured tables (cluster.cc), the A100's computed.
void SearchMegatronGpt3(benchmark::State& state, const char* preset) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const Cluster server = ClusterPreset(preset, 1);
  for (auto _ : state) {
    MegatronSearch found = SearchMegatron(gpt3, "bf16", false, server, 1024, 1536);
    benchmark::DoNotOptimize(found.fitting.data());
  }
}
BENCHMARK_CAPTURE(SearchMegatronGpt3, megatron_search_gpt3_175b_1024_a100, "dgx-a100")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SearchMegatronGpt3, megatron_search_gpt3_175b_1024_h100, "dgx-h100")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pipetwin

BENCHMARK_MAIN();
