// `pipetwin compare` end to end on this machine: profile, calibrate, simulate, run, compare. The
// figures' accuracy is the validation matrix's business (scripts/validate.sh); here: the chain
// runs, memory and staleness (which do not depend on timing) agree, both timelines land in one
// trace, intermediate files are kept and never replaced, and given files are reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace pipetwin {
namespace {

namespace fs = std::filesystem;
using testing::RunPipetwin;
using testing::TemporaryDirectory;
using testing::WriteFile;

std::string Scenario() { return std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/local-mlp-2stage.json"; }

TEST(ExecCompare, PredictsAndMeasuresTheSameRun) {
  const std::string dir = TemporaryDirectory();
  const std::string keep = dir + "/keep";
  // --keep relative to the working folder (the derived scenario must still find the profile).
  const fs::path previous = fs::current_path();
  fs::current_path(dir);
  const auto r = RunPipetwin("compare " + Scenario() + " --json --keep keep --trace " + dir +
                             "/both.json --svg " + dir + "/both.svg --repeats 5 --runs 3 " +
                             "--profile-max-seconds 3 --calibration-max-seconds 4");
  fs::current_path(previous);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["predicted"]["source"], "simulator");
  EXPECT_EQ(j["measured"]["source"], "executor");
  EXPECT_EQ(j["predicted"]["samples_per_iteration"], j["measured"]["samples_per_iteration"]);
  const double rate_error = j["relative_error"]["samples_per_s"].get<double>();
  EXPECT_TRUE(std::isfinite(rate_error));
  // Throughput within a factor of two even on a loaded machine; the matrix holds the real bar.
  EXPECT_LT(std::fabs(rate_error), 1.0) << rate_error;
  // Tensor bytes do not depend on timing: weights, gradients, Adam's moments and stashes.
  EXPECT_LT(std::fabs(j["relative_error"]["peak_memory_bytes"].get<double>()), 0.05);
  EXPECT_TRUE(j["staleness_match"].get<bool>());
  // Three runs: the one of median throughput is compared, all three rates are kept.
  std::vector<double> rates = j["measured"]["details"]["runs_samples_per_s"];
  ASSERT_EQ(rates.size(), 3u);
  std::sort(rates.begin(), rates.end());
  EXPECT_EQ(j["measured"]["samples_per_s"].get<double>(), rates[1]);
  ASSERT_EQ(j["relative_error"]["bubble_fraction"].size(), 2u);
  // A profile before each run, their mean predicted, and the band of its spread: the slow
  // profile predicts less, the fast one more (a fixed op order is monotone in its times).
  const nlohmann::json& band = j["predicted_band"];
  ASSERT_TRUE(band.is_object()) << j.dump();
  const double predicted_rate = j["predicted"]["samples_per_s"].get<double>();
  EXPECT_LE(band["low_samples_per_s"].get<double>(), predicted_rate);
  EXPECT_GE(band["high_samples_per_s"].get<double>(), predicted_rate);
  const double measured_rate = j["measured"]["samples_per_s"].get<double>();
  EXPECT_EQ(band["measured_inside"].get<bool>(),
            measured_rate >= band["low_samples_per_s"].get<double>() &&
                measured_rate <= band["high_samples_per_s"].get<double>());
  const nlohmann::json mean = nlohmann::json::parse(std::ifstream(keep + "/profile.json"));
  EXPECT_NE(mean["name"].get<std::string>().find("mean of 3 profiles"), std::string::npos);
  EXPECT_GT(mean["layers"][0]["forward_ms_spread"].get<double>(), 0);
  const nlohmann::json scenario =
      nlohmann::json::parse(std::ifstream(keep + "/predicted-scenario.json"));
  EXPECT_EQ(fs::path(scenario["workload"]["file"].get<std::string>()).filename(), "profile.json");
  for (const char* f : {"profile-1.json", "profile-2.json", "profile-3.json",
                        "predicted-slow.json", "predicted-fast.json",
                        "predicted-slow.stderr", "predicted-fast.stderr"})
    EXPECT_TRUE(fs::exists(keep + "/" + f)) << f;
  for (const char* f : {"profile.json", "cluster.json", "predicted-scenario.json",
                        "predicted.json", "measured.json", "predicted-trace.json",
                        "measured-trace-1.json", "measured-trace-2.json", "measured-trace-3.json"})
    EXPECT_TRUE(fs::exists(keep + "/" + f)) << f;
  // The calibrated cluster: two workers sharing this process's cores.
  const nlohmann::json cluster = nlohmann::json::parse(std::ifstream(keep + "/cluster.json"));
  EXPECT_GE(cluster["shared_cores"].get<int>(), 1);
  EXPECT_EQ(cluster["levels"][0]["count"], 2);
  EXPECT_EQ(cluster["levels"][0]["allreduce"]["ranks"], 2);  // the measured all-reduce
  // The executor's one all-reduce after the last backward, not buckets overlapping it.
  EXPECT_EQ(j["predicted"]["details"]["allreduce_buckets"], 1);

  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(dir + "/both.json"));
  int predicted = 0, measured = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name") {
      const std::string name = e["args"]["name"];
      predicted += name.rfind("predicted: device ", 0) == 0;
      measured += name.rfind("measured: device ", 0) == 0;
    }
  EXPECT_EQ(predicted, 2);
  EXPECT_EQ(measured, 2);
  std::stringstream svg;
  svg << std::ifstream(dir + "/both.svg").rdbuf();
  EXPECT_LT(svg.str().find("predicted"), svg.str().find("measured"));

  // The kept files are never replaced.
  const auto again = RunPipetwin("compare " + Scenario() + " --keep " + keep);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("is already there"), std::string::npos) << again.err;

  // The calibration in rounds: its figures' spread is in the cluster when it took several.
  const int rounds = cluster["calibration"]["stability"]["rounds"].get<int>();
  EXPECT_GE(rounds, 1);
  EXPECT_EQ(cluster.contains("spread"), rounds > 1) << cluster["calibration"]["stability"];

  // A profile without spread and a calibration with one (measured: the run above): the band is
  // the calibration's alone, and a slower message and bandwidth predict less, faster ones more.
  nlohmann::json bare = nlohmann::json::parse(std::ifstream(keep + "/profile.json"));
  for (auto& layer : bare["layers"])
    for (const char* key : {"forward_ms_spread", "backward_ms_spread", "update_ms_spread"})
      layer.erase(key);
  WriteFile(dir + "/bare-profile.json", bare.dump());
  nlohmann::json spread_cluster = cluster;
  spread_cluster["spread"] = {{"message", 0.3}, {"bandwidth", 0.3}, {"allreduce", 0.3}};
  WriteFile(dir + "/spread-cluster.json", spread_cluster.dump());
  const auto reuse = RunPipetwin("compare " + Scenario() + " --json --profile " + dir +
                                 "/bare-profile.json --calibration " + dir +
                                 "/spread-cluster.json --measured " + keep + "/measured.json");
  ASSERT_EQ(reuse.exit_code, 0) << reuse.err;
  const nlohmann::json given = nlohmann::json::parse(reuse.out);
  ASSERT_TRUE(given["predicted_band"].is_object()) << reuse.out;
  const double given_rate = given["predicted"]["samples_per_s"].get<double>();
  EXPECT_LT(given["predicted_band"]["low_samples_per_s"].get<double>(), given_rate);
  EXPECT_GT(given["predicted_band"]["high_samples_per_s"].get<double>(), given_rate);
  // Neither spread: no band.
  const auto none = RunPipetwin("compare " + Scenario() + " --json --profile " + dir +
                                "/bare-profile.json --calibration " + keep +
                                "/cluster.json --measured " + keep + "/measured.json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const bool calibration_spread = cluster.contains("spread");
  EXPECT_EQ(nlohmann::json::parse(none.out)["predicted_band"].is_object(), calibration_spread);
  // Given a profile and a calibration, compare neither profiles nor calibrates.
  const auto text = RunPipetwin("compare " + Scenario() + " --profile " + keep +
                                "/profile.json --calibration " + keep + "/cluster.json");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.err.find("profiling"), std::string::npos) << text.err;
  EXPECT_EQ(text.err.find("calibrating"), std::string::npos) << text.err;
  EXPECT_NE(text.out.find("(given)"), std::string::npos);
}

TEST(ExecCompare, ABadScenarioIsRefusedBeforeAnythingRuns) {
  const std::string dir = TemporaryDirectory();
  nlohmann::json s = nlohmann::json::parse(std::ifstream(Scenario()));
  s["schedule"] = "zb-h1-unknown";
  WriteFile(dir + "/bad.json", s.dump());
  const auto r = RunPipetwin("compare " + dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  // A valid scenario the executor cannot run (a replicated stage's all-reduce in 4 buckets, the
  // simulator's model only): one line, nothing profiled.
  s = nlohmann::json::parse(std::ifstream(Scenario()));
  s["cluster"]["levels"][0]["count"] = 3;
  s["plan"]["stages"][1]["replicas"] = 2;
  s["plan"]["stages"][1]["devices"] = {1, 2};
  s["training"]["allreduce_buckets"] = 4;
  WriteFile(dir + "/buckets.json", s.dump());
  const auto i = RunPipetwin("compare " + dir + "/buckets.json");
  EXPECT_EQ(i.exit_code, 2);
  EXPECT_EQ(std::count(i.err.begin(), i.err.end(), '\n'), 1) << i.err;
  EXPECT_NE(i.err.find("buckets.json: training.allreduce_buckets: the executor all-reduces"),
            std::string::npos)
      << i.err;
  const auto runs = RunPipetwin("compare " + Scenario() + " --runs 0");
  EXPECT_EQ(runs.exit_code, 2);
  EXPECT_EQ(runs.err, "pipetwin compare: --runs must be >= 1\n");
  const auto seconds = RunPipetwin("compare " + Scenario() + " --profile-seconds -1");
  EXPECT_EQ(seconds.exit_code, 2);
  EXPECT_EQ(seconds.err, "pipetwin compare: --profile-seconds must be within 0..600, got -1.000000\n");
}

}  // namespace
}  // namespace pipetwin
