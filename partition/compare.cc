#include "partition/compare.h"

#include <cmath>
#include <iomanip>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "partition/error.h"

namespace pipetwin {

double RelativeError(double predicted, double measured) {
  if (measured == 0)
    return predicted == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), predicted);
  return (predicted - measured) / measured;
}

namespace {

ComparedFigure Figure(const std::string& name, double predicted, double measured) {
  return {name, predicted, measured, RelativeError(predicted, measured), predicted - measured};
}

void RequireSame(const std::string& what, const std::string& predicted,
                 const std::string& measured) {
  if (predicted != measured)
    throw InputError("compare: the reports describe different runs: " + what + " " + predicted +
                     " predicted, " + measured + " measured");
}

// Staleness is a property of the schedule's op lists, not of timing: both back ends must count
// the same delays (PipeDream, SOSP 2019, section 3.3; 2BW, ICML 2021, section 3.1).
bool SameStaleness(const StageSummary& a, const StageSummary& b) {
  const auto same = [](double x, double y) { return std::fabs(x - y) <= 1e-9; };
  return same(a.staleness_min, b.staleness_min) && same(a.staleness_mean, b.staleness_mean) &&
         same(a.staleness_max, b.staleness_max) &&
         a.max_weight_versions == b.max_weight_versions && a.updates == b.updates;
}

nlohmann::json ErrorJson(double e) {
  return std::isfinite(e) ? nlohmann::json(e) : nlohmann::json(nullptr);
}

std::string Percent(double e) {
  if (!std::isfinite(e)) return "n/a";
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100 * e << "%";
  return out.str();
}

OpKind KindOfCategory(const std::string& category, const std::string& file) {
  for (int k = 0; k <= static_cast<int>(OpKind::kUpdate); ++k)
    if (category == OpKindName(static_cast<OpKind>(k))) return static_cast<OpKind>(k);
  throw InputError(file, "traceEvents", "unknown event category \"" + category + "\"");
}

int IntArg(const nlohmann::json& args, const char* key, int fallback) {
  return args.is_object() && args.contains(key) && args[key].is_number_integer()
             ? args[key].get<int>()
             : fallback;
}

}  // namespace

Timeline TimelineFromChromeTrace(const nlohmann::json& trace, const std::string& file) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw InputError(file, "traceEvents", "expected an array of trace events");
  Timeline t;
  if (trace.contains("otherData")) t.other_data = trace["otherData"];
  std::map<int, size_t> process_of_pid;  // pid -> index in t.processes
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "M" || e.value("name", "") != "process_name") continue;
    const std::string name = e["args"].value("name", "");
    TimelineProcess p;
    if (std::sscanf(name.c_str(), "device %d: worker %d, stage %d", &p.device, &p.worker,
                    &p.stage) != 3)
      throw InputError(file, "traceEvents", "expected process names \"device D: worker W, "
                       "stage S\", got \"" + name + "\"");
    process_of_pid[e["pid"].get<int>()] = t.processes.size();
    t.processes.push_back(p);
  }
  for (const nlohmann::json& e : trace["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph != "X" && ph != "C") continue;
    const auto it = process_of_pid.find(e.value("pid", -1));
    if (it == process_of_pid.end())
      throw InputError(file, "traceEvents", "an event of a process with no name");
    TimelineProcess& p = t.processes[it->second];
    const double start_s = e.value("ts", 0.0) * 1e-6;
    if (ph == "C") {
      MemorySample m;
      m.time_s = start_s;
      const nlohmann::json& a = e["args"];
      m.bytes.weights = a.value("weights", 0.0);
      m.bytes.optimizer = a.value("optimizer", 0.0);
      m.bytes.gradients = a.value("gradients", 0.0);
      m.bytes.activations = a.value("activations", 0.0);
      m.bytes.recompute = a.value("recompute", 0.0);
      p.memory.push_back(m);
      continue;
    }
    const double end_s = start_s + e.value("dur", 0.0) * 1e-6;
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    const std::string category = e.value("cat", "");
    if (category == "all_reduce") {
      t.events.push_back(AllReduceEvent(p.device, p.worker, p.stage, IntArg(args, "bucket", 0),
                                        args.value("bytes", 0.0), start_s, end_s));
      continue;
    }
    Op op;
    op.kind = KindOfCategory(category, file);
    op.stage = IntArg(args, "stage", p.stage);
    op.microbatch = IntArg(args, "microbatch", -1);
    op.weight_version = IntArg(args, "weight_version", -1);
    op.peer_worker = IntArg(args, "peer_worker", -1);
    TimelineEvent ev = OpEvent(op, p.device, p.worker, start_s, end_s, args.value("bytes", 0.0));
    ev.name = e.value("name", ev.name);
    ev.args = args;
    t.events.push_back(std::move(ev));
  }
  return t;
}

Comparison CompareReports(const Report& predicted, const Report& measured) {
  RequireSame("schedule", predicted.schedule, measured.schedule);
  RequireSame("workers", std::to_string(predicted.worker_count),
              std::to_string(measured.worker_count));
  RequireSame("pipeline depth", std::to_string(predicted.pipeline_depth),
              std::to_string(measured.pipeline_depth));
  RequireSame("samples per iteration", std::to_string(predicted.samples_per_iteration),
              std::to_string(measured.samples_per_iteration));
  RequireSame("stages", std::to_string(predicted.stages.size()),
              std::to_string(measured.stages.size()));
  if (predicted.workers.size() != measured.workers.size() ||
      predicted.devices.size() != measured.devices.size())
    throw InputError("compare: the reports list different workers or devices");

  Comparison c;
  c.predicted = predicted;
  c.measured = measured;
  c.samples_per_s = Figure("samples_per_s", predicted.samples_per_s, measured.samples_per_s);
  c.iteration_s = Figure("iteration_s", predicted.iteration_s, measured.iteration_s);
  c.peak_memory_bytes =
      Figure("peak_memory_bytes", predicted.peak_memory_bytes, measured.peak_memory_bytes);
  for (size_t w = 0; w < predicted.workers.size(); ++w)
    c.worker_bubble.push_back(Figure("worker " + std::to_string(predicted.workers[w].worker) +
                                         " bubble_fraction",
                                     predicted.workers[w].bubble_fraction,
                                     measured.workers[w].bubble_fraction));
  for (size_t d = 0; d < predicted.devices.size(); ++d)
    c.device_peak_memory.push_back(
        Figure("device " + std::to_string(predicted.devices[d].device) + " peak_memory_bytes",
               predicted.devices[d].peak_memory_bytes, measured.devices[d].peak_memory_bytes));
  c.staleness_match = true;
  for (size_t s = 0; s < predicted.stages.size(); ++s) {
    StalenessComparison st{predicted.stages[s].stage, predicted.stages[s], measured.stages[s],
                           SameStaleness(predicted.stages[s], measured.stages[s])};
    c.staleness_match = c.staleness_match && st.match;
    c.staleness.push_back(st);
  }
  return c;
}

nlohmann::json ComparisonToJson(const Comparison& c) {
  nlohmann::json bubbles = nlohmann::json::array(), memory = nlohmann::json::array();
  for (const ComparedFigure& f : c.worker_bubble) bubbles.push_back(ErrorJson(f.relative_error));
  for (const ComparedFigure& f : c.device_peak_memory) memory.push_back(ErrorJson(f.relative_error));
  nlohmann::json staleness = nlohmann::json::array();
  for (const StalenessComparison& s : c.staleness)
    staleness.push_back({{"stage", s.stage},
                         {"match", s.match},
                         {"predicted", {s.predicted.staleness_min, s.predicted.staleness_mean,
                                        s.predicted.staleness_max}},
                         {"measured", {s.measured.staleness_min, s.measured.staleness_mean,
                                       s.measured.staleness_max}},
                         {"predicted_weight_versions", s.predicted.max_weight_versions},
                         {"measured_weight_versions", s.measured.max_weight_versions}});
  return {{"predicted", ReportToJson(c.predicted)},
          {"measured", ReportToJson(c.measured)},
          {"relative_error",
           {{"samples_per_s", ErrorJson(c.samples_per_s.relative_error)},
            {"iteration_s", ErrorJson(c.iteration_s.relative_error)},
            {"peak_memory_bytes", ErrorJson(c.peak_memory_bytes.relative_error)},
            {"bubble_fraction", bubbles},
            {"peak_memory_per_device", memory}}},
          {"bubble_fraction_difference",
           [&] {
             nlohmann::json d = nlohmann::json::array();
             for (const ComparedFigure& f : c.worker_bubble) d.push_back(f.absolute_error);
             return d;
           }()},
          {"staleness_match", c.staleness_match},
          {"staleness", staleness}};
}

std::string ComparisonToText(const Comparison& c) {
  std::ostringstream out;
  out << c.measured.scenario << "\n" << c.measured.schedule << ", " << c.measured.pipeline_depth
      << " stages, " << c.measured.worker_count << " workers, micro-batch "
      << c.measured.microbatch_size << " x " << c.measured.microbatches_per_iteration
      << " per iteration\n\n";
  out << std::left << std::setw(34) << "figure" << std::right << std::setw(16) << "predicted"
      << std::setw(16) << "measured" << std::setw(10) << "error\n";
  const auto row = [&](const ComparedFigure& f, int precision, double scale,
                       const std::string& unit) {
    out << std::left << std::setw(34) << f.name + unit << std::right << std::fixed
        << std::setprecision(precision) << std::setw(16) << f.predicted * scale << std::setw(16)
        << f.measured * scale << std::setw(10) << Percent(f.relative_error) << "\n"
        << std::defaultfloat;
  };
  row(c.samples_per_s, 1, 1, "");
  row(c.iteration_s, 3, 1e3, " (ms)");
  row(c.peak_memory_bytes, 2, 1e-6, " (MB)");
  for (const ComparedFigure& f : c.device_peak_memory) row(f, 2, 1e-6, " (MB)");
  for (const ComparedFigure& f : c.worker_bubble) {
    out << std::left << std::setw(34) << f.name << std::right << std::fixed
        << std::setprecision(1) << std::setw(15) << 100 * f.predicted << "%" << std::setw(15)
        << 100 * f.measured << "%" << std::setw(10) << std::showpos << 100 * f.absolute_error
        << std::noshowpos << " pt\n" << std::defaultfloat;
  }
  out << "\nstage  staleness predicted (min/mean/max, versions)  measured              match\n";
  for (const StalenessComparison& s : c.staleness) {
    const auto cell = [](const StageSummary& x) {
      std::ostringstream t;
      t << x.staleness_min << " / " << std::setprecision(3) << x.staleness_mean << " / "
        << x.staleness_max << ", " << x.max_weight_versions;
      return t.str();
    };
    out << std::setw(5) << s.stage << "  " << std::left << std::setw(46) << cell(s.predicted)
        << std::setw(22) << cell(s.measured) << (s.match ? "yes" : "NO") << std::right << "\n";
  }
  return out.str();
}

namespace {

// The figures of one validation row.
struct RowFigures {
  std::string schedule, model;
  int stages = 0, workers = 0;
  double predicted_rate = 0, measured_rate = 0, rate_error = 0;
  double predicted_peak = 0, measured_peak = 0, peak_error = 0;
  bool staleness_match = false;
};

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
  f.staleness_match = c.value("staleness_match", false);
  return f;
}

std::string Fixed(double v, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << v;
  return out.str();
}

}  // namespace

std::string ValidationCsv(const std::vector<ValidationRow>& rows) {
  std::ostringstream out;
  out << "config,schedule,stages,workers,predicted_samples_per_s,measured_samples_per_s,"
         "throughput_error,predicted_peak_memory_bytes,measured_peak_memory_bytes,memory_error,"
         "staleness_match\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    out << CsvField(row.config) << "," << f.schedule << "," << f.stages << "," << f.workers << ","
        << Fixed(f.predicted_rate, 2) << "," << Fixed(f.measured_rate, 2) << ","
        << Fixed(f.rate_error, 4) << "," << Fixed(f.predicted_peak, 0) << ","
        << Fixed(f.measured_peak, 0) << "," << Fixed(f.peak_error, 4) << ","
        << (f.staleness_match ? "true" : "false") << "\n";
  }
  return out.str();
}

std::string ValidationMarkdown(const std::vector<ValidationRow>& rows, const std::string& machine,
                               const std::string& command) {
  std::ostringstream out;
  double sum = 0, worst = 0, worst_memory = 0;
  int stale = 0;
  out << "| config | schedule | stages | workers | predicted samples/s | measured samples/s | "
         "error | predicted peak MB | measured peak MB | error | staleness |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const ValidationRow& row : rows) {
    const RowFigures f = FiguresOf(row);
    sum += std::fabs(f.rate_error);
    worst = std::max(worst, std::fabs(f.rate_error));
    worst_memory = std::max(worst_memory, std::fabs(f.peak_error));
    stale += f.staleness_match ? 0 : 1;
    out << "| " << row.config << " | " << f.schedule << " | " << f.stages << " | " << f.workers
        << " | " << Fixed(f.predicted_rate, 0) << " | " << Fixed(f.measured_rate, 0) << " | "
        << Percent(f.rate_error) << " | " << Fixed(f.predicted_peak / 1e6, 2) << " | "
        << Fixed(f.measured_peak / 1e6, 2) << " | " << Percent(f.peak_error) << " | "
        << (f.staleness_match ? "identical" : "DIFFERS") << " |\n";
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
      << "| staleness identical | " << rows.size() - stale << " of " << rows.size() << " | "
      << verdict(stale == 0) << " |\n";
  return out.str();
}

}  // namespace pipetwin
