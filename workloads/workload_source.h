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
#include "workloads/cnn.h"
#include "workloads/device_model.h"
#include "workloads/transformer.h"

namespace pipetwin {

// Builds the workload `spec` describes; generators time layers on `device`. Relative file paths
// are resolved against `base_dir`. Throws InputError naming the file and JSON path.
Workload WorkloadFromSource(JsonReader spec, const DeviceModel& device,
                            const std::string& base_dir);

// Loads a workload file of either format (JSON or PipeDream graph.txt), telling them apart by
// content.
Workload LoadAnyWorkloadFile(const std::string& path);

// The names generators answer to: gpt, bert, vgg16, resnet50, mlp.
const std::vector<std::string>& GeneratorNames();

// A generator spec's settings with the defaults the scenario schema documents (the executor
// builds its models from the same settings). Every key is marked read; the caller Finish()es.
TransformerConfig TransformerConfigFromSpec(JsonReader& spec, const std::string& generator);
CnnConfig CnnConfigFromSpec(JsonReader& spec);

}  // namespace pipetwin
