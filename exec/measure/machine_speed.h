// The machine's speed at one instant: one core's fp32 GEMM rate, taken the same way by
// `pipetwin calibrate` (compute.alone_gflops), by `pipetwin profile` before and after its rounds
// and by a run's rank 0 before and after its op lists, each time with no other process of
// pipetwin's computing. A guest whose host is shared with others computes slower when they are
// busy without any steal time showing it (docs/validation.md): comparing these readings is how
// `compare` tells a prediction that was wrong from a machine that changed between the profile
// and the run.
//
//   const double gflops = OneCoreGflops();   // ~10-40 ms
#pragma once

namespace pipetwin::exec {

// The GEMM's order: 2 n^3 = 33.5 MFLOP, long enough to time, short enough to stay in cache.
constexpr int kSpeedGemmN = 256;
// Timed GEMMs per reading (after 3 untimed): the median of these is the reading.
constexpr int kSpeedGemmRepeats = 60;

inline double GemmFlops(int n) { return 2.0 * n * n * n; }

// The median time of one n x n by n x n fp32 GEMM on this thread, after `warmup` untimed ones.
double GemmSeconds(int n, int warmup, int repeats);

// One core's fp32 GEMM rate now, GFLOP/s: kSpeedGemmN, the median of kSpeedGemmRepeats.
double OneCoreGflops();

}  // namespace pipetwin::exec
