// `pipetwin profile`: layers timed inside training steps, with the optimizer step and the stash of
// each layer, and `--concurrent N` timing them while load processes use the cores too.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;

std::string Scenario() {
  return std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/local-mlp-2stage.json";
}

// Processes whose command line holds `needle` (the load processes run `profile ... --load-cpu`).
int ProcessesWith(const std::string& needle) {
  int found = 0;
  DIR* proc = opendir("/proc");
  for (dirent* e; proc && (e = readdir(proc));) {
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    found += cmdline.find("pipetwin-exec profile") != std::string::npos &&
             cmdline.find(needle) != std::string::npos;
  }
  if (proc) closedir(proc);
  return found;
}

TEST(ExecProfile, MeasuresUpdateAndStashAndLeavesNoLoadBehind) {
  const auto r = RunPipetwin("profile " + Scenario() + " --repeats 3 --warmup 1 --concurrent 2 "
                             "--target-spread 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out);
  EXPECT_NE(w["reference"]["device"].get<std::string>().find("2 processes computing at once"),
            std::string::npos);
  // Timed as the executor runs it: the scenario's 8 micro-batches between optimizer steps.
  EXPECT_NE(w["reference"]["device"].get<std::string>().find(
                "an optimizer step every 8 micro-batches"),
            std::string::npos)
      << w["reference"]["device"];
  ASSERT_EQ(w["layers"].size(), 4u);
  for (const auto& l : w["layers"]) {
    EXPECT_GT(l["forward_ms"].get<double>(), 0);
    EXPECT_GT(l["backward_ms"].get<double>(), 0);
    // Adam (the scenario's optimizer) over the layer's parameters.
    EXPECT_GT(l["update_ms"].get<double>(), 0);
    // The backward's additions into the gradient sums: timed, and a part of the backward.
    EXPECT_GT(l["gradient_add_ms"].get<double>(), 0);
    EXPECT_LT(l["gradient_add_ms"].get<double>(), l["backward_ms"].get<double>());
    EXPECT_FALSE(l.contains("update_copy_ms"));  // a flushing schedule: one version, no copy
    // At least the output (batch 32 x width) stays for the backward.
    EXPECT_GE(l["stash_bytes"].get<double>(), l["activation_bytes"].get<double>());
  }
  // The first layer keeps the data batch too: 32 samples x 784 floats.
  EXPECT_GE(w["layers"][0]["stash_bytes"].get<double>(),
            w["layers"][0]["activation_bytes"].get<double>() + 32 * 784 * 4);
  EXPECT_EQ(ProcessesWith("--load-cpu"), 0);
}

// A scenario's plan: each stage's layers timed in passes of their own, as the stage's worker runs
// them and nothing else (the stage's input as received, its gradient computed as sent back);
// `--whole-model` and a plan of one stage time passes of every layer. The bytes are the same
// either way, and every layer is timed.
TEST(ExecProfile, APlansStagesAreTimedApartAsTheirWorkersRunThem) {
  const std::string quick = " --repeats 3 --warmup 1 --target-spread 0 --json";
  const auto apart = RunPipetwin("profile " + Scenario() + quick);
  const auto whole = RunPipetwin("profile " + Scenario() + quick + " --whole-model");
  const auto one_stage = RunPipetwin("profile " + std::string(PIPETWIN_SOURCE_DIR) +
                                     "/scenarios/validation/08-mlp-data-parallel.json" + quick);
  for (const auto* r : {&apart, &whole, &one_stage}) ASSERT_EQ(r->exit_code, 0) << r->err;
  const nlohmann::json a = nlohmann::json::parse(apart.out);
  const nlohmann::json w = nlohmann::json::parse(whole.out);
  const std::string said = "each of the plan's 2 stages timed apart";
  EXPECT_NE(a["reference"]["device"].get<std::string>().find(said), std::string::npos)
      << a["reference"]["device"];
  EXPECT_EQ(w["reference"]["device"].get<std::string>().find("timed apart"), std::string::npos)
      << w["reference"]["device"];
  EXPECT_EQ(nlohmann::json::parse(one_stage.out)["reference"]["device"].get<std::string>().find(
                "timed apart"),
            std::string::npos);
  ASSERT_EQ(a["layers"].size(), w["layers"].size());
  for (size_t i = 0; i < a["layers"].size(); ++i) {
    const nlohmann::json& la = a["layers"][i];
    const nlohmann::json& lw = w["layers"][i];
    EXPECT_EQ(la["id"], lw["id"]);
    for (const char* bytes : {"activation_bytes", "parameter_bytes", "stash_bytes"})
      EXPECT_EQ(la[bytes], lw[bytes]) << la["id"] << " " << bytes;
    EXPECT_GT(la["forward_ms"].get<double>(), 0) << la["id"];
    EXPECT_GT(la["backward_ms"].get<double>(), 0) << la["id"];
    EXPECT_GT(la["update_ms"].get<double>(), 0) << la["id"];
  }
}

// PipeDream keeps weight versions: an update of a stashed version copies the weights first,
// which the profile times apart as a part of the step.
TEST(ExecProfile, VersionedWeightsTimeTheUpdatesCopy) {
  const auto r = RunPipetwin("profile " + std::string(PIPETWIN_SOURCE_DIR) +
                             "/scenarios/validation/03-mlp-2s-pipedream.json --repeats 3 "
                             "--warmup 1 --target-spread 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out);
  // PipeDream steps after every minibatch, and the profile with it.
  EXPECT_NE(w["reference"]["device"].get<std::string>().find(
                "an optimizer step after every micro-batch"),
            std::string::npos)
      << w["reference"]["device"];
  for (const auto& l : w["layers"]) {
    EXPECT_GT(l["update_copy_ms"].get<double>(), 0);
    EXPECT_LT(l["update_copy_ms"].get<double>(), l["update_ms"].get<double>());
  }
}

double TotalPassMs(const nlohmann::json& workload) {
  double ms = 0;
  for (const auto& l : workload["layers"])
    ms += l["forward_ms"].get<double>() + l["backward_ms"].get<double>();
  return ms;
}

int CoresAllowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? std::max(1, CPU_COUNT(&set)) : 1;
}

// Twice as many processes as cores: each gets half a core, so a layer's wall time would double;
// its thread's CPU time, what the profile then reports, stays near the one-per-core time (a run
// descheduled for a while counts no CPU time for it).
TEST(ExecProfile, MoreProcessesThanCoresTimesTheLayersByTheirCpuTime) {
  const int cores = CoresAllowed();
  const std::string common =
      "profile " + Scenario() + " --repeats 10 --warmup 2 --target-spread 0 --json";
  const auto shared = RunPipetwin(common + " --concurrent " + std::to_string(2 * cores));
  ASSERT_EQ(shared.exit_code, 0) << shared.err;
  const auto own = RunPipetwin(common + " --concurrent " + std::to_string(cores));
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const nlohmann::json s = nlohmann::json::parse(shared.out), o = nlohmann::json::parse(own.out);
  EXPECT_NE(s["reference"]["device"].get<std::string>().find("thread CPU time"), std::string::npos)
      << s["reference"]["device"];
  EXPECT_EQ(o["reference"]["device"].get<std::string>().find("thread CPU time"), std::string::npos)
      << o["reference"]["device"];
  EXPECT_LT(TotalPassMs(s), 1.5 * TotalPassMs(o)) << TotalPassMs(s) << " against " << TotalPassMs(o);
  EXPECT_GT(TotalPassMs(s), 0.7 * TotalPassMs(o)) << TotalPassMs(s) << " against " << TotalPassMs(o);
  // Time-shared, it also timed rounds with its core to itself (its core's load process stopped
  // meanwhile, killed with the others at the end): each figure's share of the shared time.
  ASSERT_TRUE(s.contains("own_core")) << s.dump();
  for (const char* figure : {"forward", "backward", "update"}) {
    EXPECT_GT(s["own_core"][figure].get<double>(), 0.5) << s["own_core"];
    EXPECT_LT(s["own_core"][figure].get<double>(), 1.5) << s["own_core"];
  }
  EXPECT_FALSE(o.contains("own_core")) << o["own_core"];  // a core each: nothing to compare
  EXPECT_EQ(ProcessesWith("--load-cpu"), 0);
}

// --min-seconds: timed runs go on past --repeats until they have taken that long (an MLP pass of
// the scenario takes a few ms here, so 0.3 s is dozens of them).
TEST(ExecProfile, MinSecondsTimesMoreRunsThanRepeats) {
  const auto r = RunPipetwin("profile " + Scenario() +
                             " --repeats 2 --warmup 1 --min-seconds 0.3 --target-spread 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // --warmup 1, but the scenario steps its optimizer every 8 micro-batches: the warm-up goes on
  // to the first step, whose allocation of the optimizer's state no timed round should carry.
  const size_t at = r.out.find(" runs after 8 warm-up");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int runs = std::stoi(r.out.substr(r.out.rfind('(', at) + 1));
  EXPECT_GT(runs, 2) << r.out;
  EXPECT_EQ(ProcessesWith("--load-cpu"), 0);
  const auto bad = RunPipetwin("profile " + Scenario() + " --min-seconds -1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// --target-spread: rounds until the training step's mean is known that well, or --max-seconds;
// each layer's times carry their spread, the profile its stability and what disturbed it.
TEST(ExecProfile, TimesInRoundsUntilTheStepSettles) {
  const auto loose = RunPipetwin("profile " + Scenario() +
                                 " --warmup 1 --target-spread 50 --round-seconds 0.05 --json");
  ASSERT_EQ(loose.exit_code, 0) << loose.err;
  const nlohmann::json w = nlohmann::json::parse(loose.out);
  const nlohmann::json& q = w["stability"];
  EXPECT_TRUE(q["settled"].get<bool>()) << q.dump();
  EXPECT_GE(q["rounds"].get<int>(), 4);  // the least rounds before the spread decides
  EXPECT_LE(q["step_spread_ms"].get<double>(), 0.5 * q["step_ms"].get<double>());
  EXPECT_LE(q["lowest_round_ms"].get<double>(), q["step_ms"].get<double>());
  EXPECT_GE(q["highest_round_ms"].get<double>(), q["step_ms"].get<double>());
  EXPECT_GT(q["one_core_gflops"].get<double>(), 0.1) << q.dump();  // the machine's speed, read
  double step = 0;
  for (const auto& l : w["layers"]) {
    EXPECT_GE(l["forward_ms_spread"].get<double>(), 0);
    EXPECT_GE(l["backward_ms_spread"].get<double>(), 0);
    step += l["forward_ms"].get<double>() + l["backward_ms"].get<double>() +
            l.value("update_ms", 0.0);
  }
  // The step is the sum of the layers' times (both means over the same rounds).
  EXPECT_NEAR(step, q["step_ms"].get<double>(), 1e-6 * step);

  const auto tight = RunPipetwin("profile " + Scenario() +
                                 " --warmup 1 --target-spread 0.001 --round-seconds 0.05 "
                                 "--max-seconds 1 --json");
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  const nlohmann::json t = nlohmann::json::parse(tight.out)["stability"];
  EXPECT_FALSE(t["settled"].get<bool>());
  EXPECT_GE(t["seconds"].get<double>(), 1.0);
  bool said = false;
  for (const auto& d : t["disturbances"])
    said = said || d.get<std::string>().find("did not settle") != std::string::npos;
  EXPECT_TRUE(said) << t.dump();

  for (const char* bad : {" --target-spread -1", " --max-seconds 5000", " --round-seconds -2"}) {
    const auto r = RunPipetwin("profile " + Scenario() + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// A thread's CPU time sees one thread: time-shared profiles take one thread per process.
TEST(ExecProfile, TimeSharedWithSeveralThreadsIsOneLineAndExit2) {
  const int cores = CoresAllowed();
  const auto r = RunPipetwin("profile " + Scenario() + " --threads 2 --concurrent " +
                             std::to_string(cores));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--threads 1"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ExecProfile, MoreConcurrentProcessesThanCoresIsOneLineAndExit2) {
  const auto r = RunPipetwin("profile " + Scenario() + " --concurrent 4096");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--concurrent 4096: at most 4 processes per core"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace pipetwin
