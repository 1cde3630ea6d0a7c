#include "exec/calibrate/fit.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "exec/measure/machine_speed.h"
#include "partition/util/format.h"
#include "partition/util/spread.h"

namespace pipetwin::exec {

namespace {

nlohmann::json Microseconds(const std::vector<double>& seconds) {
  nlohmann::json out = nlohmann::json::array();
  for (double s : seconds) out.push_back(s * 1e6);
  return out;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}


// The ping-pong table with the fit's prediction and relative residual of every size.
nlohmann::json PingPongTable(const std::vector<PingPongRow>& rows, const LinearFit& fit) {
  nlohmann::json table = nlohmann::json::array();
  for (const PingPongRow& r : rows) {
    const double predicted = fit.Predict(r.bytes);
    table.push_back({{"bytes", r.bytes},
                     {"repeats", r.repeats},
                     {"one_way_us", r.one_way_s * 1e6},
                     {"fastest_us", r.fastest_one_way_s * 1e6},
                     {"predicted_us", predicted * 1e6},
                     {"residual", (predicted - r.one_way_s) / r.one_way_s}});
  }
  return table;
}

// The largest |residual| over the rows of `min_bytes` to `max_bytes`.
double WorstResidual(const nlohmann::json& table, double min_bytes, double max_bytes) {
  double worst = 0;
  for (const auto& row : table) {
    const double bytes = row["bytes"].get<double>();
    if (bytes >= min_bytes && bytes <= max_bytes)
      worst = std::max(worst, std::abs(row["residual"].get<double>()));
  }
  return worst;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

LinearFit FitOneWayTime(const std::vector<PingPongRow>& rows) {
  int small = 0, large = 0;
  for (const PingPongRow& r : rows) {
    if (!(r.one_way_s > 0) || r.bytes < 0)
      throw std::invalid_argument("FitOneWayTime: a row of " + std::to_string(r.bytes) +
                                  " bytes has no positive time");
    small += r.bytes <= kLatencyRegimeBytes;
    large += r.bytes >= kBandwidthRegimeBytes;
  }
  if (small == 0) throw std::invalid_argument("FitOneWayTime: no message of 4 KB or less");
  if (large == 0) throw std::invalid_argument("FitOneWayTime: no message of 1 MB or more");
  // Each term from its regime, the other held: a = mean (t - b S) over S <= 4 KB, then
  // b = argmin sum (a + b S - t)^2 over S >= 1 MB = sum S (t - a) / sum S^2. Each round shrinks
  // the other term's leak by a factor (mean small S) * sum S / sum S^2 < 1e-3: three suffice.
  LinearFit fit;
  for (int round = 0; round < 3; ++round) {
    double sum_s = 0, size_product = 0, size_square = 0;
    for (const PingPongRow& r : rows)
      if (r.bytes <= kLatencyRegimeBytes) sum_s += r.one_way_s - fit.seconds_per_byte * r.bytes;
    fit.intercept_s = sum_s / small;
    for (const PingPongRow& r : rows) {
      if (r.bytes < kBandwidthRegimeBytes) continue;
      size_product += r.bytes * (r.one_way_s - fit.intercept_s);
      size_square += r.bytes * r.bytes;
    }
    fit.seconds_per_byte = size_product / size_square;
  }
  if (!(fit.seconds_per_byte > 0))
    throw std::invalid_argument("FitOneWayTime: the time does not grow with the message size");
  if (!(fit.intercept_s > 0))
    throw std::invalid_argument("FitOneWayTime: the small messages leave no per-message time");
  return fit;
}

double SmallMessageSpread(const std::vector<PingPongRow>& rows) {
  double spread = 0;
  for (const PingPongRow& r : rows)
    if (r.bytes <= kLatencyRegimeBytes && r.fastest_one_way_s > 0)
      spread = std::max(spread, r.one_way_s / r.fastest_one_way_s);
  return spread;
}

namespace {

// The calibrated server: `workers` devices on loopback at the ping-pong's bandwidth and the raw
// TCP latency, and the measured all-reduce as its table (returned as a record too).
// The all-reduce probe (2 ranks) as the level's table, and as a record.
void AddAllReduceTable(const std::vector<AllReduceRow>& rows, AllReduceTable& table,
                       nlohmann::json& allreduce_record) {
  allreduce_record = nlohmann::json::array();
  if (rows.empty()) return;
  table.ranks = 2;
  for (const AllReduceRow& r : rows) {
    table.bytes.push_back(r.bytes);
    table.seconds.push_back(r.seconds);
    allreduce_record.push_back({{"bytes", r.bytes},
                                {"repeats", r.repeats},
                                {"mean_us", r.seconds * 1e6},
                                {"median_us", r.median_s * 1e6},
                                {"fastest_us", r.fastest_s * 1e6}});
  }
}

ClusterLevel HostLevel(const CalibrationProbes& p, const LinearFit& fit, double latency_s,
                       int workers, nlohmann::json& allreduce_record) {
  ClusterLevel host;
  host.name = "host";
  host.count = workers;
  host.bandwidth_gbps = fit.bandwidth_bytes_per_s() * 8 / 1e9;
  host.latency_us = latency_s * 1e6;
  host.link = "loopback";
  AddAllReduceTable(p.allreduce, host.allreduce, allreduce_record);
  return host;
}

// What one message between workers of an oversubscribed server costs, from the ring: P
// processes on C cores, each hop a process's GEMMs of CPU time W (measured in the ring; without
// it, G GEMMs of the busy-core time). Ideal hop time P W / C; what a hop takes beyond it, per
// core, is the core time one message costs: per ring, hop x C / P - W, then the median over the
// rings (per_message_us). Both terms of each difference come from the same ring, since W moves
// between probes taken seconds apart.
// Under SCHED_OTHER most of that is core time nobody used (the OS scheduler left a core idle
// while a process waited in the other's queue), and the simulator charges all of it: it is the
// only stand-in it has for that loss. Under SCHED_RR, as the executor's workers run on such a
// server, the kernel runs a waiting thread on any free core at once and the simulator's cores
// serve the workers first come, first served; a message then costs the CPU it takes
// (cpu_per_message_us: c10d Gloo's threads, the kernel's copies), and that is what is charged.
struct RingCost {
  double message_us = 0;  // the charge, oversubscribed_message_us
  nlohmann::json record;
};

// The CPU per message beyond the GEMMs, per ring, and how busy the ring kept the cores, into
// `ring.record`; under SCHED_RR it becomes the charge.
void AddRingCpu(const CalibrationProbes& p, const std::vector<double>& work_each,
                RingCost& ring) {
  if (p.ring.process_cpu_s_each.size() != p.ring.hop_s_each.size() || p.ring.hop_s_each.empty())
    return;
  std::vector<double> busy_each, cpu_per_message_each;
  for (size_t k = 0; k < p.ring.hop_s_each.size(); ++k) {
    busy_each.push_back(p.ring.process_cpu_s_each[k] / (p.cores() * p.ring.hop_s_each[k]));
    cpu_per_message_each.push_back(
        std::max(0.0, p.ring.process_cpu_s_each[k] / p.ring.processes - work_each[k]));
  }
  ring.record["process_cpu_per_hop_us_each"] = Microseconds(p.ring.process_cpu_s_each);
  ring.record["cores_busy_each"] = busy_each;
  ring.record["cores_busy"] = Median(busy_each);
  ring.record["cpu_per_message_us_each"] = Microseconds(cpu_per_message_each);
  ring.record["cpu_per_message_us"] = Median(cpu_per_message_each) * 1e6;
  if (p.ring.policy == "SCHED_RR") ring.message_us = Median(cpu_per_message_each) * 1e6;
}

RingCost OversubscribedRingCost(const CalibrationProbes& p, double busy_s) {
  RingCost ring;
  if (p.ring.hops <= 0 || p.ring.processes <= p.cores()) return ring;
  const bool measured_work = p.ring.gemm_cpu_s_each.size() == p.ring.hop_s_each.size() &&
                             !p.ring.hop_s_each.empty();
  std::vector<double> work_each, per_message_each;
  for (size_t k = 0; k < p.ring.hop_s_each.size(); ++k) {
    work_each.push_back(measured_work ? p.ring.gemm_cpu_s_each[k]
                                      : p.ring.gemms_per_hop * busy_s);
    per_message_each.push_back(std::max(
        0.0, p.ring.hop_s_each[k] * p.cores() / p.ring.processes - work_each.back()));
  }
  const double hop_work_s = work_each.empty() ? p.ring.gemms_per_hop * busy_s : Median(work_each);
  const double per_message_s =
      per_message_each.empty()
          ? std::max(0.0, p.ring.hop_s * p.cores() / p.ring.processes - hop_work_s)
          : Median(per_message_each);
  ring.message_us = per_message_s * 1e6;
  ring.record = {{"processes", p.ring.processes},
                 {"gemms_per_hop", p.ring.gemms_per_hop},
                 {"hops", p.ring.hops},
                 {"message_bytes", 128 * 1024},
                 {"hop_us", p.ring.hop_s * 1e6},
                 {"hop_us_each", Microseconds(p.ring.hop_s_each)},
                 {"work_per_hop_us_each", Microseconds(work_each)},
                 {"work", measured_work ? "thread CPU time of the GEMMs in the ring"
                                        : "the compute probe's busy-core GEMM time"},
                 {"per_message_us_each", Microseconds(per_message_each)},
                 {"ideal_hop_us", p.ring.processes * hop_work_s / p.cores() * 1e6},
                 {"per_message_us", per_message_s * 1e6}};
  AddRingCpu(p, work_each, ring);
  ring.record["policy"] = p.ring.policy;
  return ring;
}

// Where each of the cluster's numbers comes from, stated in the file it is written to.
nlohmann::json Sources() {
  return {{"shared_cores", "CPUs in this process's affinity mask (sched_getaffinity)"},
          {"round_robin_slice_ms",
           "sched_rr_get_interval of the ring's processes under SCHED_RR (absent where SCHED_RR "
           "was refused)"},
          {"latency_us", "one-way time of the raw TCP ping-pong (loopback_tcp)"},
          {"communication_overhead_us",
           "fit intercept_us - latency_us: c10d Gloo's own cost per message"},
          {"bandwidth_gbps", "1 / slope of the fit of the c10d Gloo ping-pong"},
          {"levels[0].allreduce", "mean times of the c10d Gloo all-reduce probe (2 ranks)"},
          {"levels[0].allreduce_round_robin",
           "the same probe under SCHED_RR, the processes free on every core (allreduce_round_robin; "
           "absent where SCHED_RR was refused)"},
          {"oversubscribed_message_us",
           "oversubscribed_ring: cpu_per_message_us where the ring ran under SCHED_RR, else "
           "per_message_us (hop_us x cores / processes - the GEMMs' CPU per hop)"},
          {"busy_sender_message_us",
           "busy_sender: busy_us - idle_us, stage 1's mean wait for an activation whose sender "
           "computes, less its wait when the sender sleeps as long"},
          {"device.peak_flops", "compute.alone_gflops (flops_efficiency 1)"},
          {"device.memory_bandwidth_bytes_per_s", "memory_copy.bandwidth_gbps"},
          {"launch_overhead_us", "0: profiled layer times already include LibTorch's dispatch"}};
}

nlohmann::json FitRecord(const nlohmann::json& table, const LinearFit& fit, double bandwidth_gbps) {
  return {{"model", "one_way_us = intercept_us + bytes * 8e-3 / bandwidth_gbps"},
          {"method", "intercept_us: mean of one_way_us - bytes / bandwidth up to 4 KB; bandwidth: "
                     "least squares of one_way_us - intercept_us from 1 MB"},
          {"intercept_us", fit.intercept_s * 1e6},
          {"bandwidth_gbps", bandwidth_gbps},
          {"max_abs_residual_to_4KB", WorstResidual(table, 0, kLatencyRegimeBytes)},
          {"max_abs_residual_between",
           WorstResidual(table, kLatencyRegimeBytes + 1, kBandwidthRegimeBytes - 1)},
          {"max_abs_residual_from_1MB", WorstResidual(table, kBandwidthRegimeBytes, 1e300)}};
}

nlohmann::json ComputeRecord(const CalibrationProbes& p) {
  nlohmann::json busy_gflops = nlohmann::json::array();
  for (double s : p.compute.busy_s) busy_gflops.push_back(GemmFlops(p.compute.gemm_n) / s / 1e9);
  return {{"probe", "fp32 GEMM " + std::to_string(p.compute.gemm_n) + "^3, one thread per process"},
          {"alone_gflops", GemmFlops(p.compute.gemm_n) / p.compute.alone_s / 1e9},
          {"busy_processes", static_cast<int>(p.compute.busy_s.size())},
          {"busy_gflops", busy_gflops},
          {"contention_slowdown", Mean(p.compute.busy_s) / p.compute.alone_s}};
}

// The raw probes, kept in the cluster for inspection (never read back into the model).
nlohmann::json CalibrationRecord(const CalibrationProbes& p, const LinearFit& fit,
                                 const Cluster& c, const nlohmann::json& allreduce,
                                 const nlohmann::json& allreduce_round_robin,
                                 const nlohmann::json& ring) {
  const nlohmann::json table = PingPongTable(p.ping_pong, fit);
  return {{"tool", "pipetwin calibrate"},
          {"when", p.when},
          {"host", p.host},
          {"cores", p.cores()},
          {"cpus", FormatIdList(p.cpus)},
          {"quick", p.quick},
          {"probe_workers", p.probe_workers},
          {"load_average", p.load_average},
          {"small_message_spread", SmallMessageSpread(p.ping_pong)},
          {"sources", Sources()},
          {"loopback_tcp",
           {{"message_bytes", p.tcp_message_bytes},
            {"round_trips", p.tcp_round_trips},
            {"one_way_us", p.tcp_one_way_s * 1e6}}},
          {"ping_pong", table},
          {"allreduce", allreduce},
          {"allreduce_round_robin", allreduce_round_robin},
          {"oversubscribed_ring", ring},
          {"busy_sender",
           {{"messages", p.busy_sender.messages},
            {"busy_us", p.busy_sender.busy_s * 1e6},
            {"idle_us", p.busy_sender.idle_s * 1e6},
            {"message_us", c.busy_sender_message_us}}},
          {"fit", FitRecord(table, fit, c.levels[0].bandwidth_gbps)},
          {"compute", ComputeRecord(p)},
          {"memory_copy",
           {{"bytes", p.compute.copy_bytes},
            {"bandwidth_gbps", c.device.memory_bandwidth_bytes_per_s * 8 / 1e9}}}};
}

}  // namespace

Cluster CalibratedCluster(const CalibrationProbes& p, int workers) {
  const LinearFit fit = FitOneWayTime(p.ping_pong);
  // a = latency + overhead: the raw TCP time is the latency, c10d Gloo's share the rest.
  const double latency_s = std::min(p.tcp_one_way_s, fit.intercept_s);
  Cluster c;
  c.name = "this machine (calibrated)";
  c.device.name = "CPU (" + p.host + ")";
  c.device.memory_bytes = p.memory_bytes;
  c.device.relative_speed = 1;  // workloads are profiled on this machine (`pipetwin profile`)
  // Analytic (FLOP-counted) workloads: one core's measured GEMM rate, taken as reached.
  c.device.peak_flops = GemmFlops(p.compute.gemm_n) / p.compute.alone_s;
  c.device.flops_efficiency = 1;
  c.device.memory_bandwidth_bytes_per_s = p.compute.copy_bytes / p.compute.copy_s;
  nlohmann::json allreduce, allreduce_round_robin;
  c.levels = {HostLevel(p, fit, latency_s, workers, allreduce)};
  AddAllReduceTable(p.allreduce_round_robin, c.levels[0].allreduce_round_robin,
                    allreduce_round_robin);
  c.network_model = "datacenter";
  c.launch_overhead_us = 0;
  c.communication_overhead_us = (fit.intercept_s - latency_s) * 1e6;
  c.shared_cores = p.cores();
  c.round_robin_slice_ms = p.ring.round_robin_slice_s * 1e3;
  const RingCost ring = OversubscribedRingCost(p, Mean(p.compute.busy_s));
  c.oversubscribed_message_us = ring.message_us;
  if (p.busy_sender.messages > 0)
    c.busy_sender_message_us = std::max(0.0, p.busy_sender.busy_s - p.busy_sender.idle_s) * 1e6;
  c.calibration = CalibrationRecord(p, fit, c, allreduce, allreduce_round_robin, ring.record);
  return c;
}

CalibrationProbes MergeRounds(const std::vector<CalibrationProbes>& rounds) {
  if (rounds.empty()) throw std::invalid_argument("MergeRounds: no rounds");
  CalibrationProbes m = rounds.front();
  if (rounds.size() == 1) return m;
  const double n = static_cast<double>(rounds.size());
  const auto mean = [&](auto field) {
    double sum = 0;
    for (const CalibrationProbes& r : rounds) sum += field(r);
    return sum / n;
  };
  for (const CalibrationProbes& r : rounds)
    if (r.ping_pong.size() != m.ping_pong.size() || r.allreduce.size() != m.allreduce.size() ||
        r.allreduce_round_robin.size() != m.allreduce_round_robin.size() ||
        r.compute.busy_s.size() != m.compute.busy_s.size())
      throw std::invalid_argument("MergeRounds: the rounds probed different sizes");
  m.tcp_round_trips = 0;
  for (const CalibrationProbes& r : rounds) m.tcp_round_trips += r.tcp_round_trips;
  m.tcp_one_way_s = mean([](const CalibrationProbes& r) { return r.tcp_one_way_s; });
  for (size_t i = 0; i < m.ping_pong.size(); ++i) {
    PingPongRow& row = m.ping_pong[i];
    row.repeats = 0;
    for (const CalibrationProbes& r : rounds) {
      row.repeats += r.ping_pong[i].repeats;
      row.fastest_one_way_s = std::min(row.fastest_one_way_s, r.ping_pong[i].fastest_one_way_s);
    }
    row.one_way_s = mean([i](const CalibrationProbes& r) { return r.ping_pong[i].one_way_s; });
  }
  // Each all-reduce table: per size, the mean of the rounds' means and medians.
  const auto merge_table = [&](std::vector<AllReduceRow> CalibrationProbes::*table) {
    for (size_t i = 0; i < (m.*table).size(); ++i) {
      AllReduceRow& row = (m.*table)[i];
      row.repeats = 0;
      for (const CalibrationProbes& r : rounds) {
        row.repeats += (r.*table)[i].repeats;
        row.fastest_s = std::min(row.fastest_s, (r.*table)[i].fastest_s);
      }
      row.seconds = mean([&](const CalibrationProbes& r) { return (r.*table)[i].seconds; });
      row.median_s = mean([&](const CalibrationProbes& r) { return (r.*table)[i].median_s; });
    }
  };
  merge_table(&CalibrationProbes::allreduce);
  merge_table(&CalibrationProbes::allreduce_round_robin);
  m.compute.alone_s = mean([](const CalibrationProbes& r) { return r.compute.alone_s; });
  m.compute.copy_s = mean([](const CalibrationProbes& r) { return r.compute.copy_s; });
  for (size_t i = 0; i < m.compute.busy_s.size(); ++i)
    m.compute.busy_s[i] = mean([i](const CalibrationProbes& r) { return r.compute.busy_s[i]; });
  RingProbe& ring = m.ring;
  ring.hop_s_each.clear(), ring.gemm_cpu_s_each.clear(), ring.process_cpu_s_each.clear();
  for (const CalibrationProbes& r : rounds) {
    const RingProbe& k = r.ring;
    ring.hop_s_each.insert(ring.hop_s_each.end(), k.hop_s_each.begin(), k.hop_s_each.end());
    ring.gemm_cpu_s_each.insert(ring.gemm_cpu_s_each.end(), k.gemm_cpu_s_each.begin(),
                                k.gemm_cpu_s_each.end());
    ring.process_cpu_s_each.insert(ring.process_cpu_s_each.end(), k.process_cpu_s_each.begin(),
                                   k.process_cpu_s_each.end());
  }
  ring.hop_s = Median(ring.hop_s_each);
  // The busy sender: the mean of the rounds' means (every round times as many messages).
  m.busy_sender.messages = 0;
  for (const CalibrationProbes& r : rounds) m.busy_sender.messages += r.busy_sender.messages;
  m.busy_sender.busy_s = mean([](const CalibrationProbes& r) { return r.busy_sender.busy_s; });
  m.busy_sender.idle_s = mean([](const CalibrationProbes& r) { return r.busy_sender.idle_s; });
  return m;
}

RoundFigures FiguresOfRounds(const std::vector<CalibrationProbes>& rounds, int workers) {
  RoundFigures f;
  for (const CalibrationProbes& r : rounds) {
    const Cluster c = CalibratedCluster(r, workers);
    f.gemm_gflops.push_back(c.device.peak_flops / 1e9);
    f.copy_gbps.push_back(c.device.memory_bandwidth_bytes_per_s * 8 / 1e9);
    f.intercept_us.push_back(c.levels[0].latency_us + c.communication_overhead_us);
    f.bandwidth_gbps.push_back(c.levels[0].bandwidth_gbps);
    f.oversubscribed_message_us.push_back(c.oversubscribed_message_us);
    f.busy_sender_message_us.push_back(c.busy_sender_message_us);
    const std::vector<double>& seconds = c.levels[0].allreduce.seconds;
    f.allreduce_s.resize(seconds.size());
    for (size_t i = 0; i < seconds.size(); ++i) f.allreduce_s[i].push_back(seconds[i]);
  }
  return f;
}

ClusterSpread SpreadOfRounds(const RoundFigures& f) {
  const auto relative = [](const std::vector<double>& v) {
    return std::min(0.99, EstimateFromRounds(v).RelativeHalfWidth());
  };
  ClusterSpread s;
  s.compute = std::max(relative(f.gemm_gflops), relative(f.copy_gbps));
  s.message = relative(f.intercept_us);
  s.bandwidth = relative(f.bandwidth_gbps);
  s.oversubscribed_message = relative(f.oversubscribed_message_us);
  s.busy_sender_message = relative(f.busy_sender_message_us);
  for (const std::vector<double>& size : f.allreduce_s)
    s.allreduce = std::max(s.allreduce, relative(size));
  return s;
}

double JudgedSpread(const ClusterSpread& s) {
  return std::max({s.compute, s.message, s.bandwidth});
}

namespace {

// One figure's rounds and interval, for calibration.stability.
nlohmann::json FigureRecord(const std::vector<double>& each) {
  const RoundEstimate e = EstimateFromRounds(each);
  return {{"each", each},
          {"mean", e.mean},
          {"half_width", e.half_width},
          {"relative", e.RelativeHalfWidth()}};
}

// One sentence for the rounds far off the others in a figure the stopping rule judges.
void AddFarRounds(const std::string& figure, const std::string& unit,
                  const std::vector<double>& each, std::vector<std::string>& out) {
  const std::vector<FarRound> far = RoundsFarOff(each);
  if (far.empty()) return;
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << far.size() << " of " << each.size()
       << " rounds measured " << figure << " more than " << std::setprecision(0)
       << 100 * kRoundFarOff << "% from the rounds' median " << std::setprecision(1)
       << far.front().median << " " << unit << " (rounds";
  for (const FarRound& f : far) line << " " << f.round + 1;
  line << "; from " << *std::min_element(each.begin(), each.end()) << " to "
       << *std::max_element(each.begin(), each.end()) << " " << unit << ")";
  out.push_back(line.str());
}

}  // namespace

Cluster CalibratedCluster(const CalibrationRounds& r, int workers) {
  Cluster c = CalibratedCluster(MergeRounds(r.rounds), workers);
  const RoundFigures f = FiguresOfRounds(r.rounds, workers);
  c.spread = SpreadOfRounds(f);
  const double judged = JudgedSpread(c.spread);
  const bool settled = r.target_spread > 0 && r.rounds.size() >= 2 && judged <= r.target_spread;
  std::vector<std::string> disturbances = r.load.Warnings();
  AddFarRounds("one core's GEMM rate", "GFLOP/s", f.gemm_gflops, disturbances);
  AddFarRounds("a message's fixed time", "us", f.intercept_us, disturbances);
  AddFarRounds("the bandwidth", "Gbit/s", f.bandwidth_gbps, disturbances);
  if (r.target_spread > 0 && !settled) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "the calibration did not settle: +-"
         << 100 * judged << "% after " << r.rounds.size() << " rounds in " << r.seconds
         << " s (target +-" << 100 * r.target_spread << "%, --max-seconds " << r.max_seconds
         << ")";
    disturbances.push_back(line.str());
  }
  nlohmann::json allreduce = nlohmann::json::array();
  for (const std::vector<double>& size : f.allreduce_s) allreduce.push_back(FigureRecord(size));
  c.calibration["stability"] = {
      {"rounds", static_cast<int>(r.rounds.size())},
      {"seconds", r.seconds},
      {"target_spread", r.target_spread},
      {"judged_spread", judged},
      {"settled", settled},
      {"method", "each figure fitted per round; mean over the rounds +- the half-width of its "
                 "95% interval (Student's t over the round values); the cluster's figures are "
                 "the fit of the rounds' mean probes"},
      {"figures",
       {{"gemm_gflops", FigureRecord(f.gemm_gflops)},
        {"copy_gbps", FigureRecord(f.copy_gbps)},
        {"message_intercept_us", FigureRecord(f.intercept_us)},
        {"bandwidth_gbps", FigureRecord(f.bandwidth_gbps)},
        {"oversubscribed_message_us", FigureRecord(f.oversubscribed_message_us)},
        {"busy_sender_message_us", FigureRecord(f.busy_sender_message_us)},
        {"allreduce_s", allreduce}}},
      {"machine_load", r.load.ToJson()},
      {"disturbances", disturbances}};
  return c;
}

Cluster GpuCalibratedCluster(const GpuProbes& p, int workers) {
  const LinearFit fit = FitOneWayTime(p.ping_pong);
  const bool shared = workers > p.gpus;
  Cluster c;
  c.name = "this machine (calibrated, " + p.gpu + ")";
  c.device.name = p.gpu;
  // The GPU's memory over the workers on it (LOCAL_RANK % GPUs: the first GPUs take one more
  // when they do not divide).
  c.device.memory_bytes = p.memory_bytes / ((workers + p.gpus - 1) / p.gpus);
  c.device.relative_speed = 1;  // workloads are profiled on this GPU (`pipetwin profile`)
  double best = 0;
  for (const MeasuredGemm& g : p.gemms) best = std::max(best, g.tflops * 1e12);
  // Analytic workloads: the best measured GEMM rate as the peak, the table for the shapes.
  c.device.peak_flops = best;
  c.device.flops_efficiency = 1;
  c.device.gemm_efficiency = 1;
  c.device.gemm_table = p.gemms;
  c.device.multiprocessors = p.multiprocessors;
  c.device.memory_bandwidth_bytes_per_s = p.copy_bytes / p.copy_s;
  ClusterLevel server;
  server.name = "server";
  server.count = workers;
  server.bandwidth_gbps = fit.bandwidth_bytes_per_s() * 8 / 1e9;
  server.latency_us = fit.intercept_s * 1e6;
  // Staged messages cross PCIe twice and Gloo's loopback; NCCL between a server's GPUs takes
  // their direct links (each pair its own: the simulator's full NVLink zone). The probe's
  // bandwidth is what the link carries either way.
  server.link = shared ? "loopback" : "nvlink";
  nlohmann::json allreduce;
  AddAllReduceTable(p.allreduce, server.allreduce, allreduce);
  c.levels = {server};
  c.network_model = "datacenter";
  // The workers beyond the GPUs take turns on them (LOCAL_RANK % GPUs), in this calibration and
  // in any scenario the cluster is widened to (ShapeCalibratedMachine).
  c.shared_cores = p.gpus;
  const nlohmann::json table = PingPongTable(p.ping_pong, fit);
  nlohmann::json gemms = nlohmann::json::array();
  for (const MeasuredGemm& g : p.gemms)
    gemms.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}, {"tflops", g.tflops}});
  c.calibration = {
      {"kind", "gpu"},
      {"host", p.host},
      {"when", p.when},
      {"gpu", p.gpu},
      {"gpus", p.gpus},
      {"gpu_memory_bytes", p.memory_bytes},
      {"quick", p.quick},
      {"transport", p.transport},
      {"sources",
       {{"device.gemm_table", "bf16 GEMMs timed by CUDA events on one GPU (gemms)"},
        {"device.memory_bandwidth_bytes_per_s", "a device-to-device copy (memory_copy)"},
        {"levels[0]", "the fit of the ping-pong over the run's transport: latency_us its "
                      "intercept, bandwidth_gbps 1 / its slope"},
        {"levels[0].allreduce", "mean times of the all-reduce probe (2 ranks)"},
        {"shared_cores", "the GPUs: workers beyond them take turns on them"}}},
      {"gemms", gemms},
      {"memory_copy", {{"bytes", p.copy_bytes}, {"seconds", p.copy_s},
                       {"bandwidth_gbps", p.copy_bytes / p.copy_s * 8 / 1e9}}},
      {"host_copies", {{"bytes", p.host_copy_bytes},
                       {"to_device_gbps", p.host_copy_bytes / p.to_device_s * 8 / 1e9},
                       {"to_host_gbps", p.host_copy_bytes / p.to_host_s * 8 / 1e9}}},
      {"ping_pong", table},
      {"allreduce", allreduce},
      {"fit", FitRecord(table, fit, server.bandwidth_gbps)}};
  return c;
}

namespace {

std::string GpuCalibrationSummary(const Cluster& c) {
  const nlohmann::json& k = c.calibration;
  const ClusterLevel& server = c.levels.at(0);
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << c.name << ": " << server.count << " worker" << (server.count > 1 ? "s" : "") << " on "
      << k["gpus"].get<int>() << " GPU" << (k["gpus"].get<int>() > 1 ? "s" : "") << " of "
      << k["host"].get<std::string>() << ", " << c.device.memory_bytes / (1 << 30)
      << " GiB each, " << k["when"].get<std::string>() << "\n";
  out << "GEMMs        bf16, " << c.device.gemm_table.size() << " shapes, best "
      << c.device.peak_flops / 1e12 << " TFLOP/s (CUDA events)\n";
  out << "memory       device copy " << k["memory_copy"]["bandwidth_gbps"].get<double>() / 8
      << " GB/s; host to device " << k["host_copies"]["to_device_gbps"].get<double>() / 8
      << " GB/s, device to host " << k["host_copies"]["to_host_gbps"].get<double>() / 8
      << " GB/s (pinned)\n";
  out << "messages     " << k["transport"].get<std::string>() << ": one way = "
      << server.latency_us << " us + bytes / " << server.bandwidth_gbps / 8 << " GB/s\n";
  if (server.count > c.shared_cores)
    out << "shared GPU   " << server.count << " workers take turns on " << c.shared_cores
        << " GPU" << (c.shared_cores > 1 ? "s" : "") << " (shared_cores)\n";
  return out.str();
}

}  // namespace

std::string CalibrationSummary(const Cluster& c) {
  if (c.calibration.value("kind", std::string()) == "gpu") return GpuCalibrationSummary(c);
  const nlohmann::json& k = c.calibration;
  const ClusterLevel& host = c.levels.at(0);
  const auto& compute = k["compute"];
  const auto& fit = k["fit"];
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << c.name << ": " << host.count << " worker" << (host.count > 1 ? "s" : "") << " sharing "
      << c.shared_cores << " core" << (c.shared_cores > 1 ? "s" : "") << " (CPUs "
      << k["cpus"].get<std::string>() << ") of " << k["host"].get<std::string>() << ", "
      << c.device.memory_bytes / (1 << 30) << " GiB, " << k["when"].get<std::string>() << "\n";
  out << "compute      one core alone " << compute["alone_gflops"].get<double>()
      << " GFLOP/s (" << compute["probe"].get<std::string>() << "); with "
      << compute["busy_processes"].get<int>() << " busy: " << std::setprecision(2)
      << compute["contention_slowdown"].get<double>() << "x slower\n";
  out << std::setprecision(1) << "memory       copy on one core "
      << k["memory_copy"]["bandwidth_gbps"].get<double>() / 8 << " GB/s\n";
  out << "loopback     latency " << host.latency_us << " us (raw TCP ping-pong, one way)\n";
  out << "c10d Gloo    one way = " << fit["intercept_us"].get<double>() << " us + bytes / "
      << host.bandwidth_gbps / 8 << " GB/s (" << host.bandwidth_gbps
      << " Gbit/s); per-message overhead " << c.communication_overhead_us << " us\n";
  if (!host.allreduce.empty()) {
    out << "all-reduce   2 ranks:";
    for (size_t i = 0; i < host.allreduce.bytes.size(); ++i) {
      const double b = host.allreduce.bytes[i];
      out << (i ? ", " : " ") << std::setprecision(0)
          << (b >= (1 << 20) ? b / (1 << 20) : b / 1024) << (b >= (1 << 20) ? " MB " : " KB ")
          << std::setprecision(2) << host.allreduce.seconds[i] * 1e3 << " ms";
    }
    out << std::setprecision(1) << " (c10d Gloo, measured)\n";
  }
  if (c.oversubscribed_message_us > 0) {
    const nlohmann::json& ring = k["oversubscribed_ring"];
    const std::string policy = ring.value("policy", std::string("SCHED_OTHER"));
    out << std::setprecision(0) << "more workers than cores: under " << policy
        << ", a message costs " << c.oversubscribed_message_us
        << (policy == "SCHED_RR" ? " us of CPU" : " us of core time") << " (a ring of "
        << ring["processes"].get<int>() << " processes, " << ring["hop_us"].get<double>()
        << " us a hop against " << ring["ideal_hop_us"].get<double>() << " ideal, "
        << ring["per_message_us"].get<double>() << " us of core time a message";
    if (ring.contains("cores_busy"))
      out << ", of it " << ring["cpu_per_message_us"].get<double>()
          << " us of CPU beyond the GEMMs; the cores " << 100 * ring["cores_busy"].get<double>()
          << "% busy";
    out << ")\n";
  }
  if (c.round_robin_slice_ms > 0)
    out << std::setprecision(0) << "round robin  a worker keeps its core until it waits, "
        << c.round_robin_slice_ms << " ms slices while others wait (sched_rr_get_interval)\n";
  if (k.contains("busy_sender") && k["busy_sender"].value("messages", 0) > 0) {
    const nlohmann::json& busy = k["busy_sender"];
    out << std::setprecision(0) << "busy sender  a message waits " << c.busy_sender_message_us
        << " us more while its sender computes (two 1F1B stages: "
        << busy["busy_us"].get<double>() << " us for an activation against "
        << busy["idle_us"].get<double>() << " us with its sender asleep, "
        << busy["messages"].get<int>() << " messages each)\n";
  }
  if (k.contains("stability")) {
    const nlohmann::json& q = k["stability"];
    const auto pm = [](double relative) {
      std::ostringstream s;
      s << std::fixed << std::setprecision(1) << "+-" << 100 * relative << "%";
      return s.str();
    };
    out << std::setprecision(1) << "spread       " << q["rounds"].get<int>() << " rounds in "
        << q["seconds"].get<double>() << " s: compute " << pm(c.spread.compute) << ", message "
        << pm(c.spread.message) << ", bandwidth " << pm(c.spread.bandwidth) << ", all-reduce "
        << pm(c.spread.allreduce) << ", oversubscribed message "
        << pm(c.spread.oversubscribed_message) << ", busy sender "
        << pm(c.spread.busy_sender_message)
        << (q["settled"].get<bool>() ? " (settled)" : "") << "\n";
    for (const auto& d : q["disturbances"])
      out << "warning      " << d.get<std::string>() << "\n";
  }
  const double spread = k["small_message_spread"].get<double>();
  if (spread > kContendedSpread)
    out << "warning      other work held the cores (load average "
        << k["load_average"].get<double>() << "; tiny messages took " << spread
        << "x their fastest time): these numbers describe this machine under that load\n";
  out << std::setprecision(0) << "fit          residual at most "
      << 100 * fit["max_abs_residual_to_4KB"].get<double>() << "% up to 4 KB (latency), "
      << 100 * fit["max_abs_residual_from_1MB"].get<double>() << "% from 1 MB (bandwidth), "
      << 100 * fit["max_abs_residual_between"].get<double>() << "% in between\n\n";
  out << std::right << std::setw(12) << "bytes" << std::setw(10) << "repeats" << std::setw(14)
      << "measured us" << std::setw(14) << "predicted us" << std::setw(10) << "residual\n";
  for (const auto& row : k["ping_pong"])
    out << std::setw(12) << std::setprecision(0) << row["bytes"].get<double>() << std::setw(10)
        << row["repeats"].get<int>() << std::setprecision(1) << std::setw(14)
        << row["one_way_us"].get<double>() << std::setw(14) << row["predicted_us"].get<double>()
        << std::setw(8) << std::setprecision(0) << 100 * row["residual"].get<double>() << "%\n";
  return out.str();
}

}  // namespace pipetwin::exec
