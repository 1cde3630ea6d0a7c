// The settings of each network generator, as a scenario's workload source gives them
// ({"generator": "gpt", "layers": 48, ...}; scenario/workload_source.h reads them).
#pragma once

#include <string>

namespace pipetwin {

// A chain of fully connected layers, ReLU after every layer but the last: the executor's
// smallest model (tests, the Fashion-MNIST check, the 2-core benchmark).
struct MlpConfig {
  int layers = 4;           // fully connected layers (>= 1)
  int input = 784;          // input features (784: a flattened 28 x 28 image)
  int width = 1024;         // features of every hidden layer
  int classes = 10;         // outputs of the last layer
  int batch = 1;            // samples: the reference batch size of the times
  double dtype_bytes = 4;   // fp32
};

// GPT (decoder) and BERT (encoder): an embedding, `layers` blocks and a head.
struct TransformerConfig {
  std::string kind = "gpt";  // "gpt" (decoder, tied output head) or "bert" (encoder)
  int layers = 24;
  int hidden = 1024;
  int heads = 16;
  int sequence = 1024;       // tokens per sample; also the rows of the position table
  int vocabulary = 50257;
  int microbatch = 1;        // samples per micro-batch: the reference batch size of the times
  double dtype_bytes = 2;    // bytes per parameter and activation element (fp16/bf16)
};

// VGG-16 and ResNet-50.
struct CnnConfig {
  int image_size = 224;      // square input, >= 32 (both networks halve it five times)
  int batch = 1;             // samples: the reference batch size of the times
  int classes = 1000;
  double width = 1.0;        // channel multiplier (1 = the published network): every conv's
                             // channels and VGG's 4096-wide hidden FC layers, rounded, >= 1;
                             // the classifier keeps `classes` outputs
  double dtype_bytes = 4;    // fp32
};

}  // namespace pipetwin
