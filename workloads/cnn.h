// Analytic VGG-16 and ResNet-50 workloads (per-layer FLOPs, parameters, activation sizes).
//
// VGG-16: Simonyan and Zisserman, ICLR 2015, configuration D: 13 conv 3x3 layers, 5 max-pools,
// 3 fully-connected layers; 138.4M parameters at 224x224 with 1,000 classes.
// ResNet-50: He et al., CVPR 2016, table 1: bottleneck blocks [3, 4, 6, 3]; 25.6M parameters.
// Convolution FLOPs = 2 * k_h * k_w * C_in * C_out * H_out * W_out per sample (multiply-add as two
// FLOPs); backward = 2x forward.
#pragma once

#include "partition/workload.h"
#include "workloads/device_model.h"

namespace pipetwin {

struct CnnConfig {
  int image_size = 224;      // square input
  int batch = 1;             // samples: the reference batch size of the times
  int classes = 1000;
  double width = 1.0;        // channel multiplier (1 = the published network)
  double dtype_bytes = 4;    // fp32
};

// Throws InputError on out-of-range settings (an image too small for the network's down-sampling).
Workload GenerateVgg16(const CnnConfig& config, const DeviceModel& device);
Workload GenerateResnet50(const CnnConfig& config, const DeviceModel& device);

}  // namespace pipetwin
