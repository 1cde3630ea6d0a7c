// Workload JSON: round trip, topological sorting, and every bad-input case the foundation issue
// names (malformed JSON, unknown keys, missing/negative/zero/NaN values, cycles, dangling edges).
#include "partition/model/workload.h"

#include <gtest/gtest.h>

#include <cmath>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

const char* kDiamond = R"({
  "name": "diamond",
  "reference": {"batch_size": 8, "device": "V100"},
  "layers": [
    {"id": "in",   "forward_ms": 1, "backward_ms": 2, "activation_bytes": 10, "parameter_bytes": 0},
    {"id": "join", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 5, "parameter_bytes": 4,
     "inputs": ["left", "right"]},
    {"id": "left", "forward_ms": 2, "backward_ms": 4, "activation_bytes": 20, "parameter_bytes": 40,
     "inputs": ["in"], "forward_flops": 1e9},
    {"id": "right", "forward_ms": 3, "backward_ms": 6, "activation_bytes": 30,
     "parameter_bytes": 80, "inputs": ["in"], "output_bytes": [10, 20]}
  ]
})";

std::string ErrorOf(const std::string& text) {
  try {
    WorkloadFromJson(ParseJsonText(text, "w.json"), "w.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Workload, SortsDagTopologicallyAndKeepsEdges) {
  Workload w = WorkloadFromJson(ParseJsonText(kDiamond, "w.json"), "w.json");
  ASSERT_EQ(w.LayerCount(), 4);
  EXPECT_EQ(w.layers[0].id, "in");
  EXPECT_EQ(w.layers[1].id, "left");
  EXPECT_EQ(w.layers[2].id, "right");
  EXPECT_EQ(w.layers[3].id, "join");
  EXPECT_EQ(w.layers[3].inputs, (std::vector<int>{1, 2}));
  EXPECT_FALSE(w.IsChain());
  EXPECT_DOUBLE_EQ(w.TotalForwardMs(), 7);
  EXPECT_DOUBLE_EQ(w.TotalBackwardMs(), 13);
  EXPECT_DOUBLE_EQ(w.TotalParameterBytes(), 124);
  EXPECT_DOUBLE_EQ(w.TotalParameters(), 31);  // 4 bytes per parameter by default
  EXPECT_EQ(w.reference.batch_size, 8);
  EXPECT_EQ(*w.layers[1].forward_flops, 1e9);
  EXPECT_EQ(w.layers[2].output_bytes, (std::vector<double>{10, 20}));
}

TEST(Workload, JsonRoundTripIsExact) {
  Workload w = WorkloadFromJson(ParseJsonText(kDiamond, "w.json"), "w.json");
  Workload again = WorkloadFromJson(WorkloadToJson(w), "again.json");
  EXPECT_EQ(WorkloadToJson(w), WorkloadToJson(again));
  std::string dir = testing::TemporaryDirectory();
  SaveWorkloadFile(w, dir + "/saved.json");
  EXPECT_EQ(WorkloadToJson(LoadWorkloadFile(dir + "/saved.json")), WorkloadToJson(w));
  // What `pipetwin profile` adds: the optimizer step and the stash of each layer.
  w.layers[1].update_ms = 0.25;
  w.layers[1].update_sharded_ms = 0.125;
  w.layers[1].stash_bytes = 4096;
  w.layers[1].gradient_add_ms = 0.0625;
  w.layers[1].update_copy_ms = 0.03125;
  const Workload profiled = WorkloadFromJson(WorkloadToJson(w), "p.json");
  EXPECT_EQ(profiled.layers[1].gradient_add_ms, 0.0625);
  EXPECT_FALSE(profiled.layers[0].gradient_add_ms.has_value());
  EXPECT_EQ(profiled.layers[1].update_copy_ms, 0.03125);
  EXPECT_EQ(profiled.layers[1].update_ms, 0.25);
  EXPECT_EQ(profiled.layers[1].update_sharded_ms, 0.125);
  EXPECT_FALSE(profiled.layers[0].update_sharded_ms.has_value());
  EXPECT_EQ(profiled.StashBytes(1), 4096);
  EXPECT_FALSE(profiled.layers[0].update_ms.has_value());
}

TEST(Workload, AProfilesSpreadAndStabilitySurviveJsonAndGiveItsEdges) {
  Workload w = WorkloadFromJson(ParseJsonText(kDiamond, "w.json"), "w.json");
  EXPECT_FALSE(w.HasSpread());
  w.layers[0].forward_ms = 1.0;
  w.layers[0].forward_ms_spread = 0.1;
  w.layers[1].backward_ms = 2.0;
  w.layers[1].backward_ms_spread = 0.5;
  w.layers[1].update_ms = 0.25;
  w.layers[1].update_ms_spread = 0.5;  // wider than the time: the fast end stops at 0
  ProfileStability q;
  q.rounds = 12;
  q.seconds = 6.5;
  q.step_ms = 9.5;
  q.step_spread_ms = 0.2;
  q.lowest_round_ms = 9;
  q.highest_round_ms = 10.5;
  q.target_spread = 0.02;
  q.settled = false;
  q.disturbances = {"round 3 of 12 took 10.50 ms a step"};
  q.one_core_gflops = 95.5;
  w.stability = q;
  w.own_core = {0.95, 0.9, 0};  // no optimizer step measured on a core of its own
  const Workload back = WorkloadFromJson(WorkloadToJson(w), "p.json");
  EXPECT_EQ(WorkloadToJson(back), WorkloadToJson(w));
  ASSERT_TRUE(back.stability.has_value());
  EXPECT_EQ(back.stability->one_core_gflops, 95.5);
  EXPECT_EQ(back.stability->disturbances, q.disturbances);
  EXPECT_EQ(back.stability->rounds, 12);
  EXPECT_TRUE(back.HasSpread());
  EXPECT_EQ(back.own_core.forward, 0.95);
  EXPECT_EQ(back.own_core.backward, 0.9);
  EXPECT_EQ(back.own_core.update, 0);
  EXPECT_FALSE(WorkloadToJson(Workload()).contains("own_core"));  // not measured, not written
  for (const auto& [bad, where] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"forward", -0.5}}, "own_core.forward"}, {{{"fowrard", 0.9}}, "fowrard"}}) {
    nlohmann::json doc = WorkloadToJson(w);
    doc["own_core"] = bad;
    try {
      WorkloadFromJson(doc, "p.json");
      FAIL() << bad.dump() << " was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("p.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  }

  const Workload slow = w.AtSpreadEdge(+1), fast = w.AtSpreadEdge(-1);
  EXPECT_DOUBLE_EQ(slow.layers[0].forward_ms, 1.1);
  EXPECT_DOUBLE_EQ(fast.layers[0].forward_ms, 0.9);
  EXPECT_DOUBLE_EQ(slow.layers[1].backward_ms, 2.5);
  EXPECT_DOUBLE_EQ(fast.layers[1].backward_ms, 1.5);
  EXPECT_DOUBLE_EQ(*slow.layers[1].update_ms, 0.75);
  EXPECT_DOUBLE_EQ(*fast.layers[1].update_ms, 0.0);
  EXPECT_DOUBLE_EQ(slow.layers[0].backward_ms, w.layers[0].backward_ms);  // no spread: kept

  // Three profiles taken at different times: forward 1.0, 1.1, 1.2 ms; their mean 1.1, its
  // interval 4.303 x 0.1 / sqrt(3) = 0.24843 wider than the widest own spread / sqrt(3).
  std::vector<Workload> three(3, w);
  for (int p = 0; p < 3; ++p) {
    three[p].layers[0].forward_ms = 1.0 + 0.1 * p;
    three[p].stability->step_ms = 9 + p;
    three[p].stability->one_core_gflops = p == 1 ? 0 : 90 + 20 * p / 2;  // 90, not read, 110
    three[p].own_core = p == 2 ? OwnCoreShare{} : OwnCoreShare{0.9 + 0.04 * p, 0.8, 0.99};
  }
  const Workload mean = MeanOfProfiles(three, {"a.json", "b.json", "c.json"});
  EXPECT_NEAR(mean.layers[0].forward_ms, 1.1, 1e-12);
  EXPECT_NEAR(*mean.layers[0].forward_ms_spread, 4.303 * 0.1 / std::sqrt(3.0), 1e-9);
  // Equal backward times: the spread is the widest own spread over sqrt(3).
  EXPECT_NEAR(*mean.layers[1].backward_ms_spread, 0.5 / std::sqrt(3.0), 1e-12);
  EXPECT_EQ(mean.stability->rounds, 36);
  EXPECT_NEAR(mean.stability->step_ms, 10, 1e-12);
  EXPECT_NEAR(mean.stability->one_core_gflops, 100, 1e-12);  // the profiles that read it
  EXPECT_NEAR(mean.own_core.forward, 0.92, 1e-12);  // the profiles that measured it: 0.9, 0.94
  EXPECT_NEAR(mean.own_core.backward, 0.8, 1e-12);
  EXPECT_NEAR(mean.own_core.update, 0.99, 1e-12);
  EXPECT_EQ(mean.stability->disturbances.size(), 3u);
  EXPECT_EQ(mean.stability->disturbances[2].rfind("profile 3 of 3: round 3", 0), 0u);
  three[2].layers[1].id = "other";
  try {
    MeanOfProfiles(three, {"a.json", "b.json", "c.json"});
    FAIL() << "profiles of different layers were averaged";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("c.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layers[1].id"), std::string::npos) << e.what();
  }

  nlohmann::json bad = WorkloadToJson(w);
  bad["layers"][0]["forward_ms_spread"] = -1;
  EXPECT_THROW(WorkloadFromJson(bad, "bad.json"), InputError);
  bad = WorkloadToJson(w);
  bad["stability"]["typo"] = 1;
  try {
    WorkloadFromJson(bad, "bad.json");
    FAIL() << "an unknown key in stability was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stability"), std::string::npos) << e.what();
  }
}

// An analytic layer's zero-bubble split (backward_input_ms, backward_weight_ms and its
// collectives' I/W figures) is kept through a file, and moves with the backward at a spread's
// edge.
TEST(Workload, ZeroBubbleSplitSurvivesJsonAndMovesWithTheBackward) {
  Workload w = WorkloadFromJson(ParseJsonText(kDiamond, "w.json"), "w.json");
  Layer& l = w.layers[1];
  l.backward_input_ms = 0.75 * l.backward_ms;
  l.backward_weight_ms = 0.5 * l.backward_ms;
  l.weight_stash_bytes = 12345;
  GroupCollectives c;
  c.input_exposed_ms = 0.1 * l.backward_ms;
  c.input_bytes = 64;
  c.weight_exposed_ms = 0.05 * l.backward_ms;
  c.weight_bytes = 32;
  l.collectives = c;
  const Workload back = WorkloadFromJson(WorkloadToJson(w), "again.json");
  EXPECT_EQ(WorkloadToJson(back), WorkloadToJson(w));
  ASSERT_TRUE(back.layers[1].backward_input_ms.has_value());
  EXPECT_DOUBLE_EQ(*back.layers[1].backward_weight_ms, 0.5 * l.backward_ms);
  EXPECT_DOUBLE_EQ(back.layers[1].collectives->weight_bytes, 32);
  EXPECT_DOUBLE_EQ(*back.layers[1].weight_stash_bytes, 12345);
  EXPECT_FALSE(back.layers[0].backward_input_ms.has_value());
  l.backward_ms_spread = 0.5 * l.backward_ms;
  const Workload slow = w.AtSpreadEdge(+1);
  EXPECT_DOUBLE_EQ(*slow.layers[1].backward_input_ms, 0.75 * 1.5 * l.backward_ms);
  EXPECT_DOUBLE_EQ(*slow.layers[1].backward_weight_ms, 0.5 * 1.5 * l.backward_ms);
}

TEST(Workload, LayersWithoutInputsFormAChain) {
  Workload w = WorkloadFromJson(ParseJsonText(R"({"layers": [
      {"forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1},
      {"forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1},
      {"forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1}]})",
                                                  "c.json"),
                                    "c.json");
  EXPECT_TRUE(w.IsChain());
  EXPECT_EQ(w.layers[2].id, "layer2");
}

TEST(WorkloadBadInput, MalformedJsonNamesLineAndColumn) {
  std::string e = ErrorOf("{\n  \"layers\": [\n    {\"id\": 1,,}\n  ]\n}");
  EXPECT_NE(e.find("w.json: line 3 column"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed JSON"), std::string::npos) << e;
}

TEST(WorkloadBadInput, EachFaultNamesItsJsonPath) {
  const std::string ok_layer =
      R"({"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1})";
  struct Case {
    std::string text;
    std::string expected;
  } cases[] = {
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "colour": "red"}]})",
       "w.json: layers[0].colour: unknown key"},
      {R"({"layerz": []})", "w.json: layers: missing (required)"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "update_ms": -1}]})",
       "w.json: layers[0].update_ms: expected a number >= 0, got -1"},
      {R"({"layers": []})", "w.json: layers: expected at least one layer, got none"},
      {R"({"layers": [{"id": "a", "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1}]})",
       "w.json: layers[0].forward_ms: missing (required)"},
      {R"({"layers": [{"id": "a", "forward_ms": -5, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1}]})",
       "w.json: layers[0].forward_ms: expected a number >= 0, got -5"},
      {R"({"layers": [{"id": "a", "forward_ms": "fast", "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1}]})",
       "w.json: layers[0].forward_ms: expected a number >= 0, got \"fast\""},
      {R"({"reference": {"batch_size": 0}, "layers": [)" + ok_layer + "]}",
       "w.json: reference.batch_size: expected an integer from 1 to 16777216 (pipetwin's "
       "limit for samples in a batch), got 0"},
      {R"({"parameter_dtype_bytes": 0, "layers": [)" + ok_layer + "]}",
       "w.json: parameter_dtype_bytes: expected a number > 0, got 0"},
      {R"({"layers": [)" + ok_layer + "," + ok_layer + "]}",
       "w.json: layers[1].id: duplicate layer id \"a\""},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "inputs": ["ghost"]}]})",
       "w.json: layers[0].inputs[0]: dangling edge: no layer has id \"ghost\""},
      {R"({"layers": [
          {"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1, "inputs": ["b"]},
          {"id": "b", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1, "parameter_bytes": 1, "inputs": ["a"]}]})",
       "w.json: layers: the layer graph has a cycle: a -> b -> a"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "inputs": ["a"]}]})",
       "w.json: layers[0].inputs[0]: layer \"a\" feeds itself (a cycle)"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 30,
          "parameter_bytes": 1, "output_bytes": [10, 10]}]})",
       "w.json: layers[0].output_bytes: expected outputs summing to activation_bytes (30), got 20"},
      {R"({"parameter_bytes": 99, "layers": [)" + ok_layer + "]}",
       "w.json: parameter_bytes: expected the sum over the layers (1), got 99"},
      {R"([1, 2])", "w.json: (root): expected an object, got an array"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "backward_input_ms": 0.6}]})",
       "w.json: layers[0].backward_weight_ms: expected a number beside backward_input_ms (both "
       "or neither)"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "collectives": {"weight_bytes": 5}}]})",
       "w.json: layers[0].collectives.weight_bytes: expected the I/W split of the "
       "collectives only with the layer's backward_input_ms and backward_weight_ms"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "backward_input_ms": 0.6, "backward_weight_ms": 0.5,
          "collectives": {"input_exposed_ms": 0.7}}]})",
       "w.json: layers[0].collectives.input_exposed_ms: expected at most the layer's "
       "backward_input_ms (0.6), got 0.7"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "update_ms": 0.5, "update_sharded_ms": 0.75}]})",
       "w.json: layers[0].update_sharded_ms: expected at most the layer's update_ms (0.5), got "
       "0.75"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "gradient_add_ms": 1.5}]})",
       "w.json: layers[0].gradient_add_ms: expected at most the layer's backward_ms (1), got 1.5"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "gradient_add_ms": -1}]})",
       "w.json: layers[0].gradient_add_ms: expected a number >= 0"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "update_ms": 0.5, "update_copy_ms": 0.75}]})",
       "w.json: layers[0].update_copy_ms: expected at most the layer's update_ms (0.5), got "
       "0.75"},
      {R"({"layers": [{"id": "a", "forward_ms": 1, "backward_ms": 1, "activation_bytes": 1,
          "parameter_bytes": 1, "update_sharded_ms": 0.75}]})",
       "w.json: layers[0].update_sharded_ms: expected at most the layer's update_ms (0), got "
       "0.75"},
  };
  for (const Case& c : cases) {
    std::string e = ErrorOf(c.text);
    EXPECT_EQ(e.substr(0, c.expected.size()), c.expected) << "input: " << c.text;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  }
}

TEST(WorkloadBadInput, NanAndInfinityAreRejectedWhenBuiltInCode) {
  Workload w;
  Layer a;
  a.id = "a";
  a.forward_ms = std::nan("");
  w.layers.push_back(a);
  try {
    ValidateAndSortWorkload(w, "mem");
    FAIL() << "NaN accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "mem: layers[0].forward_ms: expected a number >= 0, got NaN");
  }
}

TEST(WorkloadBadInput, MissingFileIsAnInputError) {
  EXPECT_THROW(LoadWorkloadFile("/nonexistent/w.json"), InputError);
}

}  // namespace
}  // namespace pipetwin
