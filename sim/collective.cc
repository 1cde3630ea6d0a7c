#include "sim/collective.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "sim/setup.h"

namespace pipetwin::sim {

std::vector<GradientBucket> GradientBuckets(const std::vector<double>& layer_gradient_bytes,
                                            const std::vector<double>& layer_backward_times,
                                            int max_buckets) {
  const size_t layers = layer_gradient_bytes.size();
  double total_bytes = 0, total_s = 0;
  for (size_t k = 0; k < layers; ++k) {
    total_bytes += layer_gradient_bytes[k];
    total_s += layer_backward_times[k];
  }
  const size_t count = std::min<size_t>(std::max(max_buckets, 1), layers);
  std::vector<GradientBucket> buckets;
  GradientBucket bucket;
  double bytes_so_far = 0;
  for (size_t k = 0; k < layers; ++k) {
    bucket.bytes += layer_gradient_bytes[k];
    bucket.backward_fraction += total_s > 0 ? layer_backward_times[k] / total_s : 1.0 / layers;
    bytes_so_far += layer_gradient_bytes[k];
    // Close the bucket once it reaches its share of the bytes (the last one takes the rest).
    const double share = total_bytes * static_cast<double>(buckets.size() + 1) / count;
    if (k + 1 == layers || (bytes_so_far >= share && buckets.size() + 1 < count)) {
      buckets.push_back(bucket);
      bucket = GradientBucket();
    }
  }
  return buckets;
}

}  // namespace pipetwin::sim
