// docs/output-schema.md against what the commands write: the document's tables are read here,
// independently of the writers, and every key written must be listed there and every key listed
// (not marked optional) written; a file of a newer schema is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "partition/util/schema_version.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;

struct Table {
  std::set<std::string> keys;      // every key listed
  std::set<std::string> optional;  // those marked *optional*
};

// The document's tables by heading ("Report", "Report: workers[]", ...): rows whose first cell
// is a key in backquotes.
std::map<std::string, Table> ReadSchemaDoc() {
  std::ifstream in(std::string(PIPETWIN_SOURCE_DIR) + "/docs/output-schema.md");
  EXPECT_TRUE(in) << "docs/output-schema.md is missing";
  std::map<std::string, Table> tables;
  std::string line, heading;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) heading = line.substr(3);
    if (line.rfind("### ", 0) == 0) heading = line.substr(4);
    if (line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    const std::string key = line.substr(3, end - 3);
    tables[heading].keys.insert(key);
    if (line.find("*optional*") != std::string::npos) tables[heading].optional.insert(key);
  }
  return tables;
}

// Keys written and keys listed agree, both ways.
void ExpectSameKeys(const nlohmann::json& object, const Table& table, const std::string& what) {
  ASSERT_FALSE(table.keys.empty()) << what << ": no table in docs/output-schema.md";
  for (const auto& [key, value] : object.items())
    EXPECT_TRUE(table.keys.count(key)) << what << ": `" << key << "` is written, not documented";
  for (const std::string& key : table.keys)
    if (!table.optional.count(key))
      EXPECT_TRUE(object.contains(key)) << what << ": `" << key << "` is documented, not written";
}

std::string Scenario(const std::string& name) {
  return std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/" + name;
}

TEST(SimOutputSchema, ReportsPlansAndTablesWriteWhatTheDocumentLists) {
  const auto doc = ReadSchemaDoc();
  // A replicated stage and several levels: every array of the report has members.
  auto r = RunPipetwin("simulate " + Scenario("validation/07-mlp-replicated.json") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["schema_version"], kSchemaVersion);
  ExpectSameKeys(report, doc.at("Report"), "simulate --json");
  for (const char* part : {"workers", "devices", "stages", "communication"}) {
    ASSERT_FALSE(report[part].empty()) << part;
    for (const auto& member : report[part])
      ExpectSameKeys(member, doc.at(std::string("Report: ") + part + "[]"),
                     std::string("simulate --json ") + part + "[]");
  }

  const std::string dir = testing::TemporaryDirectory();
  r = RunPipetwin("plan --json --output " + dir + "/plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan_json = nlohmann::json::parse(r.out);
  std::ifstream file(dir + "/plan.json");
  const nlohmann::json plan_file = nlohmann::json::parse(file);
  EXPECT_EQ(plan_file["schema_version"], kSchemaVersion);
  ExpectSameKeys(plan_file, doc.at("Plan file"), "plan --output");
  for (const auto& stage : plan_file["stages"])
    ExpectSameKeys(stage, doc.at("Plan file: stages[]"), "plan --output stages[]");
  // plan --json: the plan file's keys and its own.
  Table plan_table = doc.at("Plan file");
  for (const std::string& key : doc.at("plan --json").keys) plan_table.keys.insert(key);
  for (const std::string& key : doc.at("plan --json").optional) plan_table.optional.insert(key);
  ExpectSameKeys(plan_json, plan_table, "plan --json");
  Table stage_table = doc.at("Plan file: stages[]");
  for (const std::string& key : doc.at("plan --json: stages[]").keys) stage_table.keys.insert(key);
  for (const std::string& key : doc.at("plan --json: stages[]").optional)
    stage_table.optional.insert(key);
  ASSERT_FALSE(plan_json["stages"].empty());
  for (const auto& stage : plan_json["stages"]) {
    ExpectSameKeys(stage, stage_table, "plan --json stages[]");
    EXPECT_TRUE(stage.contains("fits")) << "the default plan estimates memory: " << stage;
  }
  for (const char* key : {"pipeline_depth", "data_parallel", "microbatch_size", "microbatches",
                          "global_batch_size"})
    EXPECT_TRUE(plan_json["details"].contains(key)) << "2bw details: " << key;

  r = RunPipetwin("simulate " + Scenario("local-mlp-2stage.json") + " --csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::stringstream csv(r.out);
  std::string header, cell;
  std::getline(csv, header);
  std::stringstream cells(header);
  nlohmann::json columns = nlohmann::json::object();
  while (std::getline(cells, cell, ',')) {
    EXPECT_FALSE(columns.contains(cell)) << "column " << cell << " twice";
    columns[cell] = true;
  }
  ExpectSameKeys(columns, doc.at("Sweep and simulate CSV"), "simulate --csv");
}

TEST(SimOutputSchema, TheTracesArgsAreTheOnesTheDocumentLists) {
  const auto doc = ReadSchemaDoc();
  ASSERT_TRUE(doc.count("Chrome trace: args")) << "no trace args table";
  const Table& table = doc.at("Chrome trace: args");
  const std::string dir = testing::TemporaryDirectory();
  // A replicated stage: compute, messages, all-reduce buckets and optimizer steps; its three
  // workers on two shared cores, so that compute ops say their core.
  std::ifstream file(Scenario("validation/07-mlp-replicated.json"));
  nlohmann::json scenario = nlohmann::json::parse(file);
  scenario["cluster"]["shared_cores"] = 2;
  testing::WriteFile(dir + "/s.json", scenario.dump());
  auto r = RunPipetwin("simulate " + dir + "/s.json --trace " + dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir + "/t.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::string> written;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X")
      for (const auto& [key, value] : e["args"].items()) written.insert(key);
  // The thread's CPU time is the executor's alone (the table says so).
  std::set<std::string> documented = table.keys;
  documented.erase("cpu_ms");
  EXPECT_EQ(written, documented);
}

TEST(SimOutputSchema, AFileOfANewerSchemaIsRefusedNamingIt) {
  const std::string dir = testing::TemporaryDirectory();
  auto r = RunPipetwin("plan " + Scenario("local-mlp-2stage.json") + " --output " + dir +
                       "/plan.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(dir + "/plan.json");
  nlohmann::json plan = nlohmann::json::parse(in);
  plan["schema_version"] = kSchemaVersion + 1;
  testing::WriteFile(dir + "/plan.json", plan.dump());
  std::ifstream scenario_in(Scenario("local-mlp-2stage.json"));
  nlohmann::json scenario = nlohmann::json::parse(scenario_in);
  scenario.erase("planner");
  scenario.erase("plan");
  scenario["plan_file"] = "plan.json";
  if (scenario["workload"].contains("file"))
    scenario["workload"]["file"] =
        std::string(PIPETWIN_SOURCE_DIR) + "/scenarios/" + scenario["workload"]["file"].get<std::string>();
  testing::WriteFile(dir + "/s.json", scenario.dump());
  r = RunPipetwin("simulate " + dir + "/s.json");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("plan.json: schema_version: expected at most " +
                       std::to_string(kSchemaVersion)),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pipetwin
