#include "partition/report/csv.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "partition/util/format.h"
#include "partition/util/schema_version.h"

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

namespace {

bool Named(const std::vector<std::string>& names, const std::string& column) {
  return std::find(names.begin(), names.end(), column) != names.end();
}

std::string Line(const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) out += f + ",";
  out.back() = '\n';
  return out;
}

// The leading columns, schema_version, then the report's columns not already named.
std::vector<std::string> Fields(const std::vector<std::string>& names,
                                const std::vector<std::string>& values,
                                const std::vector<std::string>& report_fields,
                                const std::string& schema = std::to_string(kSchemaVersion)) {
  std::vector<std::string> fields;
  for (const std::string& v : values) fields.push_back(CsvField(v));
  fields.push_back(schema);
  for (size_t c = 0; c < std::size(kCsvColumns); ++c)
    if (!Named(names, kCsvColumns[c])) fields.push_back(report_fields[c]);
  return fields;
}

}  // namespace

std::string ReportCsvHeader(const std::vector<std::string>& names) {
  return Line(Fields(names, names, {std::begin(kCsvColumns), std::end(kCsvColumns)},
                     "schema_version"));
}

std::string ReportCsvRow(const Report& r, const std::vector<std::string>& names,
                         const std::vector<std::string>& values) {
  double staleness_max = 0, staleness_sum = 0, intra = 0, inter = 0;
  for (const StageSummary& s : r.stages) {
    staleness_max = std::max(staleness_max, s.staleness_max);
    staleness_sum += s.staleness_mean;
  }
  for (const CommunicationLevel& c : r.communication) (c.level == 0 ? intra : inter) += c.Bytes();
  const double staleness_mean = r.stages.empty() ? 0 : staleness_sum / r.stages.size();
  return Line(Fields(
      names, values,
      {CsvField(r.scenario), r.schedule, r.planner, std::to_string(r.pipeline_depth),
       std::to_string(r.worker_count), std::to_string(r.microbatch_size),
       std::to_string(r.microbatches_per_iteration), Number(r.samples_per_s),
       Number(r.iteration_s), Number(r.bubble_fraction), Number(r.exposed_communication_s),
       Number(r.peak_memory_bytes), std::string(r.over_capacity ? "true" : "false"),
       Number(staleness_mean), Number(staleness_max), Number(intra), Number(inter),
       std::string()}));
}

std::string ReportCsvErrorRow(const std::vector<std::string>& names,
                              const std::vector<std::string>& values,
                              const std::string& error) {
  std::vector<std::string> empty(std::size(kCsvColumns));
  empty.back() = CsvField(error);
  return Line(Fields(names, values, empty));
}

}  // namespace pipetwin
