// Analytic VGG-16 and ResNet-50 workloads (per-layer FLOPs, parameters, activation sizes).
//
// VGG-16: Simonyan and Zisserman, ICLR 2015, configuration D: 13 conv 3x3 layers, 5 max-pools,
// 3 fully-connected layers; 138,357,544 parameters at 224x224 with 1,000 classes. A chain of 21
// layers: conv1_1 .. conv5_3, pool1 .. pool5, fc6, fc7, fc8. Each ReLU (and the dropout after
// fc6 and fc7) is folded into the layer before it: in-place, no parameters, no layer of its own.
// The fully-connected layers read the flattened 512 x (S/32)^2 map (no adaptive pooling), so
// fc6 has 25,088 inputs at S = 224 and 512 at S = 32.
//
// ResNet-50: He et al., CVPR 2016, table 1: bottleneck blocks [3, 4, 6, 3]; 25,557,032
// parameters with each batch norm's scale and shift (2 per channel; running statistics are not
// trainable). Down-sampling on the 3x3 convolution of a stage's first block (the "v1.5" of
// torchvision and most benchmarks: 4.1 GMACs at 224, against 3.9 with the paper's strided 1x1).
// A DAG in Caffe's layer names: conv1, pool1, then per block (e.g. res2a) the conv path
// res2a_branch2a (1x1) -> res2a_branch2b (3x3) -> res2a_branch2c (1x1), the projection shortcut
// res2a_branch1 (1x1, first block of each stage only) and the add res2a, whose inputs are
// branch2c and the shortcut (the projection, or the block's input itself); then pool5 (global
// average) and fc. Each batch norm and ReLU is folded into the layer before it.
//
// Convolution FLOPs = 2 k_h k_w C_in C_out H_out W_out per sample (a multiply-add is two FLOPs;
// biases and normalisation not counted); fully connected 2 in out; backward = 2x forward.
//
//   CnnConfig c;  c.batch = 32;
//   Workload vgg = GenerateVgg16(c, DeviceModel{});      // name "vgg16-224"
//   Workload resnet = GenerateResnet50(c, DeviceModel{});  // name "resnet50-224", not a chain
#pragma once

#include "partition/model/workload.h"
#include "workloads/device_model.h"

namespace pipetwin {

struct CnnConfig {
  int image_size = 224;      // square input, >= 32 (both networks halve it five times)
  int batch = 1;             // samples: the reference batch size of the times
  int classes = 1000;
  double width = 1.0;        // channel multiplier (1 = the published network): every conv's
                             // channels and VGG's 4096-wide hidden FC layers, rounded, >= 1;
                             // the classifier keeps `classes` outputs
  double dtype_bytes = 4;    // fp32
};

// Throw InputError naming the field on out-of-range settings: an integer below 1, an image
// below 32 pixels, a width or dtype_bytes not > 0.
Workload GenerateVgg16(const CnnConfig& config, const DeviceModel& device);
Workload GenerateResnet50(const CnnConfig& config, const DeviceModel& device);

}  // namespace pipetwin
