#include "partition/util/limits.h"

namespace pipetwin {

std::string DescribeRange(int64_t min, const Limit& limit) {
  return "an integer from " + std::to_string(min) + " to " + std::to_string(limit.max) +
         " (pipetwin's limit for " + limit.what + ")";
}

}  // namespace pipetwin
