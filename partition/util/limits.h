// The largest counts pipetwin accepts, from any file or command line. Each is far beyond any
// cluster or model in use (the largest published runs: 16,384 GPUs, 126 layers, a few thousand
// micro-batches per iteration) and small enough that every count fits an int and every product
// the core forms of two or three of them (devices x stages, micro-batches x iterations x stages)
// fits 64 bits. A value beyond its limit is refused as bad input (JsonReader::Integer, the
// command-line options), never narrowed.
#pragma once

#include <cstdint>
#include <string>

namespace pipetwin {

struct Limit {
  int64_t max;
  const char* what;  // "devices in a cluster"
};

constexpr Limit kMaxDevices{1 << 20, "devices in a cluster"};          // also replicas, ids
// Layers: 2^16, 500 times the largest model in use, and a per-layer profile of a large graph
// (PipeDream's NASNet: 1,000 nodes) has room; the workload of 2^16 GPT blocks takes 0.2 GB.
constexpr Limit kMaxLayers{1 << 16, "layers of a workload"};           // also stages, positions
constexpr Limit kMaxMicrobatches{1 << 24, "micro-batches per iteration"};
constexpr Limit kMaxIterations{1 << 20, "iterations of a run"};
constexpr Limit kMaxSamples{1 << 24, "samples in a batch"};            // batch sizes
constexpr Limit kMaxDimension{1 << 24, "elements along one dimension"};  // widths, sequences
constexpr Limit kMaxCount{1 << 24, "chunks, buckets, cores and tallies"};

// Any other quantity read (a time in ms or us, bytes, FLOPs, FLOP/s, a rate): at most 1e18 in
// size. Every product the core forms of such a quantity and the counts above stays far inside a
// double (1e18 x 2^64 < 1e38), so no result is infinite; 1e18 is above every FLOP/s, byte and
// time figure of the hardware in use (an H100 peaks at 4e15 FLOP/s, sparse FP8).
constexpr double kMaxMagnitude = 1e18;

// A link's bandwidth, in Gbit/s: from 1 kbit/s to 1 Pbit/s (the fastest links in use run at
// 3.2 Tbit/s); SimGrid's solver fails on rates far outside (1e308 Gbps aborted it).
constexpr double kMinBandwidthGbps = 1e-6, kMaxBandwidthGbps = 1e6;

// "an integer from 1 to 1048576 (pipetwin's limit for devices in a cluster)"
std::string DescribeRange(int64_t min, const Limit& limit);

}  // namespace pipetwin
