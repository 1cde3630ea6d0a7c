// The front end as a user meets it: help, unknown words, exit codes, one-line errors, and the
// `workload` subcommand end to end.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "partition/cli/options/sweep.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, TopLevelHelpListsEverySubcommand) {
  auto r = RunPipetwin("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"workload", "schedule", "plan", "simulate", "sweep", "run", "profile",
                          "compare"})
    EXPECT_NE(r.out.find(std::string("  ") + sub + " "), std::string::npos) << sub;
}

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* sub : {"workload", "schedule", "plan", "simulate", "sweep", "run", "profile",
                          "compare"}) {
    auto r = RunPipetwin(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("usage: pipetwin ") + sub), std::string::npos) << sub;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << sub << " lacks --json";
  }
}

TEST(Cli, UnknownCommandOrOptionIsOneLineAndExit2) {
  auto r = RunPipetwin("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin: unknown command 'frobnicate' (see pipetwin --help)\n");
  r = RunPipetwin("--frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1);
  r = RunPipetwin("workload gpt --hiden 12");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin workload: unrecognised option '--hiden'\n");
  r = RunPipetwin("workload gpt --hidden twelve");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1);
  EXPECT_NE(r.err.find("hidden"), std::string::npos) << r.err;
}

TEST(Cli, CompareRejectsBadInputBeforeRunningAnything) {
  auto r = RunPipetwin("compare");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin compare: expected a SCENARIO file\n");
  r = RunPipetwin("compare /nonexistent/s.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1);
  EXPECT_NE(r.err.find("/nonexistent/s.json"), std::string::npos) << r.err;
  r = RunPipetwin("compare " + std::string(PIPETWIN_SOURCE_DIR) +
                  "/scenarios/local-mlp-2stage.json --profile /nonexistent/w.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "/nonexistent/w.json: no such file (--profile)\n");
  // GPT 1.3B on 16 workers (the default scenario) cannot be trained on a development machine:
  // refused by the executor's check (run --check) before profiling starts.
  if (!testing::BackEndBuilt("pipetwin-exec")) return;  // a build without LibTorch
  r = RunPipetwin("compare " + std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/default.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("default.json: plan: expected a run this machine can hold"),
            std::string::npos)
      << r.err;
}

TEST(Cli, WorkloadGeneratorPrintsTotalsAndParameters) {
  auto r = RunPipetwin("workload gpt --layers 48 --hidden 1600 --heads 25 --seq 1024 "
                       "--vocab 50257 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["parameters"].get<double>(), 1557611200.0);  // GPT-2 XL, "1,558M"
  EXPECT_EQ(j["layers"].size(), 50u);
  for (const char* key : {"parameter_bytes", "forward_ms", "backward_ms"})
    EXPECT_TRUE(j.contains(key)) << key;
  r = RunPipetwin("workload vgg16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parameters"].get<double>(), 138357544.0);
}

TEST(Cli, WorkloadJsonOutputLoadsBackAndShowsTheSameTotals) {
  std::string dir = testing::TemporaryDirectory();
  auto r = RunPipetwin("workload resnet50 --batch 32 --output " + dir + "/r50.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto shown = RunPipetwin("workload show " + dir + "/r50.json --json");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto j = nlohmann::json::parse(shown.out);
  EXPECT_EQ(j["parameters"].get<double>(), 25557032.0);
  EXPECT_FALSE(j["is_chain"].get<bool>());
  auto table = RunPipetwin("workload show " + dir + "/r50.json");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("25557032 parameters"), std::string::npos) << table.out;
}

TEST(Cli, OutputNeverOverwritesAUsersFile) {
  std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/mine.json", "precious");
  auto r = RunPipetwin("workload vgg16 --output " + dir + "/mine.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1);
  auto kept = RunPipetwin("workload show " + dir + "/mine.json");  // still "precious"
  EXPECT_NE(kept.err.find("malformed JSON"), std::string::npos);
}

TEST(Cli, BadWorkloadFileIsOneLineExit2) {
  std::string dir = testing::TemporaryDirectory();
  testing::WriteFile(dir + "/bad.json", R"({"layers": [{"id": "a", "forward_ms": -1,
      "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1}]})");
  auto r = RunPipetwin("workload show " + dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, dir + "/bad.json: layers[0].forward_ms: expected a number >= 0, got -1\n");
  r = RunPipetwin("workload show " + dir + "/none.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, dir + "/none.json: no such file\n");
  r = RunPipetwin("workload gpt --hidden 100 --heads 16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// `sweep --shard`: I/N as written, or a Slurm job array's task among its tasks (task ids may
// start above 0: sbatch --array=4-7); anything else is one line naming what was expected.
TEST(Cli, SweepShardIsIOfNOrTheJobArraysTask) {
  cli::SweepOptions o;
  cli::ParseShard("2/5", o);
  EXPECT_EQ(o.shard, 2);
  EXPECT_EQ(o.shards, 5);
  cli::ParseShard("slurm", o, [](const char* name) -> const char* {
    const std::string n = name;
    return n == "SLURM_ARRAY_TASK_ID" ? "6" : n == "SLURM_ARRAY_TASK_MIN" ? "4"
         : n == "SLURM_ARRAY_TASK_COUNT" ? "4" : nullptr;
  });
  EXPECT_EQ(o.shard, 2);
  EXPECT_EQ(o.shards, 4);
  for (const char* bad : {"5/5", "1", "a/2", "1/0", "-1/2", "1/2x", ""})
    EXPECT_THROW(cli::ParseShard(bad, o), InputError) << bad;
  EXPECT_THROW(cli::ParseShard("slurm", o, [](const char*) -> const char* { return nullptr; }),
               InputError);
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// What a newcomer reads: options the project uses internally are not in --help (but still
// parsed); every generator is listed and takes its own options; the scenario's key names work
// on the command line too.
TEST(Cli, HelpShowsUsersOptionsAndEveryGeneratorTakesItsScenarioNames) {
  auto r = RunPipetwin("run --help");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("dump-weights"), std::string::npos) << r.out;
  r = RunPipetwin("profile --help");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find("load-cpu"), std::string::npos) << r.out;
  r = RunPipetwin("run --dump-weights");  // parsed: it wants its value
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("unrecognised option"), std::string::npos) << r.err;
  r = RunPipetwin("workload --help");
  EXPECT_NE(r.out.find("pipetwin workload mlp [--layers N --input I --width W"), std::string::npos)
      << r.out;
  r = RunPipetwin("workload mlp --layers 3 --input 32 --width 64 --classes 10 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json mlp = nlohmann::json::parse(r.out);
  EXPECT_EQ(mlp["layer_count"], 3);
  EXPECT_EQ(mlp["parameters"], 32 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10);
  const auto seq = RunPipetwin("workload gpt --layers 2 --seq 512 --vocab 1000 --json");
  const auto sequence =
      RunPipetwin("workload gpt --layers 2 --sequence 512 --vocabulary 1000 --json");
  ASSERT_EQ(seq.exit_code, 0) << seq.err;
  EXPECT_EQ(seq.out, sequence.out);
  r = RunPipetwin("workload gpt --seq 512 --sequence 1024");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin workload gpt: --seq and --sequence name the same setting: give one\n");
  r = RunPipetwin("workload vgg16 --input 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pipetwin workload vgg16: --input applies to mlp only\n");
}

}  // namespace
}  // namespace pipetwin
