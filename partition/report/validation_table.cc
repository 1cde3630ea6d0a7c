#include "partition/report/validation_table.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include "partition/report/compare.h"
#include "partition/util/format.h"
#include "partition/util/machine.h"

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
  // The prediction's band from the profile's and the calibration's spread (Comparison::Band), when it had one.
  std::optional<double> band_low, band_high;
  // The machine's speed (one core's GEMM rate, GFLOP/s) while the profile was taken and during
  // the run (Comparison::MachineSpeed); 0 where not read.
  double profile_gflops = 0, run_gflops = 0;
  bool InBand() const { return measured_rate >= *band_low && measured_rate <= *band_high; }
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
  if (c.contains("predicted_band") && c.at("predicted_band").is_object()) {
    f.band_low = c.at("predicted_band").value("low_samples_per_s", 0.0);
    f.band_high = c.at("predicted_band").value("high_samples_per_s", 0.0);
  }
  if (c.contains("machine_speed") && c.at("machine_speed").is_object()) {
    f.profile_gflops = c.at("machine_speed").value("profile_gflops", 0.0);
    f.run_gflops = c.at("machine_speed").value("run_gflops", 0.0);
  }
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

// The column of BusyRatioByOp's table that is not an op kind.
constexpr const char* kExposedColumn = "exposed communication";
// BusyRatioByOp's entries that are not ratios: the workers' kept_core_share (kept_core.h),
// predicted and measured, each worker's weighted by its busy time in that report.
constexpr const char* kKeptPredicted = "kept its core, predicted";
constexpr const char* kKeptMeasured = "kept its core, measured";

// The busy-weighted mean of the workers' kept_core_share; none unless every worker has one.
std::optional<double> MeanKeptCore(const nlohmann::json& report) {
  if (!report.is_object() || !report.contains("workers") || !report.at("workers").is_array())
    return std::nullopt;
  double kept = 0, busy = 0;
  for (const nlohmann::json& w : report.at("workers")) {
    if (!w.is_object() || !w.contains("kept_core_share") || !w.at("kept_core_share").is_number() ||
        !w.contains("busy_s") || !w.at("busy_s").is_number())
      return std::nullopt;
    kept += w.at("kept_core_share").get<double>() * w.at("busy_s").get<double>();
    busy += w.at("busy_s").get<double>();
  }
  if (busy <= 0) return std::nullopt;
  return kept / busy;
}

// Measured over predicted compute of each op kind, every worker's summed (the comparison's
// busy_by_op, per iteration: over the iterations the throughput counts where both reports split
// them so, CompareBusyByOp), and of exposed communication (kExposedColumn, the reports' workers'
// exposed_communication_s): which part of a worker's time a row's prediction got wrong. Parts
// the prediction gives no time are left out; empty when the comparison lacks the split by op
// kind. Where both reports know which core each op ran on, kKeptPredicted and kKeptMeasured too.
std::map<std::string, double> BusyRatioByOp(const ValidationRow& row) {
  std::map<std::string, double> predicted, measured;
  if (row.comparison.contains("busy_by_op") && row.comparison.at("busy_by_op").is_array())
    for (const nlohmann::json& b : row.comparison.at("busy_by_op")) {
      if (!b.is_object() || !b.contains("op") || !b.at("op").is_string()) continue;
      const std::string kind = b.at("op");
      if (b.contains("predicted_s") && b.at("predicted_s").is_number())
        predicted[kind] += b.at("predicted_s").get<double>();
      if (b.contains("measured_s") && b.at("measured_s").is_number())
        measured[kind] += b.at("measured_s").get<double>();
    }
  std::map<std::string, double> ratio;
  if (predicted.empty() || measured.empty()) return ratio;
  const auto exposed = [](const nlohmann::json& report) {
    double total = 0;
    if (report.is_object() && report.contains("workers") && report.at("workers").is_array())
      for (const nlohmann::json& w : report.at("workers"))
        if (w.is_object() && w.contains("exposed_communication_s") &&
            w.at("exposed_communication_s").is_number())
          total += w.at("exposed_communication_s").get<double>();
    return total;
  };
  predicted[kExposedColumn] = exposed(row.comparison.at("predicted"));
  measured[kExposedColumn] = exposed(row.comparison.at("measured"));
  for (const auto& [kind, seconds] : predicted)
    if (seconds > 0) ratio[kind] = (measured.count(kind) ? measured.at(kind) : 0) / seconds;
  const std::optional<double> kept_predicted = MeanKeptCore(row.comparison.at("predicted"));
  const std::optional<double> kept_measured = MeanKeptCore(row.comparison.at("measured"));
  if (kept_predicted && kept_measured) {
    ratio[kKeptPredicted] = *kept_predicted;
    ratio[kKeptMeasured] = *kept_measured;
  }
  return ratio;
}

// The op kinds of any row's ratios, in OpKind order (the table's columns).
std::vector<std::string> OpColumns(const std::vector<std::map<std::string, double>>& ratios) {
  std::vector<std::string> columns;
  for (OpKind op : AllOpKinds()) {
    const std::string kind = OpKindName(op);
    for (const auto& r : ratios)
      if (r.count(kind)) {
        columns.push_back(kind);
        break;
      }
  }
  for (const auto& r : ratios)
    if (r.count(kExposedColumn)) {
      columns.push_back(kExposedColumn);
      break;
    }
  return columns;
}

// "Compute by op kind" table: one row per configuration, a cell per op kind holding its
// repetitions' ratios; "" when no row has the figures.
std::string BusyByOpMarkdown(const std::vector<std::string>& configs,
                             const std::vector<std::vector<std::map<std::string, double>>>& cells) {
  std::vector<std::map<std::string, double>> all;
  for (const auto& row : cells) all.insert(all.end(), row.begin(), row.end());
  const std::vector<std::string> columns = OpColumns(all);
  if (columns.empty()) return "";
  const bool kept = std::any_of(all.begin(), all.end(), [](const auto& r) {
    return r.count(kKeptPredicted) > 0;
  });
  std::ostringstream out;
  out << "\nCompute by op kind and exposed communication, measured over predicted (every "
         "worker's time in ops of that kind per iteration, over the iterations the throughput "
         "counts where both reports split them so; or waiting on bytes in flight over the run; "
         "summed)"
      << (kept ? "; and the share of the workers' compute on the core their own op left, "
                 "predicted / measured"
               : "")
      << ":\n\n| config |";
  for (const std::string& k : columns) out << " " << k << " |";
  if (kept) out << " kept its core |";
  out << "\n|---|";
  for (size_t k = 0; k < columns.size() + (kept ? 1 : 0); ++k) out << "---:|";
  out << "\n";
  for (size_t r = 0; r < configs.size(); ++r) {
    out << "| " << configs[r] << " |";
    for (const std::string& k : columns) {
      std::string cell;
      for (const auto& ratios : cells[r])
        cell += (cell.empty() ? "" : ", ") + (ratios.count(k) ? Fixed(ratios.at(k), 2) : "-");
      out << " " << cell << " |";
    }
    if (kept) {
      std::string cell;
      for (const auto& ratios : cells[r])
        cell += (cell.empty() ? "" : ", ") +
                (ratios.count(kKeptPredicted) ? Fixed(ratios.at(kKeptPredicted), 2) + " / " +
                                                    Fixed(ratios.at(kKeptMeasured), 2)
                                              : std::string("-"));
      out << " " << cell << " |";
    }
    out << "\n";
  }
  return out.str();
}

// The machine's speed while each row's profile was taken and during its run, and how far it
// moved between them (what a prediction from that profile inherits); empty when no row has both.
std::string MachineSpeedMarkdown(const std::vector<ValidationRow>& rows) {
  std::ostringstream table;
  int shown = 0, moved = 0;
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    if (f.profile_gflops <= 0 || f.run_gflops <= 0) continue;
    const double change = f.run_gflops / f.profile_gflops - 1;
    ++shown;
    moved += SpeedChangeWarning(f.profile_gflops, "", f.run_gflops, "") ? 1 : 0;
    table << "| " << row.config << " | " << Fixed(f.profile_gflops, 1) << " | "
          << Fixed(f.run_gflops, 1) << " | " << SignedPercent(change) << " |\n";
  }
  if (shown == 0) return "";
  return "\nThe machine's speed (one core's GEMM, GFLOP/s) while each row's profile was taken and "
         "during its measured run; " + std::to_string(moved) + " of " + std::to_string(shown) +
         " rows moved more than " + Fixed(100 * kDisturbingSpeedChange, 0) +
         "% between the two (their prediction inherits it):\n\n"
         "| config | profile | run | run over profile |\n|---|---:|---:|---:|\n" + table.str();
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
         "measured_allocator_peak_reserved_bytes,predicted_low_samples_per_s,"
         "predicted_high_samples_per_s,measured_inside_band,profile_one_core_gflops,"
         "run_one_core_gflops\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    out << CsvField(row.config) << "," << f.schedule << "," << f.stages << "," << f.workers << ","
        << Fixed(f.predicted_rate, 2) << "," << Fixed(f.measured_rate, 2) << ","
        << Fixed(f.rate_error, 4) << "," << Fixed(f.predicted_peak, 0) << ","
        << (f.throughput_only ? "," : Fixed(f.measured_peak, 0) + "," + Fixed(f.peak_error, 4))
        << "," << (f.throughput_only ? "" : f.staleness_match ? "true" : "false") << ","
        << OptionalFixed(f.allocated_peak, 1, 0)
        << "," << OptionalFixed(f.reserved_peak, 1, 0) << "," << OptionalFixed(f.band_low, 1, 2)
        << "," << OptionalFixed(f.band_high, 1, 2) << ","
        << (f.band_low ? (f.InBand() ? "true" : "false") : "") << ","
        << (f.profile_gflops > 0 ? Fixed(f.profile_gflops, 2) : "") << ","
        << (f.run_gflops > 0 ? Fixed(f.run_gflops, 2) : "") << "\n";
  }
  return out.str();
}

std::string ValidationMarkdown(const std::vector<ValidationRow>& rows, const std::string& machine,
                               const std::string& command) {
  std::ostringstream out;
  double sum = 0, worst = 0, worst_memory = 0;
  int stale = 0, compared = 0;  // rows whose memory and staleness were measured
  int banded = 0, outside = 0;  // rows with a band (Comparison::Band); measured outside
  const bool gpu = AnyOnGpu(rows);
  out << "| config | schedule | stages | workers | predicted samples/s | band (profile's spread) "
         "| measured samples/s | error | predicted peak MB | measured peak MB | error | "
         "staleness |"
      << (gpu ? " allocator peak allocated MB | allocator peak reserved MB |" : "") << "\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
      << (gpu ? "---:|---:|" : "") << "\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    sum += std::fabs(f.rate_error);
    worst = std::max(worst, std::fabs(f.rate_error));
    worst_memory = std::max(worst_memory, std::fabs(f.peak_error));
    stale += f.staleness_match || f.throughput_only ? 0 : 1;
    compared += f.throughput_only ? 0 : 1;
    banded += f.band_low ? 1 : 0;
    outside += f.band_low && !f.InBand() ? 1 : 0;
    out << "| " << row.config << " | " << f.schedule << " | " << f.stages << " | " << f.workers
        << " | " << Fixed(f.predicted_rate, 0) << " | "
        << (f.band_low ? Fixed(*f.band_low, 0) + "-" + Fixed(*f.band_high, 0) +
                             (f.InBand() ? "" : " (measured OUTSIDE)")
                       : std::string("")) << " | " << Fixed(f.measured_rate, 0) << " | "
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
  if (banded > 0)
    out << "\nmeasured inside the prediction's band (the profile's 95% spread): " << banded - outside
        << " of " << banded << " rows\n";
  out << MachineSpeedMarkdown(rows);
  std::vector<std::string> configs;
  std::vector<std::vector<std::map<std::string, double>>> cells;
  for (const ValidationRow& row : rows) {
    configs.push_back(row.config);
    cells.push_back({BusyRatioByOp(row)});
  }
  out << BusyByOpMarkdown(configs, cells);
  return out.str();
}

namespace {

// One configuration over the repetitions.
struct RepeatedRow {
  std::string config, schedule;
  std::vector<double> predicted, measured, errors;
  std::vector<double> run_gflops;  // the machine's speed during each repetition's run, when read
  int outside_band = 0, banded = 0;
  std::vector<std::map<std::string, double>> busy_ratio_by_op;  // per repetition
};

// (highest - lowest) / mean: how far apart two runs of the same row may land.
double RunToRunSpread(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / v.size();
  return mean > 0 ? (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / mean
                  : 0;
}

std::vector<RepeatedRow> Repeated(const std::vector<std::vector<ValidationRow>>& repetitions) {
  std::vector<RepeatedRow> rows;
  for (const auto& repetition : repetitions)
    for (const ValidationRow& row : repetition) {
      auto it = std::find_if(rows.begin(), rows.end(),
                             [&](const RepeatedRow& r) { return r.config == row.config; });
      if (it == rows.end()) {
        it = rows.insert(rows.end(), RepeatedRow{});
        it->config = row.config;
      }
      const RowFigures f = FiguresOf(row);
      it->schedule = f.schedule;
      it->predicted.push_back(f.predicted_rate);
      it->measured.push_back(f.measured_rate);
      it->errors.push_back(f.rate_error);
      if (f.run_gflops > 0) it->run_gflops.push_back(f.run_gflops);
      it->busy_ratio_by_op.push_back(BusyRatioByOp(row));
      if (f.band_low) {
        ++it->banded;
        it->outside_band += f.InBand() ? 0 : 1;
      }
    }
  std::sort(rows.begin(), rows.end(),
            [](const RepeatedRow& a, const RepeatedRow& b) { return a.config < b.config; });
  return rows;
}

std::string Joined(const std::vector<double>& v, int precision, bool percent) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ", ") + (percent ? SignedPercent(x) : Fixed(x, precision));
  return out;
}

}  // namespace

// The most a row's prediction may move from one repetition to the next (issue 25's target).
constexpr double kPredictionSpreadTarget = 0.03;

std::string ValidationRepeatMarkdown(const std::vector<std::vector<ValidationRow>>& repetitions,
                                     const std::string& machine, const std::string& command) {
  const std::vector<RepeatedRow> rows = Repeated(repetitions);
  std::ostringstream out;
  out << "| config | schedule | predicted samples/s | prediction spread | measured samples/s | "
         "measurement spread | machine's speed in the runs (GFLOP/s, spread) | errors | "
         "measured outside band |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  double sum = 0, worst = 0, worst_spread = 0;
  int count = 0, spread_misses = 0, outside = 0, banded = 0;
  // Rows whose speed was read in every repetition, and those of them over the spread target
  // while the machine's own speed held within it: the model's own unrepeatability.
  int speed_rows = 0, steady_machine_misses = 0;
  double worst_machine_spread = 0;
  for (const RepeatedRow& r : rows) {
    const double spread = RunToRunSpread(r.predicted);
    worst_spread = std::max(worst_spread, spread);
    spread_misses += spread > kPredictionSpreadTarget ? 1 : 0;
    const bool speed_known = r.run_gflops.size() == r.predicted.size() && r.predicted.size() > 1;
    const double machine_spread = speed_known ? RunToRunSpread(r.run_gflops) : 0;
    if (speed_known) {
      ++speed_rows;
      worst_machine_spread = std::max(worst_machine_spread, machine_spread);
      steady_machine_misses +=
          spread > kPredictionSpreadTarget && machine_spread <= kPredictionSpreadTarget ? 1 : 0;
    }
    for (double e : r.errors) {
      sum += std::fabs(e);
      worst = std::max(worst, std::fabs(e));
      ++count;
    }
    outside += r.outside_band;
    banded += r.banded;
    out << "| " << r.config << " | " << r.schedule << " | " << Joined(r.predicted, 0, false)
        << " | " << Fixed(100 * spread, 1) << "%" << (spread > kPredictionSpreadTarget ? " (over 3%)" : "")
        << " | " << Joined(r.measured, 0, false) << " | " << Fixed(100 * RunToRunSpread(r.measured), 1)
        << "% | "
        << (speed_known ? Joined(r.run_gflops, 0, false) + " (" + Fixed(100 * machine_spread, 1) + "%)"
                        : std::string(""))
        << " | " << Joined(r.errors, 0, true) << " | "
        << (r.banded ? std::to_string(r.outside_band) + " of " + std::to_string(r.banded) : "")
        << " |\n";
  }
  const double mape = count ? sum / count : 0;
  const auto verdict = [](bool met) { return met ? "met" : "NOT met"; };
  out << "\n" << rows.size() << " configurations, " << repetitions.size()
      << " repetitions from scratch, on " << machine << "; `" << command << "`.\n\n"
      << "| target | result | |\n|---|---|---|\n"
      << "| every row's prediction spread <= 3% | worst " << Fixed(100 * worst_spread, 1) << "% ("
      << spread_misses << " rows over) | " << verdict(spread_misses == 0) << " |\n"
      << "| throughput MAPE <= 5% (every row of every repetition) | " << Fixed(100 * mape, 1)
      << "% | " << verdict(mape <= 0.05) << " |\n"
      << "| every throughput error <= 10% | worst " << Fixed(100 * worst, 1) << "% | "
      << verdict(worst <= 0.10) << " |\n";
  if (banded > 0)
    out << "\nmeasured inside the prediction's band: " << banded - outside << " of " << banded
        << " rows\n";
  if (speed_rows > 0)
    out << "\nthe machine's own speed (one core's GEMM during the runs) moved up to "
        << Fixed(100 * worst_machine_spread, 1) << "% over a row's repetitions; rows over the "
        << "prediction spread target while it held within 3%: " << steady_machine_misses << " of "
        << speed_rows << "\n";
  std::vector<std::string> configs;
  std::vector<std::vector<std::map<std::string, double>>> cells;
  for (const RepeatedRow& r : rows) {
    configs.push_back(r.config);
    cells.push_back(r.busy_ratio_by_op);
  }
  out << BusyByOpMarkdown(configs, cells);
  return out.str();
}

std::string ValidationRepeatCsv(const std::vector<std::vector<ValidationRow>>& repetitions) {
  std::ostringstream out;
  out << "config,schedule,repetitions,predicted_spread,measured_spread,mean_abs_error,"
         "worst_abs_error,outside_band,machine_speed_spread\n";
  for (const RepeatedRow& r : Repeated(repetitions)) {
    double sum = 0, worst = 0;
    for (double e : r.errors) sum += std::fabs(e), worst = std::max(worst, std::fabs(e));
    out << CsvField(r.config) << "," << r.schedule << "," << r.predicted.size() << ","
        << Fixed(RunToRunSpread(r.predicted), 4) << "," << Fixed(RunToRunSpread(r.measured), 4)
        << "," << Fixed(sum / r.errors.size(), 4) << "," << Fixed(worst, 4) << ","
        << r.outside_band << ","
        << (r.run_gflops.size() == r.predicted.size() && r.predicted.size() > 1
                ? Fixed(RunToRunSpread(r.run_gflops), 4)
                : "")
        << "\n";
  }
  return out.str();
}

}  // namespace pipetwin
