#include "workloads/networks/network.h"

namespace pipetwin {

const std::vector<int64_t>& Network::ShapeOf(int layer) const {
  return layer < 0 ? input.sample_shape : layers[layer].output_shape;
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace pipetwin
