#include "partition/report/compare.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "partition/util/error.h"
#include "partition/util/format.h"
#include "partition/util/machine.h"

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

// Worker w's compute by op kind per iteration, predicted against measured: which kind of op the
// prediction got wrong (a stage's optimizer step, say, where its forwards are right). Over the
// iterations the throughput counts where both reports split them so (steady_busy_by_op_s): a
// run's first iteration, slowed by its start-up, is no more the ops' cost than it is the
// throughput's; else over every iteration run.
void CompareBusyByOp(const WorkerReport& predicted, int predicted_iterations,
                     const WorkerReport& measured, int measured_iterations,
                     std::vector<Comparison::OpBusy>& out) {
  const bool steady =
      !predicted.steady_busy_by_op_s.empty() && !measured.steady_busy_by_op_s.empty();
  const auto& predicted_s = steady ? predicted.steady_busy_by_op_s : predicted.busy_by_op_s;
  const auto& measured_s = steady ? measured.steady_busy_by_op_s : measured.busy_by_op_s;
  const double predicted_per = steady ? 1 : std::max(1, predicted_iterations);
  const double measured_per = steady ? 1 : std::max(1, measured_iterations);
  if (predicted_s.empty() || measured_s.empty()) return;
  for (OpKind op : AllOpKinds()) {
    const std::string kind = OpKindName(op);
    const auto p = predicted_s.find(kind);
    const auto m = measured_s.find(kind);
    if (p == predicted_s.end() && m == measured_s.end()) continue;
    const double p_s = p == predicted_s.end() ? 0 : p->second;
    const double m_s = m == measured_s.end() ? 0 : m->second;
    out.push_back({predicted.worker, kind,
                   Figure("worker " + std::to_string(predicted.worker) + " " + kind,
                          p_s / predicted_per, m_s / measured_per)});
  }
}


}  // namespace

void AddProfileSpeed(Comparison& c, double profile_gflops) {
  c.machine_speed.profile_gflops = profile_gflops;
  if (auto w = SpeedChangeWarning(profile_gflops, "while the profile was taken",
                                  c.machine_speed.run_gflops, "during the run"))
    c.disturbances.push_back(*w);
}

Comparison CompareReports(const Report& predicted, const Report& measured) {
  RequireSame("schedule", predicted.schedule, measured.schedule);
  RequireSame("workers", std::to_string(predicted.worker_count),
              std::to_string(measured.worker_count));
  RequireSame("pipeline depth", std::to_string(predicted.pipeline_depth),
              std::to_string(measured.pipeline_depth));
  RequireSame("samples per iteration", std::to_string(predicted.samples_per_iteration),
              std::to_string(measured.samples_per_iteration));
  Comparison c;
  c.predicted = predicted;
  c.measured = measured;
  c.samples_per_s = Figure("samples_per_s", predicted.samples_per_s, measured.samples_per_s);
  c.iteration_s = Figure("iteration_s", predicted.iteration_s, measured.iteration_s);
  if (measured.details.contains("machine_load")) {
    const MachineLoad load = MachineLoad::FromJson(measured.details["machine_load"]);
    c.disturbances = load.Warnings();
    c.machine_speed.run_gflops = load.Gflops();
  }
  c.throughput_only = measured.workers.empty() && measured.devices.empty() &&
                      measured.stages.empty();
  if (c.throughput_only) return c;
  RequireSame("stages", std::to_string(predicted.stages.size()),
              std::to_string(measured.stages.size()));
  if (predicted.workers.size() != measured.workers.size() ||
      predicted.devices.size() != measured.devices.size())
    throw InputError("compare: the reports list different workers or devices");
  c.peak_memory_bytes =
      Figure("peak_memory_bytes", predicted.peak_memory_bytes, measured.peak_memory_bytes);
  for (size_t w = 0; w < predicted.workers.size(); ++w)
    c.worker_bubble.push_back(Figure("worker " + std::to_string(predicted.workers[w].worker) +
                                         " bubble_fraction",
                                     predicted.workers[w].bubble_fraction,
                                     measured.workers[w].bubble_fraction));
  for (size_t w = 0; w < predicted.workers.size(); ++w) {
    CompareBusyByOp(predicted.workers[w], predicted.iterations, measured.workers[w],
                    measured.iterations, c.worker_busy_by_op);
    c.worker_exposed_communication.push_back(
        Figure("worker " + std::to_string(predicted.workers[w].worker) + " exposed comm",
               predicted.workers[w].exposed_communication_s / std::max(1, predicted.iterations),
               measured.workers[w].exposed_communication_s / std::max(1, measured.iterations)));
    if (predicted.workers[w].kept_core_share >= 0 && measured.workers[w].kept_core_share >= 0)
      c.worker_kept_core.push_back(
          {predicted.workers[w].worker,
           Figure("worker " + std::to_string(predicted.workers[w].worker) + " kept its core",
                  predicted.workers[w].kept_core_share, measured.workers[w].kept_core_share)});
  }
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
  nlohmann::json busy_by_op = nlohmann::json::array();
  for (const Comparison::OpBusy& b : c.worker_busy_by_op)
    busy_by_op.push_back({{"worker", b.worker},
                          {"op", b.op},
                          {"predicted_s", b.figure.predicted},
                          {"measured_s", b.figure.measured},
                          {"relative_error", ErrorJson(b.figure.relative_error)}});
  nlohmann::json exposed = nlohmann::json::array();
  for (size_t w = 0; w < c.worker_exposed_communication.size(); ++w) {
    const ComparedFigure& f = c.worker_exposed_communication[w];
    exposed.push_back({{"worker", c.predicted.workers[w].worker},
                       {"predicted_s", f.predicted},
                       {"measured_s", f.measured},
                       {"relative_error", ErrorJson(f.relative_error)}});
  }
  nlohmann::json kept_core = nlohmann::json::array();
  for (const Comparison::WorkerFigure& k : c.worker_kept_core)
    kept_core.push_back({{"worker", k.worker},
                         {"predicted", k.figure.predicted},
                         {"measured", k.figure.measured}});
  nlohmann::json band = nullptr;
  if (c.band)
    band = {{"low_samples_per_s", c.band->low_samples_per_s},
            {"high_samples_per_s", c.band->high_samples_per_s},
            {"measured_inside", c.band->Holds(c.samples_per_s.measured)}};
  const Comparison::MachineSpeed& speed = c.machine_speed;
  nlohmann::json machine_speed = nullptr;
  if (speed.profile_gflops > 0 || speed.run_gflops > 0)
    machine_speed = {{"profile_gflops", speed.profile_gflops},
                     {"run_gflops", speed.run_gflops},
                     {"run_over_profile", speed.profile_gflops > 0 && speed.run_gflops > 0
                                              ? nlohmann::json(speed.run_gflops / speed.profile_gflops)
                                              : nlohmann::json(nullptr)}};
  return {{"predicted", ReportToJson(c.predicted)},
          {"predicted_band", band},
          {"machine_speed", machine_speed},
          {"measured", ReportToJson(c.measured)},
          {"measured_figures", c.throughput_only ? "throughput" : "all"},
          {"measurement_disturbed", !c.disturbances.empty()},
          {"disturbances", c.disturbances},
          {"relative_error",
           {{"samples_per_s", ErrorJson(c.samples_per_s.relative_error)},
            {"iteration_s", ErrorJson(c.iteration_s.relative_error)},
            {"peak_memory_bytes", c.throughput_only
                                      ? nlohmann::json(nullptr)
                                      : ErrorJson(c.peak_memory_bytes.relative_error)},
            {"bubble_fraction", bubbles},
            {"peak_memory_per_device", memory}}},
          {"bubble_fraction_difference",
           [&] {
             nlohmann::json d = nlohmann::json::array();
             for (const ComparedFigure& f : c.worker_bubble) d.push_back(f.absolute_error);
             return d;
           }()},
          {"staleness_match",
           c.throughput_only ? nlohmann::json(nullptr) : nlohmann::json(c.staleness_match)},
          {"staleness", staleness},
          {"busy_by_op", busy_by_op},
          {"exposed_communication", exposed},
          {"kept_core", kept_core}};
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
        << f.measured * scale << std::setw(10) << SignedPercent(f.relative_error) << "\n"
        << std::defaultfloat;
  };
  for (const std::string& d : c.disturbances) out << "measurement disturbed: " << d << "\n";
  if (!c.disturbances.empty()) out << "\n";
  row(c.samples_per_s, 1, 1, "");
  if (c.band)
    out << std::left << std::setw(34) << "  band from the spreads" << std::right
        << std::fixed << std::setprecision(1) << std::setw(16)
        << (std::to_string(static_cast<long long>(std::lround(c.band->low_samples_per_s))) + "-" +
            std::to_string(static_cast<long long>(std::lround(c.band->high_samples_per_s))))
        << std::setw(16) << "" << std::setw(10)
        << (c.band->Holds(c.samples_per_s.measured) ? "inside" : "OUTSIDE") << "\n"
        << std::defaultfloat;
  row(c.iteration_s, 3, 1e3, " (ms)");
  if (c.throughput_only) {
    out << "\nthe measured report has throughput only (" << c.measured.measurement
        << "): memory, bubbles and staleness are not compared\n";
    return out.str();
  }
  row(c.peak_memory_bytes, 2, 1e-6, " (MB)");
  for (const ComparedFigure& f : c.device_peak_memory) row(f, 2, 1e-6, " (MB)");
  const auto share_row = [&](const ComparedFigure& f) {
    out << std::left << std::setw(34) << f.name << std::right << std::fixed
        << std::setprecision(1) << std::setw(15) << 100 * f.predicted << "%" << std::setw(15)
        << 100 * f.measured << "%" << std::setw(10) << std::showpos << 100 * f.absolute_error
        << std::noshowpos << " pt\n" << std::defaultfloat;
  };
  for (const ComparedFigure& f : c.worker_bubble) share_row(f);
  for (const Comparison::OpBusy& b : c.worker_busy_by_op) row(b.figure, 3, 1e3, " (ms/iter)");
  for (const ComparedFigure& f : c.worker_exposed_communication) row(f, 3, 1e3, " (ms/iter)");
  for (const Comparison::WorkerFigure& k : c.worker_kept_core) share_row(k.figure);
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

}  // namespace pipetwin
