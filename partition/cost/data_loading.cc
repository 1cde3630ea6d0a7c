#include "partition/cost/data_loading.h"

#include <algorithm>

namespace pipetwin {

const char* DataLoadingName(DataLoading mode) {
  return mode == DataLoading::kSerial ? "serial" : "overlapped";
}

std::optional<DataLoading> ParseDataLoading(const std::string& name) {
  if (name == "overlapped") return DataLoading::kOverlapped;
  if (name == "serial") return DataLoading::kSerial;
  return std::nullopt;
}

double LoadMs(const Workload& w, double samples) {
  return w.data_loading_ms * samples / static_cast<double>(w.reference.batch_size);
}

double InputStageMs(double compute_ms, double load_ms, DataLoading mode) {
  return mode == DataLoading::kSerial ? compute_ms + load_ms : std::max(compute_ms, load_ms);
}

}  // namespace pipetwin
