// `pipetwin schedule` as a user runs it: the golden CSV, the formats, and bad input turned into
// one line on stderr and exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Golden(const std::string& name) {
  return std::string(PIPETWIN_SOURCE_DIR) + "/tests/golden/schedule/" + name;
}

// The golden file is Megatron's and torch.distributed.pipelining's 1F1B for p = 4, m = 8 (see
// schedule_test.cc for the derivation from their code): warm-up of 3, 2, 1, 0 forwards.
TEST(ScheduleCliTest, FlushCsvMatchesGolden) {
  auto r = RunPipetwin("schedule --kind flush --stages 4 --microbatches 8 --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Slurp(Golden("flush_p4_m8.csv")));
  EXPECT_EQ(r.err, "");
}

TEST(ScheduleCliTest, JsonFlagIsFormatJson) {
  auto a = RunPipetwin("schedule --kind zb-h1 --stages 3 --microbatches 6 --json");
  auto b = RunPipetwin("schedule --kind zb-h1 --stages 3 --microbatches 6 --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  auto doc = nlohmann::json::parse(a.out);
  EXPECT_EQ(doc["kind"], "zb-h1");
  EXPECT_EQ(doc["summary"]["stages"].size(), 3u);
  EXPECT_TRUE(doc["summary"].contains("bubble_fraction"));
}

TEST(ScheduleCliTest, CheckTextAndTimes) {
  auto r = RunPipetwin(
      "schedule --kind gpipe --stages 4 --microbatches 4 --forward-time 1 --backward-time 1 "
      "--check");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("makespan 14"), std::string::npos) << r.out;  // (m+p-1)(f+b)
  EXPECT_NE(r.out.find("check: ok"), std::string::npos);
}

TEST(ScheduleCliTest, ImportRunsATorchCsvAndOutputIsAtomic) {
  const std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/torch.csv", "0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n");
  auto r = RunPipetwin("schedule --import " + dir + "/torch.csv --format svg --output " + dir +
                       "/out.svg");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(Slurp(dir + "/out.svg").find("</svg>"), std::string::npos);
  // Never overwrite the input.
  auto same = RunPipetwin("schedule --import " + dir + "/torch.csv --format csv --output " +
                          dir + "/torch.csv");
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("never replaces an input, even with --force"), std::string::npos)
      << same.err;
  EXPECT_EQ(Slurp(dir + "/torch.csv"), "0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n");
  std::system(("rm -rf '" + dir + "'").c_str());
}

struct BadCase {
  std::string args;
  std::string rule;  // a piece of the one line on stderr
};

TEST(ScheduleCliTest, BadInputIsOneLineAndExit2) {
  const std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/unknown.csv", "0F0,0Q0\n");
  testing::WriteFile(dir + "/norecv.csv", "0F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n");
  const std::vector<BadCase> cases = {
      {"--kind 2bw --stages 4 --microbatches 3", "m >= d"},
      {"--kind interleaved --stages 4 --microbatches 9", "rounds of equal size"},
      {"--kind flush --stages 8 --microbatches 8 --layers 6", "more stages (8) than layers (6)"},
      {"--kind pipedream --stages 3 --microbatches 8 --replicas 2,1", "one count per stage"},
      {"--kind pipedream --stages 2 --microbatches 8 --replicas 2,1 --workers 4",
       "need 3 workers but there are 4"},
      {"--kind pipedream --stages 2 --microbatches 8 --replicas 2,x", "--replicas expects"},
      {"--kind 1f1b --stages 2 --microbatches 8", "unknown schedule kind '1f1b'"},
      {"--kind flush --stages 2", "are required"},
      {"--kind flush --stages 2 --microbatches 2 --format png", "--format must be"},
      {"--kind flush --stages 2 --microbatches 2 --forward-time 0", "must be > 0"},
      {"--kind flush --stages 2 --microbatches 2 --bogus", "bogus"},
      {"--kind flush --stages 2 --microbatches 2 --no-weight-stashing",
       "only pipedream can run without weight stashing"},
      {"--import " + dir + "/unknown.csv", "line 1: unknown action '0Q0'"},
      {"--import " + dir + "/norecv.csv", "never gets its send"},
      {"--import " + dir + "/missing.csv", "missing.csv"},
  };
  for (const auto& c : cases) {
    auto r = RunPipetwin("schedule " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.rule), std::string::npos) << c.args << " -> " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << " -> " << r.err;
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(ScheduleCliTest, HelpListsTheOptions) {
  auto r = RunPipetwin("schedule --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* option : {"--kind", "--replicas", "--chunks", "--vertical-sync",
                             "--no-weight-stashing", "--import",
                             "--format", "--output", "--check"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
}

}  // namespace
}  // namespace pipetwin
