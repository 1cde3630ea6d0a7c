// Comparison: a predicted Report (the simulator's) against a measured one (the executor's) of the
// same scenario and plan, figure by figure, with the relative error of each.
//
//   Comparison c = CompareReports(predicted, measured);
//   c.samples_per_s.relative_error;          // (predicted - measured) / measured
//   c.staleness_match;                        // every stage's staleness and versions identical
//   std::cout << ComparisonToText(c);         // the table `pipetwin compare` prints
//   ComparisonToJson(c);                      // {"predicted", "measured", "relative_error", ...}
//
// The two reports must describe the same run: same schedule, workers, stages and micro-batches
// (CompareReports throws InputError naming what differs). Free of SimGrid and LibTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/report/report.h"

namespace pipetwin {

// One figure, predicted and measured.
struct ComparedFigure {
  std::string name;  // "samples_per_s", "worker 1 bubble_fraction", ...
  double predicted = 0;
  double measured = 0;
  // (predicted - measured) / measured; for fractions (bubble) the absolute difference in points
  // would hide nothing either, so both are kept: absolute_error = predicted - measured.
  double relative_error = 0;
  double absolute_error = 0;
};

struct StalenessComparison {
  int stage = 0;
  StageSummary predicted, measured;
  bool match = false;  // min, mean, max staleness and weight versions all equal
};

struct Comparison {
  Report predicted, measured;
  ComparedFigure samples_per_s, iteration_s, peak_memory_bytes;
  std::vector<ComparedFigure> worker_bubble;       // by worker
  // Each worker's compute by op kind in seconds per iteration: over the iterations the
  // throughput counts (WorkerReport::steady_busy_by_op_s) where both reports have them, else
  // over every iteration run (busy_by_op_s); by worker, then in OpKind order. Empty when either
  // report lacks both.
  struct OpBusy {
    int worker = 0;
    std::string op;         // OpKindName
    ComparedFigure figure;  // "worker 1 update"
  };
  std::vector<OpBusy> worker_busy_by_op;
  // Each worker's exposed communication (WorkerReport::exposed_communication_s), in seconds per
  // iteration run: the rest of what a worker spends that is neither compute nor bubble.
  std::vector<ComparedFigure> worker_exposed_communication;  // by worker
  // Each worker's share of its compute on the core it computed on last (WorkerReport::
  // kept_core_share, kept_core.h), where both reports know it: whether the simulator placed
  // the workers of a shared machine on its cores as the run did. By worker.
  struct WorkerFigure {
    int worker = 0;
    ComparedFigure figure;  // "worker 2 kept its core"
  };
  std::vector<WorkerFigure> worker_kept_core;
  std::vector<ComparedFigure> device_peak_memory;  // by device (tensor bytes)
  std::vector<StalenessComparison> staleness;      // by stage
  bool staleness_match = false;                    // every stage's
  // The measured report lists no workers, devices or stages: a run measured outside pipetwin's
  // executor (scripts/bench_vs_torch.py --report, torch's runtime) that knows its throughput
  // alone. Only samples_per_s and iteration_s are compared; the rest stays empty.
  bool throughput_only = false;
  // Why the measurement is disturbed (the measured report's details.machine_load: other
  // processes or the hypervisor took CPU time before or during the run); empty when it is not.
  std::vector<std::string> disturbances;
  // The prediction's band from the profile's and the calibration's spread (`compare` simulates
  // the workload with every time, and the cluster with every calibrated figure, at the slow and
  // at the fast end of its 95% interval: Workload::AtSpreadEdge, Cluster::AtSpreadEdge): the
  // throughput the slow and the fast ends predict; absent when neither has a spread.
  struct Band {
    double low_samples_per_s = 0, high_samples_per_s = 0;
    bool Holds(double samples_per_s) const {
      return samples_per_s >= low_samples_per_s && samples_per_s <= high_samples_per_s;
    }
  };
  std::optional<Band> band;
  // The machine's speed, one core's GEMM rate in GFLOP/s (exec/measure/machine_speed.h), while
  // the prediction's profile was taken (the mean of its readings; AddProfileSpeed) and during the
  // measured run (its machine_load); 0 where not read.
  struct MachineSpeed {
    double profile_gflops = 0, run_gflops = 0;
  };
  MachineSpeed machine_speed;
};

// Records the profile's speed reading beside the run's; where the two differ by more than
// kDisturbingSpeedChange (partition/util/machine.h) the comparison is disturbed: the prediction
// was made on a machine that computed at another speed than the one measured.
void AddProfileSpeed(Comparison& comparison, double profile_gflops);

// Throws InputError when the reports do not describe the same run (the same schedule, workers,
// depth and samples per iteration; and stages, workers and devices unless throughput_only).
Comparison CompareReports(const Report& predicted, const Report& measured);

// {"predicted": report, "measured": report, "relative_error": {"samples_per_s": e,
//  "iteration_s": e, "peak_memory_bytes": e, "bubble_fraction": [by worker],
//  "peak_memory_per_device": [by device]}, "staleness_match": bool, "staleness": [...],
//  "busy_by_op": [{"worker", "op", "predicted_s", "measured_s", "relative_error"}, ...],
//  "exposed_communication": [{"worker", "predicted_s", "measured_s", "relative_error"}, ...]}
nlohmann::json ComparisonToJson(const Comparison& comparison);
std::string ComparisonToText(const Comparison& comparison);

// (predicted - measured) / measured; 0 when both are 0, +-inf when only measured is 0.
double RelativeError(double predicted, double measured);

}  // namespace pipetwin
