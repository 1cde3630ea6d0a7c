// Tests of the PipeDream graph.txt importer: the six shared profiles (checked against totals taken
// by an independent scan of the file text), handmade fixtures with known values, and bad input,
// which must always be an InputError naming the file and the line.
#include "workloads/import/pipedream_profile.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

using testing::Fixture;
using testing::SharedProfile;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What a profile should hold, taken from the text with no knowledge of the importer: a node line
// is any non-blank line not starting with a tab, an edge line one starting with a tab; a value is
// the number after "key=" (atof stops at the comma).
struct TextScan {
  int nodes = 0;
  int edges = 0;
  double parameter_bytes = 0;
  double forward_ms = 0;
  double backward_ms = 0;
};

double ValueAfter(const std::string& line, const std::string& key) {
  size_t at = line.find(key + "=");
  EXPECT_NE(at, std::string::npos) << key << " missing in: " << line;
  return at == std::string::npos ? 0 : std::atof(line.c_str() + at + key.size() + 1);
}

TextScan ScanProfileText(const std::string& text) {
  TextScan scan;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line[0] == '\t') {
      ++scan.edges;
      continue;
    }
    ++scan.nodes;
    scan.parameter_bytes += ValueAfter(line, "parameter_size");
    scan.forward_ms += ValueAfter(line, "forward_compute_time");
    scan.backward_ms += ValueAfter(line, "backward_compute_time");
  }
  return scan;
}

int CountInputs(const Workload& w) {
  int edges = 0;
  for (const Layer& l : w.layers) edges += static_cast<int>(l.inputs.size());
  return edges;
}

int IndexOf(const Workload& w, const std::string& id) {
  for (int i = 0; i < w.LayerCount(); ++i)
    if (w.layers[i].id == id) return i;
  ADD_FAILURE() << "no layer " << id;
  return -1;
}

class SharedProfileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedProfileTest, PipeDreamMatchesAScanOfTheFile) {
  std::optional<std::string> path = SharedProfile(GetParam());
  if (!path) GTEST_SKIP() << "shared profile " << GetParam() << " not present";
  TextScan expected = ScanProfileText(ReadAll(*path));
  Workload w = ImportPipeDreamProfile(*path);
  EXPECT_EQ(w.name, GetParam());
  EXPECT_EQ(w.reference.source, "pipedream-profile");
  EXPECT_EQ(w.reference.batch_size, 1);
  EXPECT_EQ(w.LayerCount(), expected.nodes);
  EXPECT_EQ(CountInputs(w), expected.edges);
  EXPECT_DOUBLE_EQ(w.TotalParameterBytes(), expected.parameter_bytes);
  EXPECT_DOUBLE_EQ(w.TotalParameters(), expected.parameter_bytes / 4);
  // The scan's forward total counts the Input node, whose time is the data loader's.
  EXPECT_NEAR(w.TotalForwardMs() + w.data_loading_ms, expected.forward_ms,
              1e-9 * expected.forward_ms);
  EXPECT_NEAR(w.TotalBackwardMs(), expected.backward_ms, 1e-9 * expected.backward_ms);
  for (int i = 0; i < w.LayerCount(); ++i)
    for (int in : w.layers[i].inputs) EXPECT_LT(in, i) << "not topological at " << w.layers[i].id;
  EXPECT_EQ(w.layers.front().inputs.size(), 0u);
  std::cout << GetParam() << ": " << w.LayerCount() << " layers, " << CountInputs(w)
            << " edges, " << w.TotalParameterBytes() << " parameter bytes, "
            << w.TotalForwardMs() << " ms forward, " << w.TotalBackwardMs() << " ms backward\n";
}

INSTANTIATE_TEST_SUITE_P(PipeDream, SharedProfileTest,
                         ::testing::Values("alexnet", "gnmt", "resnet18", "resnet50",
                                           "squeezenet1_0", "vgg16"));

TEST(PipeDreamProfile, GnmtIsADagWithMultiOutputLayers) {
  std::optional<std::string> path = SharedProfile("gnmt");
  if (!path) GTEST_SKIP() << "shared profile gnmt not present";
  Workload w = ImportPipeDreamProfile(*path);
  EXPECT_FALSE(w.IsChain());
  int multi_output = 0;
  for (const Layer& l : w.layers) multi_output += l.output_bytes.size() > 1;
  EXPECT_EQ(multi_output, 7);  // 6 LSTMs with 3 outputs and RecurrentAttention with 5
  const Layer& attention = w.layers[IndexOf(w, "node23")];
  EXPECT_EQ(attention.inputs.size(), 4u);
  ASSERT_EQ(attention.output_bytes.size(), 5u);
  EXPECT_DOUBLE_EQ(attention.output_bytes[4], 288768.0);
  EXPECT_DOUBLE_EQ(attention.activation_bytes, 6160384.0 * 2 + 131072.0 * 2 + 288768.0);
  EXPECT_NE(attention.description.find("BahdanauAttention"), std::string::npos);
}

// VGG-16 as PipeDream profiled it is a chain except for one side branch: the Size(0) node reads
// the last max-pool and feeds View, which also reads the max-pool. In topological order every
// layer reads its predecessor, and View alone also reads the layer before that.
TEST(PipeDreamProfile, Vgg16IsAChainApartFromTheSizeBranch) {
  std::optional<std::string> path = SharedProfile("vgg16");
  if (!path) GTEST_SKIP() << "shared profile vgg16 not present";
  Workload w = ImportPipeDreamProfile(*path);
  EXPECT_FALSE(w.IsChain());
  EXPECT_EQ(w.layers.front().description, "Input");
  for (int i = 1; i < w.LayerCount(); ++i) {
    const Layer& l = w.layers[i];
    if (l.description.rfind("View", 0) == 0) {
      EXPECT_EQ(l.inputs, (std::vector<int>{i - 1, i - 2}));
      EXPECT_EQ(w.layers[i - 1].description, "Size(0)");
    } else {
      EXPECT_EQ(l.inputs, std::vector<int>{i - 1}) << l.id << " " << l.description;
    }
  }
  EXPECT_EQ(w.layers.back().description, "Linear(in_features=4096, out_features=1000, bias=True)");
}

TEST(PipeDreamProfile, ChainFixtureValuesAndOrder) {
  Workload w = ImportPipeDreamProfile(Fixture("pipedream/chain4/graph.txt"));
  EXPECT_EQ(w.name, "chain4");
  EXPECT_EQ(w.reference.device, "profiled GPU (PipeDream)");
  EXPECT_DOUBLE_EQ(w.parameter_dtype_bytes, 4);
  ASSERT_EQ(w.LayerCount(), 4);
  EXPECT_TRUE(w.IsChain());  // listed out of order, edges naming later nodes: sorted back
  std::vector<std::string> ids;
  for (const Layer& l : w.layers) ids.push_back(l.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"node1", "node2", "node3", "node4"}));
  const Layer& input = w.layers[0];
  EXPECT_EQ(input.description, "Input");
  // The Input node's forward is data loading: the workload's, out of every stage's compute.
  EXPECT_DOUBLE_EQ(input.forward_ms, 0);
  EXPECT_DOUBLE_EQ(w.data_loading_ms, 12.0);
  const Layer& conv = w.layers[2];
  EXPECT_EQ(conv.description, "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
  EXPECT_DOUBLE_EQ(conv.forward_ms, 1.5);
  EXPECT_DOUBLE_EQ(conv.backward_ms, 3.25);
  EXPECT_DOUBLE_EQ(conv.activation_bytes, 4096);
  EXPECT_TRUE(conv.output_bytes.empty());
  EXPECT_DOUBLE_EQ(conv.parameter_bytes, 896);
  EXPECT_DOUBLE_EQ(conv.parameters, 224);
  EXPECT_DOUBLE_EQ(w.TotalParameterBytes(), 968);
}

TEST(PipeDreamProfile, BranchyFixtureIsSortedWithMultiOutputNode) {
  Workload w = ImportPipeDreamProfile(Fixture("pipedream/branchy/graph.txt"));
  EXPECT_EQ(w.name, "branchy");
  EXPECT_FALSE(w.IsChain());
  std::vector<std::string> ids;
  for (const Layer& l : w.layers) ids.push_back(l.id);
  // Kahn's order, ties broken by the order the node lines are listed (node6 before node5/4).
  EXPECT_EQ(ids, (std::vector<std::string>{"node1", "node2", "node3", "node5", "node4", "node6",
                                           "node7"}));
  const Layer& lstm = w.layers[2];
  EXPECT_EQ(lstm.output_bytes, (std::vector<double>{1024, 64, 32}));
  EXPECT_DOUBLE_EQ(lstm.activation_bytes, 1120);
  EXPECT_DOUBLE_EQ(lstm.parameters, 288);
  EXPECT_EQ(w.layers[5].id, "node6");
  EXPECT_EQ(w.layers[5].inputs, (std::vector<int>{4, 1}));  // node4, then the skip from node2
  EXPECT_EQ(w.layers[6].inputs, (std::vector<int>{5, 3}));  // node6, node5
  EXPECT_EQ(w.layers[6].description,
            "Classifier(  (classifier): Linear(in_features=8, out_features=4, bias=True))");
}

TEST(PipeDreamProfile, DescriptionMayContainTheSeparator) {
  Workload w = ParsePipeDreamProfile(
      "n1 -- Lambda(x -- y) -- forward_compute_time=1, backward_compute_time=2, "
      "activation_size=3, parameter_size=8\r\n",
      "models/lambda.txt", 32);
  EXPECT_EQ(w.name, "lambda");
  EXPECT_EQ(w.reference.batch_size, 32);
  ASSERT_EQ(w.LayerCount(), 1);
  EXPECT_EQ(w.layers[0].description, "Lambda(x -- y)");
  EXPECT_DOUBLE_EQ(w.layers[0].parameter_bytes, 8);
}

// Expects an InputError whose message names the file and the line.
void ExpectInputError(const std::function<void()>& load, const std::string& file,
                      const std::string& where, const std::string& detail) {
  try {
    load();
    ADD_FAILURE() << "no error; expected " << where << ": " << detail;
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(file + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(where), std::string::npos) << what;
    EXPECT_NE(what.find(detail), std::string::npos) << what;
  }
}

TEST(PipeDreamProfile, BrokenFixturesNameFileAndLine) {
  std::string truncated = Fixture("pipedream/broken/truncated.txt");
  ExpectInputError([&] { ImportPipeDreamProfile(truncated); }, truncated, "line 2: ",
                   "parameter_size");
  std::string dangling = Fixture("pipedream/broken/dangling_edge.txt");
  ExpectInputError([&] { ImportPipeDreamProfile(dangling); }, dangling, "line 4: ",
                   "unknown node \"node9\"");
  std::string empty = Fixture("pipedream/broken/empty.txt");
  ExpectInputError([&] { ImportPipeDreamProfile(empty); }, empty, "line 1: ", "empty file");
  // A cycle has no single line to blame: ValidateAndSortWorkload names the nodes on it.
  std::string cycle = Fixture("pipedream/broken/cycle.txt");
  ExpectInputError([&] { ImportPipeDreamProfile(cycle); }, cycle, "cycle", "node2");
}

const char kGoodLine[] =
    "node1 -- Input -- forward_compute_time=1.0, backward_compute_time=0.0, "
    "activation_size=16.0, parameter_size=0.0\n";

struct BadCase {
  const char* label;
  std::string text;   // after kGoodLine, so the fault is on line 2 or later
  const char* where;  // "line N"
  const char* detail;
};

TEST(PipeDreamProfile, BadInputIsAnInputErrorAtTheLine) {
  const std::string tail = "forward_compute_time=1, backward_compute_time=2, activation_size=3";
  const std::vector<BadCase> cases = {
      {"cut mid-key", "node2 -- ReLU -- forward_compute_time=1, backward_comp", "line 2",
       "backward_comp"},
      {"missing parameter_size", "node2 -- ReLU -- " + tail, "line 2", "parameter_size"},
      {"no separators", "node2 ReLU forward_compute_time=1", "line 2", "<id> -- <layer>"},
      {"one separator", "node2 -- ReLU(inplace)", "line 2", "truncated"},
      {"empty value", "node2 -- ReLU -- " + tail + ", parameter_size=", "line 2", "nothing"},
      {"non-numeric", "node2 -- ReLU -- " + tail + ", parameter_size=abc", "line 2", "\"abc\""},
      {"trailing garbage", "node2 -- ReLU -- " + tail + ", parameter_size=12x", "line 2", "12x"},
      {"negative", "node2 -- ReLU -- forward_compute_time=-1, backward_compute_time=2, "
                   "activation_size=3, parameter_size=4", "line 2", "forward_compute_time"},
      {"nan", "node2 -- ReLU -- " + tail + ", parameter_size=nan", "line 2", "\"nan\""},
      {"NAN", "node2 -- ReLU -- " + tail + ", parameter_size=NAN", "line 2", "\"NAN\""},
      {"inf", "node2 -- ReLU -- " + tail + ", parameter_size=inf", "line 2", "\"inf\""},
      {"overflow", "node2 -- ReLU -- " + tail + ", parameter_size=1e999", "line 2", "1e999"},
      {"hex", "node2 -- ReLU -- " + tail + ", parameter_size=0x10", "line 2", "0x10"},
      {"bad list element", "node2 -- LSTM -- forward_compute_time=1, backward_compute_time=2, "
                           "activation_size=[1.0; nan], parameter_size=4", "line 2", "nan"},
      {"unclosed list", "node2 -- LSTM -- forward_compute_time=1, backward_compute_time=2, "
                        "activation_size=[1.0; 2.0, parameter_size=4", "line 2", "']'"},
      {"unknown key", "node2 -- ReLU -- " + tail + ", parameter_sise=4", "line 2", "parameter_sise"},
      {"key twice", "node2 -- ReLU -- " + tail + ", activation_size=3, parameter_size=4", "line 2",
       "twice"},
      {"duplicate node", "\n" + std::string(kGoodLine), "line 3", "duplicate node \"node1\""},
      {"dangling edge", "\tnode1 -- node7", "line 2", "unknown node \"node7\""},
      {"edge without separator", "\tnode1 node2", "line 2", "expected an edge"},
      {"edge with empty end", "\tnode1 -- ", "line 2", "expected an edge"},
      {"self edge", "\tnode1 -- node1", "line 2", "itself"},
      {"duplicate edge", "node2 -- ReLU -- " + tail + ", parameter_size=0\n\tnode1 -- node2\n"
                         "\tnode1 -- node2", "line 4", "duplicate edge"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.label);
    ExpectInputError([&] { ParsePipeDreamProfile(kGoodLine + c.text, "bad.txt"); }, "bad.txt",
                     std::string(c.where) + ": ", c.detail);
  }
}

TEST(PipeDreamProfile, BlankTextIsAnEmptyFileError) {
  ExpectInputError([] { ParsePipeDreamProfile("\n  \n", "blank.txt"); }, "blank.txt", "line 1: ",
                   "empty file");
  ExpectInputError([] { ParsePipeDreamProfile("\tnode1 -- node2\n", "edges.txt"); }, "edges.txt",
                   "line 1: ", "unknown node");
}

TEST(PipeDreamProfile, MissingFileIsAnInputError) {
  EXPECT_THROW(ImportPipeDreamProfile("/nonexistent/graph.txt"), InputError);
}

TEST(PipeDreamProfile, LooksLikePipeDreamProfileTellsJsonApart) {
  EXPECT_FALSE(LooksLikePipeDreamProfile("{\"name\": \"vgg16\", \"layers\": []}"));
  EXPECT_FALSE(LooksLikePipeDreamProfile("\n  \t{\n}"));
  EXPECT_FALSE(LooksLikePipeDreamProfile(""));
  EXPECT_FALSE(LooksLikePipeDreamProfile(" \n"));
  EXPECT_FALSE(LooksLikePipeDreamProfile("[1, 2]"));
  EXPECT_FALSE(LooksLikePipeDreamProfile("precious"));  // not JSON either: the JSON reader says so
  EXPECT_FALSE(LooksLikePipeDreamProfile("{\"description\": \"a -- b\"}"));
  EXPECT_TRUE(LooksLikePipeDreamProfile("\tnode1 -- node2\n"));
  EXPECT_TRUE(LooksLikePipeDreamProfile(kGoodLine));
  EXPECT_TRUE(LooksLikePipeDreamProfile(ReadAll(Fixture("pipedream/branchy/graph.txt"))));
}

}  // namespace
}  // namespace pipetwin
