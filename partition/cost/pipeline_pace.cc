#include "partition/cost/pipeline_pace.h"

#include <algorithm>

namespace pipetwin {

double OneFOneBPaceMs(const std::vector<double>& compute, const std::vector<double>& activation,
                      const std::vector<double>& gradient) {
  const size_t d = compute.size();
  double t = 0;
  for (size_t s = 0; s + 1 < d; ++s) t = std::max({t, activation[s], gradient[s]});
  for (size_t s = 0; s < d; ++s) {
    double sum = 0;
    for (size_t e = s; e < d; ++e) {
      sum += compute[e] + (e > s ? activation[e - 1] + gradient[e - 1] : 0);
      t = std::max(t, sum / static_cast<double>(e - s + 1));
    }
  }
  return t;
}

}  // namespace pipetwin
