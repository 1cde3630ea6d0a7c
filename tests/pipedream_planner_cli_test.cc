// `pipetwin plan --profile ...` as a user runs it: the JSON it promises, the table, and bad
// input, which is always one line on stderr and exit status 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;
using testing::SharedProfile;

#define PROFILE_OR_SKIP(var, name)                                          \
  std::optional<std::string> var = SharedProfile(name);                     \
  if (!var) {                                                               \
    GTEST_SKIP() << "shared profile " << name << " absent";                 \
  }                                                                         \
  static_assert(true, "")

int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

void ExpectOneLineError(const testing::CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(PipeDreamPlannerCli, CompatJsonHoldsTheOptimizersOutputs) {
  PROFILE_OR_SKIP(vgg, "vgg16");
  auto r = RunPipetwin("plan --profile '" + *vgg + "' --workers 16 --bandwidth 1.25e9 "
                       "--activation-compression-ratio 1 --planner pipedream-compat --batch 64 "
                       "--json --allow-over-capacity");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // The optimizer ignores memory without its -s constraint: the verdict against --memory-limit.
  EXPECT_EQ(j.at("capacity_bytes_per_device").get<double>(), 16e9);
  double peak = 0;
  for (const auto& s : j.at("stages")) {
    const double over = s.at("memory_bytes").get<double>() - 16e9;
    EXPECT_EQ(s.at("fits").get<bool>(), over <= 0) << s;
    EXPECT_DOUBLE_EQ(s.at("over_capacity_bytes").get<double>(), std::max(0.0, over)) << s;
    peak = std::max(peak, s.at("memory_bytes").get<double>());
  }
  EXPECT_EQ(j.at("fits").get<bool>(), peak <= 16e9);
  EXPECT_DOUBLE_EQ(j.at("over_capacity_bytes").get<double>(), std::max(0.0, peak - 16e9));
  const nlohmann::json& compat = j.at("compat");
  EXPECT_NEAR(compat.at("time_per_stage_s").get<double>(), 0.0547948908307692, 1e-15);
  EXPECT_NEAR(compat.at("single_stage_time_s").get<double>(), 0.672535, 1e-12);
  EXPECT_NEAR(compat.at("data_parallel_time_s").get<double>(), 0.1458015955, 1e-12);
  // One level: [[start_state, end_state (exclusive), replicas], ...] covering states 0..40.
  const nlohmann::json& level = compat.at("levels").at(0);
  EXPECT_EQ(level.front().at(0), 0);
  EXPECT_EQ(level.back().at(1), 40);
  EXPECT_EQ(level.front().at(2), 13);
  EXPECT_EQ(j.at("noam"), 2);
  EXPECT_NEAR(j.at("predicted_samples_per_s").get<double>(), 64 / 0.0547948908307692, 1e-6);
  EXPECT_EQ(j.at("memory_bytes_per_device").size(), 16u);
  int replicas = 0;
  for (const auto& s : j.at("stages")) {
    replicas += s.at("replicas").get<int>();
    EXPECT_EQ(s.at("devices").size(), s.at("replicas").get<size_t>());
  }
  EXPECT_EQ(replicas, 16);
  EXPECT_EQ(j.at("stages").back().at("last_layer"), 40);
}

TEST(PipeDreamPlannerCli, PaperModelPrintsATable) {
  PROFILE_OR_SKIP(resnet, "resnet50");
  const std::string command = "plan --profile '" + *resnet + "' --workers 4 4 --bandwidth "
                              "1.25e10 1.25e9 --planner pipedream";
  // Over the default --memory-limit (16e9 bytes): refused unless asked for, as a scenario's.
  ExpectOneLineError(RunPipetwin(command),
                     "expected a plan that fits --memory-limit: the pipedream plan's stage 0 "
                     "needs ");
  auto r = RunPipetwin(command + " --allow-over-capacity");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("memory GiB  fits 14.9 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  no, over by "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory: stage 0 needs "), std::string::npos) << r.out;
  // Under a limit it fits, it is recommended without the flag, and says so.
  r = RunPipetwin(command + " --memory-limit 64e9");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("memory: every stage fits its device's 59.6 GiB"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("compute ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("communication ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NOAM"), std::string::npos) << r.out;
}

TEST(PipeDreamPlannerCli, BadTopologyIsOneLine) {
  PROFILE_OR_SKIP(vgg, "vgg16");
  const std::string base = "plan --profile '" + *vgg + "' ";
  ExpectOneLineError(RunPipetwin(base + "--workers 0 --bandwidth 1e9"), "machines");
  ExpectOneLineError(RunPipetwin(base + "--workers 4 --bandwidth 0"), "bandwidth > 0");
  ExpectOneLineError(RunPipetwin(base + "--workers 4 --bandwidth=-1e9"), "bandwidth > 0");
  ExpectOneLineError(RunPipetwin(base + "--workers 4 4 --bandwidth 1e9"), "same levels");
  ExpectOneLineError(RunPipetwin(base + "--workers 4"), "--bandwidth");
  ExpectOneLineError(RunPipetwin(base + "--workers 4 --bandwidth 1e9 --planner gpipe"),
                     "not built");
  ExpectOneLineError(RunPipetwin("plan --workers 4 --bandwidth 1e9"), "--profile");
}

TEST(PipeDreamPlannerCli, NoFitNamesTheSmallestShortfall) {
  PROFILE_OR_SKIP(vgg, "vgg16");
  auto r = RunPipetwin("plan --profile '" + *vgg + "' --workers 4 --bandwidth 1.25e9 "
                       "--use-memory-constraint --memory-limit 1e9 --planner pipedream");
  ExpectOneLineError(r, "needs");
  EXPECT_NE(r.err.find("the device has 1000000000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("layers node"), std::string::npos) << r.err;
}

TEST(PipeDreamPlannerCli, StraightWithTooFewStatesIsOneLine) {
  PROFILE_OR_SKIP(alexnet, "alexnet");
  ExpectOneLineError(RunPipetwin("plan --profile '" + *alexnet + "' --workers 64 --bandwidth "
                                 "1e9 --straight --planner pipedream-compat"),
                     "--use-fewer-machines");
}

TEST(PipeDreamPlannerCli, BenchReportsAMedian) {
  PROFILE_OR_SKIP(vgg, "vgg16");
  auto r = RunPipetwin("plan --profile '" + *vgg + "' --workers 16 --bandwidth 1.25e9 --bench 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pipetwin
