#include "partition/report/validation_table.h"

#include <cmath>
#include <algorithm>
#include <iomanip>
#include <optional>
#include <sstream>

#include "partition/report/compare.h"
#include "partition/util/format.h"

namespace pipetwin {

namespace {

// The figures of one validation row.
struct RowFigures {
  std::string schedule, model;
  int stages = 0, workers = 0;
  double predicted_rate = 0, measured_rate = 0, rate_error = 0;
  double predicted_peak = 0, measured_peak = 0, peak_error = 0;
  bool staleness_match = false;
  // The measured run knows its throughput alone (Comparison::throughput_only, e.g. torch's
  // runtime): its memory and staleness cells are empty and count toward neither target.
  bool throughput_only = false;
  // Measured on a GPU: the CUDA caching allocator's peaks, the largest over the devices (the
  // tensor bytes above count what the schedule holds; these, what the allocator took for it).
  std::optional<double> allocated_peak, reserved_peak;
};

// The largest allocator peaks over a measured report's devices; none when it ran on CPUs.
void AllocatorPeaks(const nlohmann::json& measured, RowFigures& f) {
  if (!measured.contains("devices")) return;
  for (const nlohmann::json& d : measured.at("devices")) {
    if (!d.contains("cuda_allocator")) continue;
    const nlohmann::json& a = d.at("cuda_allocator");
    f.allocated_peak = std::max(f.allocated_peak.value_or(0), a.value("allocated_peak_bytes", 0.0));
    f.reserved_peak = std::max(f.reserved_peak.value_or(0), a.value("reserved_peak_bytes", 0.0));
  }
}

RowFigures FiguresOf(const ValidationRow& row) {
  const nlohmann::json& c = row.comparison;
  const nlohmann::json& p = c.at("predicted");
  const nlohmann::json& m = c.at("measured");
  RowFigures f;
  f.schedule = m.value("schedule", "");
  f.model = m.value("scenario", "");
  f.stages = m.value("pipeline_depth", 0);
  f.workers = m.value("worker_count", 0);
  f.predicted_rate = p.value("samples_per_s", 0.0);
  f.measured_rate = m.value("samples_per_s", 0.0);
  f.rate_error = RelativeError(f.predicted_rate, f.measured_rate);
  f.predicted_peak = p.value("peak_memory_bytes", 0.0);
  f.measured_peak = m.value("peak_memory_bytes", 0.0);
  f.peak_error = RelativeError(f.predicted_peak, f.measured_peak);
  f.throughput_only = c.value("measured_figures", "all") == "throughput";
  f.staleness_match = !f.throughput_only && c.value("staleness_match", false);
  if (f.throughput_only) f.peak_error = 0;
  AllocatorPeaks(m, f);
  return f;
}

std::string Fixed(double v, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << v;
  return out.str();
}

std::string OptionalFixed(const std::optional<double>& v, double scale, int precision) {
  return v ? Fixed(*v * scale, precision) : "";
}

bool AnyOnGpu(const std::vector<ValidationRow>& rows) {
  for (const ValidationRow& row : rows)
    if (FiguresOf(row).reserved_peak) return true;
  return false;
}

}  // namespace

std::string ValidationCsv(const std::vector<ValidationRow>& rows) {
  std::ostringstream out;
  out << "config,schedule,stages,workers,predicted_samples_per_s,measured_samples_per_s,"
         "throughput_error,predicted_peak_memory_bytes,measured_peak_memory_bytes,memory_error,"
         "staleness_match,measured_allocator_peak_allocated_bytes,"
         "measured_allocator_peak_reserved_bytes\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    out << CsvField(row.config) << "," << f.schedule << "," << f.stages << "," << f.workers << ","
        << Fixed(f.predicted_rate, 2) << "," << Fixed(f.measured_rate, 2) << ","
        << Fixed(f.rate_error, 4) << "," << Fixed(f.predicted_peak, 0) << ","
        << (f.throughput_only ? "," : Fixed(f.measured_peak, 0) + "," + Fixed(f.peak_error, 4))
        << "," << (f.throughput_only ? "" : f.staleness_match ? "true" : "false") << ","
        << OptionalFixed(f.allocated_peak, 1, 0)
        << "," << OptionalFixed(f.reserved_peak, 1, 0) << "\n";
  }
  return out.str();
}

std::string ValidationMarkdown(const std::vector<ValidationRow>& rows, const std::string& machine,
                               const std::string& command) {
  std::ostringstream out;
  double sum = 0, worst = 0, worst_memory = 0;
  int stale = 0, compared = 0;  // rows whose memory and staleness were measured
  const bool gpu = AnyOnGpu(rows);
  out << "| config | schedule | stages | workers | predicted samples/s | measured samples/s | "
         "error | predicted peak MB | measured peak MB | error | staleness |"
      << (gpu ? " allocator peak allocated MB | allocator peak reserved MB |" : "") << "\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|" << (gpu ? "---:|---:|" : "")
      << "\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    sum += std::fabs(f.rate_error);
    worst = std::max(worst, std::fabs(f.rate_error));
    worst_memory = std::max(worst_memory, std::fabs(f.peak_error));
    stale += f.staleness_match || f.throughput_only ? 0 : 1;
    compared += f.throughput_only ? 0 : 1;
    out << "| " << row.config << " | " << f.schedule << " | " << f.stages << " | " << f.workers
        << " | " << Fixed(f.predicted_rate, 0) << " | " << Fixed(f.measured_rate, 0) << " | "
        << SignedPercent(f.rate_error) << " | " << Fixed(f.predicted_peak / 1e6, 2) << " | "
        << (f.throughput_only ? " | not measured | not measured |"
                              : Fixed(f.measured_peak / 1e6, 2) + " | " +
                                    SignedPercent(f.peak_error) + " | " +
                                    (f.staleness_match ? "identical" : "DIFFERS") + " |");
    if (gpu)
      out << " " << OptionalFixed(f.allocated_peak, 1e-6, 2) << " | "
          << OptionalFixed(f.reserved_peak, 1e-6, 2) << " |";
    out << "\n";
  }
  const double mape = rows.empty() ? 0 : sum / rows.size();
  const auto verdict = [](bool met) { return met ? "met" : "NOT met"; };
  out << "\n" << rows.size() << " configurations on " << machine << "; `" << command << "`.\n\n"
      << "| target | result | |\n|---|---|---|\n"
      << "| throughput MAPE <= 5% | " << Fixed(100 * mape, 1) << "% | " << verdict(mape <= 0.05)
      << " |\n"
      << "| every throughput error <= 10% | worst " << Fixed(100 * worst, 1) << "% | "
      << verdict(worst <= 0.10) << " |\n"
      << "| peak memory (tensor bytes) within 5% | worst " << Fixed(100 * worst_memory, 1)
      << "% | " << verdict(worst_memory <= 0.05) << " |\n"
      << "| staleness identical | " << compared - stale << " of " << compared << " | "
      << verdict(stale == 0) << " |\n";
  return out.str();
}

}  // namespace pipetwin
