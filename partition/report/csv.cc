#include "partition/report/csv.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "partition/util/format.h"

namespace pipetwin {

namespace {

const char* const kCsvColumns[] = {
    "scenario", "schedule", "planner", "pipeline_depth", "worker_count", "microbatch_size",
    "microbatches_per_iteration", "samples_per_s", "iteration_s", "bubble_fraction",
    "exposed_communication_s", "peak_memory_bytes", "over_capacity", "staleness_mean",
    "staleness_max", "intra_server_bytes", "inter_server_bytes", "error"};

std::string Number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", x);
  return buffer;
}

}  // namespace

std::string ReportCsvHeader(const std::vector<std::string>& extra) {
  std::string out;
  for (const std::string& e : extra) out += CsvField(e) + ",";
  for (const char* c : kCsvColumns) out += std::string(c) + ",";
  out.back() = '\n';
  return out;
}

std::string ReportCsvRow(const Report& r, const std::vector<std::string>& extra) {
  double staleness_max = 0, staleness_sum = 0, intra = 0, inter = 0;
  for (const StageSummary& s : r.stages) {
    staleness_max = std::max(staleness_max, s.staleness_max);
    staleness_sum += s.staleness_mean;
  }
  for (const CommunicationLevel& c : r.communication) (c.level == 0 ? intra : inter) += c.Bytes();
  const double staleness_mean = r.stages.empty() ? 0 : staleness_sum / r.stages.size();
  std::vector<std::string> fields = extra;
  for (auto& f : fields) f = CsvField(f);
  for (const std::string& f :
       {CsvField(r.scenario), r.schedule, r.planner, std::to_string(r.pipeline_depth),
        std::to_string(r.worker_count), std::to_string(r.microbatch_size),
        std::to_string(r.microbatches_per_iteration), Number(r.samples_per_s),
        Number(r.iteration_s), Number(r.bubble_fraction), Number(r.exposed_communication_s),
        Number(r.peak_memory_bytes), std::string(r.over_capacity ? "true" : "false"),
        Number(staleness_mean), Number(staleness_max), Number(intra), Number(inter),
        std::string()})
    fields.push_back(f);
  std::string out;
  for (const std::string& f : fields) out += f + ",";
  out.back() = '\n';
  return out;
}

std::string ReportCsvErrorRow(const std::vector<std::string>& extra,
                              const std::string& error) {
  std::string out;
  for (const std::string& e : extra) out += CsvField(e) + ",";
  for (size_t i = 0; i + 1 < std::size(kCsvColumns); ++i) out += ",";
  return out + CsvField(error) + "\n";
}

}  // namespace pipetwin
