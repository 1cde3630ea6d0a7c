// Where a scenario's workload comes from: a generator with its settings, a file (pipetwin JSON or
// PipeDream graph.txt), or a workload written inline.
//
//   {"generator": "gpt", "layers": 48, "hidden": 1600, "heads": 25, "sequence": 1024}
//   {"generator": "vgg16", "image_size": 224, "batch": 64}
//   {"file": "profiles/vgg16.json"}                 (relative to the scenario's folder)
//   {"name": "tiny", "layers": [ {...}, ... ]}       (inline, the workload file schema)
#pragma once

#include <string>

#include "partition/util/json_reader.h"
#include "partition/model/workload.h"
#include "workloads/networks/network.h"
#include "partition/model/cluster.h"

namespace pipetwin {

// Builds the workload `spec` describes; generators time layers on the cluster's device (the
// analytic model, workloads/analytic/analytic.h), the megatron generator on its device and its
// servers' links (workloads/megatron). Relative file paths are resolved against `base_dir`.
// Throws InputError naming the file and JSON path.
Workload WorkloadFromSource(JsonReader spec, const Cluster& cluster,
                            const std::string& base_dir);

// Loads a workload file of either format (JSON or PipeDream graph.txt), telling them apart by
// content.
Workload LoadAnyWorkloadFile(const std::string& path);

// The names generators answer to: gpt, bert, vgg16, resnet50, mlp, megatron.
const std::vector<std::string>& GeneratorNames();

// A generator and its settings, as a workload source names them.
struct GeneratorSpec {
  std::string generator;  // one of GeneratorNames()
  MlpConfig mlp;
  TransformerConfig transformer;
  CnnConfig cnn;
};

// A generator source's settings with the defaults the scenario schema documents. Every key is
// marked read; the caller Finish()es. Throws InputError when "generator" is missing or unknown.
GeneratorSpec ReadGeneratorSpec(JsonReader& spec);
// The generator's network (networks/network.h), which the analytic model and the executor both
// build from. Throws InputError as the descriptions do.
Network DescribeNetwork(const GeneratorSpec& spec);

}  // namespace pipetwin
