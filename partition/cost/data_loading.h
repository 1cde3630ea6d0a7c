// Data loading: the one rule the planners, the baselines and both back ends follow.
//
// A workload's data-loading time (Workload::data_loading_ms, per reference batch; PipeDream's
// profiles time it as their Input node's forward) is the host's work of producing a batch, not
// the device's: it does not scale with the device's speed, only with the samples (linearly, as
// every other time). Every replica of the input stage loads its own micro-batches.
//  - "overlapped" (the default; PyTorch's DataLoader with worker processes prefetching, as every
//    large training run uses): a loader beside each input-stage worker loads micro-batches in
//    the order the worker needs them, up to kLoaderPrefetch ahead; a forward waits for its
//    micro-batch. It costs nothing while loading keeps up and bounds the input stage's rate
//    when it does not: in steady state the stage takes max(its compute, the load) per
//    micro-batch.
//  - "serial": the input stage loads each micro-batch just before its forward (a loader without
//    workers): its compute plus the load per micro-batch.
// Neither planner of PipeDream's public code counts it; our PipeDream planner in its "compat"
// cost model reproduces that code exactly and leaves it out (the plan says so).
#pragma once

#include <optional>
#include <string>

#include "partition/model/workload.h"

namespace pipetwin {

enum class DataLoading { kOverlapped, kSerial };

// PyTorch DataLoader's default prefetch_factor (2 batches per loader worker).
constexpr int kLoaderPrefetch = 2;

const char* DataLoadingName(DataLoading mode);  // "overlapped", "serial"
std::optional<DataLoading> ParseDataLoading(const std::string& name);

// Milliseconds to load `samples` samples (0 when the workload has no data-loading time).
double LoadMs(const Workload& workload, double samples);

// The input stage's steady-state time per micro-batch, from its compute (forward and backward)
// and the load of one micro-batch: compute + load (serial) or max(compute, load) (overlapped).
double InputStageMs(double compute_ms, double load_ms, DataLoading mode);

}  // namespace pipetwin
