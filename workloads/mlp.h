// Analytic multi-layer perceptron workload: a chain of fully connected layers, ReLU after every
// layer but the last. The executor's smallest model (tests, the Fashion-MNIST check, the 2-core
// benchmark), and a workload the planners and the simulator take like any other.
//
// Layer i maps `input` (i = 0) or `width` features to `width` (or `classes` for the last layer):
//   parameters  in out + out
//   FLOPs       2 in out per sample forward; backward 2x forward (input and weight gradients)
//   activation  out x dtype bytes per sample
//
//   MlpConfig c;  c.layers = 4;  c.width = 512;  c.batch = 32;
//   Workload w = GenerateMlp(c, DeviceModel{});   // "fc0" .. "fc3", name "mlp-4x512"
#pragma once

#include "partition/util/json_reader.h"
#include "partition/model/workload.h"
#include "workloads/device_model.h"

namespace pipetwin {

struct MlpConfig {
  int layers = 4;           // fully connected layers (>= 1)
  int input = 784;          // input features (784: a flattened 28 x 28 image)
  int width = 1024;         // features of every hidden layer
  int classes = 10;         // outputs of the last layer
  int batch = 1;            // samples: the reference batch size of the times
  double dtype_bytes = 4;   // fp32
};

// Throws InputError naming the field when a setting is out of range (an integer below 1,
// dtype_bytes not > 0).
Workload GenerateMlp(const MlpConfig& config, const DeviceModel& device);

// Reads {"generator": "mlp", "layers", "input", "width", "classes", "batch", "dtype_bytes"}
// (every setting optional) and generates the workload; unknown keys are errors.
MlpConfig MlpConfigFromSpec(JsonReader& spec);
Workload GenerateMlpFromSpec(JsonReader& spec, const DeviceModel& device);

}  // namespace pipetwin
