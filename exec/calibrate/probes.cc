// `pipetwin calibrate`: the probes (calibrate.h lists them) and the command around them. The
// model fitted to the probes is in calibration.cc.
#include "exec/calibrate/calibrate.h"
#include "partition/util/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include "exec/calibrate/fit.h"
#include "exec/runtime/device.h"
#include "exec/runtime/cpu_policy.h"
#include "exec/runtime/communicator.h"
#include "exec/launch/launcher.h"
#include "exec/launch/worker.h"
#include "exec/measure/machine_speed.h"
#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"
#include "partition/util/machine.h"

namespace pipetwin::exec {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMegabyte = 1 << 20;

// How much each probe measures; most of the time goes to the ping-pong, the all-reduce sweep and
// the rings. --quick: message sizes 4^k instead of 2^k and fewer repeats (docs/calibration.md
// says how long each takes).
struct ProbePlan {
  std::vector<double> sizes;   // ping-pong message bytes, 4 B to 16 MB
  int warmup = 2;              // untimed round trips per size and sweep
  int small_repeats = 0;       // timed round trips below 1 MB, per sweep (there are two)
  int large_repeats = 0;       // from 1 MB, per sweep
  int tcp_round_trips = 0;
  std::vector<double> allreduce_sizes;  // all-reduce bytes (fp32), 4 KB to 32 MB
  int allreduce_small_repeats = 0;      // per sweep, below 1 MB
  int allreduce_large_repeats = 0;      // per sweep, from 1 MB
  int gemm_n = kSpeedGemmN;    // the machine's speed reading (machine_speed.h)
  int gemm_warmup = 3;
  int gemm_repeats = 0;
  double copy_bytes = 32 * kMegabyte;  // well beyond the last-level cache of one core
  int copy_repeats = 0;

  int ring_gemms = 3;       // GEMMs per hop of the oversubscribed ring (a hop of compute)
  int ring_warmup = 10;     // hops
  int ring_hops = 0;        // timed hops per process
  int ring_repeats = 0;     // rings run; the median hop time is kept

  // The busy sender's two stages (BusySender), in GEMMs: stage 0's forward and backward, stage
  // 1's forward and backward together (the slower stage, as a pipeline's bottleneck).
  // Stage 1's count varies per micro-batch (uniform over [stage1, stage1 + jitter]): a fixed
  // period would lock the messages to one phase of the scheduler's tick, and a run's ops do not.
  int busy_forward_gemms = 4, busy_backward_gemms = 8, busy_stage1_gemms = 16,
      busy_stage1_jitter = 8;
  int busy_warmup = 5;      // micro-batches
  int busy_messages = 0;    // timed micro-batches per way (a computing or a sleeping sender)

  int RepeatsOf(double bytes) const { return bytes < kMegabyte ? small_repeats : large_repeats; }
};

ProbePlan PlanFor(bool quick) {
  ProbePlan p;
  for (double s = 4; s <= 16 * kMegabyte; s *= quick ? 4 : 2) p.sizes.push_back(s);
  p.small_repeats = quick ? 8 : 25;
  p.large_repeats = quick ? 4 : 8;
  p.tcp_round_trips = quick ? 200 : 1000;
  p.allreduce_sizes = quick ? std::vector<double>{4096, 256 * 1024, kMegabyte, 4 * kMegabyte,
                                                  16 * kMegabyte}
                            : std::vector<double>{4096, 64 * 1024, 256 * 1024, kMegabyte,
                                                  2 * kMegabyte, 4 * kMegabyte, 8 * kMegabyte,
                                                  16 * kMegabyte, 32 * kMegabyte};
  p.ring_hops = quick ? 60 : 200;
  // One ring's hop time moves from ring to ring, and the cost per message, a difference of two
  // such times, moves more: the median of several rings.
  p.ring_repeats = quick ? 3 : 5;
  p.busy_messages = quick ? 60 : 150;
  p.allreduce_small_repeats = quick ? 4 : 10;
  p.allreduce_large_repeats = quick ? 2 : 4;
  p.gemm_repeats = quick ? 10 : 30;
  p.copy_repeats = quick ? 3 : 7;
  return p;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc;
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// --- 1. Raw TCP ping-pong over loopback -----------------------------------------------------

// A socket, closed when it goes out of scope.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int CheckSocketCall(int result, const char* call) {
  if (result < 0)
    throw RunError(std::string("loopback TCP probe: ") + call + ": " + std::strerror(errno));
  return result;
}

void NoDelay(int fd) {
  const int on = 1;
  CheckSocketCall(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on), "setsockopt");
}

void SendAll(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    CheckSocketCall(static_cast<int>(n), "send");
    data += n, bytes -= static_cast<size_t>(n);
  }
}

void RecvAll(int fd, char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, data, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw RunError("loopback TCP probe: the peer closed the connection");
    CheckSocketCall(static_cast<int>(n), "recv");
    data += n, bytes -= static_cast<size_t>(n);
  }
}

sockaddr_in Loopback(int port) {
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Rank 1: listens on a free loopback port (announced through the store) and echoes `round_trips`
// messages of `bytes` back to rank 0.
void EchoTcp(Communicator& comm, const std::string& port_key, int bytes, int round_trips) {
  Socket listener(CheckSocketCall(::socket(AF_INET, SOCK_STREAM, 0), "socket"));
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof address;
  CheckSocketCall(::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), length), "bind");
  CheckSocketCall(::listen(listener.fd(), 1), "listen");
  CheckSocketCall(::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&address), &length),
                  "getsockname");
  comm.Publish(port_key, std::to_string(ntohs(address.sin_port)));
  Socket peer(CheckSocketCall(::accept(listener.fd(), nullptr, nullptr), "accept"));
  NoDelay(peer.fd());
  std::vector<char> message(bytes);
  for (int i = 0; i < round_trips; ++i) {
    RecvAll(peer.fd(), message.data(), message.size());
    SendAll(peer.fd(), message.data(), message.size());
  }
}

// Rank 0: the median round trip / 2 of `repeats` messages of `bytes` to rank 1 and back.
double TcpOneWaySeconds(Communicator& comm, const std::string& port_key, int bytes, int warmup,
                        int repeats) {
  const int port = std::stoi(comm.Fetch(port_key));
  Socket peer(CheckSocketCall(::socket(AF_INET, SOCK_STREAM, 0), "socket"));
  const sockaddr_in address = Loopback(port);
  CheckSocketCall(
      ::connect(peer.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address),
      "connect");
  NoDelay(peer.fd());
  std::vector<char> message(bytes, 'p');
  std::vector<double> round_trips;
  for (int i = 0; i < warmup + repeats; ++i) {
    const auto start = Clock::now();
    SendAll(peer.fd(), message.data(), message.size());
    RecvAll(peer.fd(), message.data(), message.size());
    if (i >= warmup) round_trips.push_back(SecondsSince(start));
  }
  return Median(round_trips) / 2;
}

// --- 2. c10d Gloo ping-pong -------------------------------------------------------------------

// Ranks 0 and 1: every size of the plan sent to the peer and back; rank 0 times the round trips.
// Two sweeps, up the sizes then down, each size's round trips back to back (steady state, as a
// pipeline repeats its few message sizes), half of the repeats in each: a drift of the machine
// over the probe (a program starting, the clock changing) adds about the same to every size
// instead of bending the curve the fit sees. (Not interleaved round by round: a message right
// after a much larger one often stalls, which no pipeline's steady message sizes see.)
// On a GPU (`device`) the messages go over the communicator's transport (NCCL or staged Gloo)
// and each round trip ends when the device has finished it.
std::vector<PingPongRow> GlooPingPong(Communicator& comm, const ProbePlan& plan,
                                      const ExecDevice& device = ExecDevice()) {
  const int peer = 1 - comm.rank();
  const size_t n = plan.sizes.size();
  std::vector<std::vector<double>> round_trips(n);
  auto sweep = [&](size_t i) {
    const auto elements = static_cast<int64_t>(plan.sizes[i]);
    torch::Tensor outgoing = torch::ones({elements}, device.options().dtype(torch::kUInt8));
    torch::Tensor incoming = torch::empty({elements}, device.options().dtype(torch::kUInt8));
    const std::string what = "calibration ping-pong of " + std::to_string(elements) + " bytes";
    const int tag = static_cast<int>(i);
    for (int r = 0; r < plan.warmup + plan.RepeatsOf(plan.sizes[i]); ++r) {
      const auto start = Clock::now();
      if (comm.rank() == 0) {
        comm.Send(outgoing, peer, tag, what);
        comm.Recv(incoming, peer, tag, what);
      } else {
        comm.Recv(incoming, peer, tag, what);
        comm.Send(outgoing, peer, tag, what);
      }
      if (device.cuda()) c10::cuda::device_synchronize();
      if (r >= plan.warmup) round_trips[i].push_back(SecondsSince(start));
    }
    comm.FinishSends();
  };
  for (size_t i = 0; i < n; ++i) sweep(i);
  for (size_t i = n; i-- > 0;) sweep(i);
  std::vector<PingPongRow> rows;
  for (size_t i = 0; i < n; ++i) {
    PingPongRow row;
    row.bytes = plan.sizes[i];
    row.repeats = static_cast<int>(round_trips[i].size());
    row.one_way_s = Median(round_trips[i]) / 2;
    row.fastest_one_way_s = *std::min_element(round_trips[i].begin(), round_trips[i].end()) / 2;
    rows.push_back(row);
  }
  return rows;
}

// c10d Gloo's all-reduce (a sum, in place) between ranks 0 and 1, at the sizes a replicated
// stage's gradients take; like the ping-pong, up the sizes then down. The mean per size, not the
// median: on shared cores some repeats stall for a scheduler tick, and a run's throughput pays
// for those stalls too.
std::vector<AllReduceRow> GlooAllReduce(Communicator& comm, const ProbePlan& plan,
                                        const ExecDevice& device = ExecDevice()) {
  const size_t n = plan.allreduce_sizes.size();
  std::vector<std::vector<double>> times(n);
  auto sweep = [&](size_t i) {
    const double bytes = plan.allreduce_sizes[i];
    torch::Tensor t = torch::ones({static_cast<int64_t>(bytes / 4)}, device.options());
    const std::string what = "calibration all-reduce of " + std::to_string(t.nbytes()) + " bytes";
    const int repeats =
        bytes < kMegabyte ? plan.allreduce_small_repeats : plan.allreduce_large_repeats;
    for (int r = 0; r < plan.warmup + repeats; ++r) {
      const auto start = Clock::now();
      comm.AllReduceSum(t, what);
      if (device.cuda()) c10::cuda::device_synchronize();
      if (r >= plan.warmup) times[i].push_back(SecondsSince(start));
    }
  };
  for (size_t i = 0; i < n; ++i) sweep(i);
  for (size_t i = n; i-- > 0;) sweep(i);
  std::vector<AllReduceRow> rows;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (double t : times[i]) sum += t;
    rows.push_back({plan.allreduce_sizes[i], static_cast<int>(times[i].size()),
                    sum / static_cast<double>(times[i].size()),
                    *std::min_element(times[i].begin(), times[i].end()), Median(times[i])});
  }
  return rows;
}

// More processes than cores passing messages in a ring, as a pipeline with more workers than
// cores does: every process, free to run on any core, holds a token, computes ring_gemms GEMMs,
// sends the token on (128 KB, an activation's size) and waits for the next one. The cores could
// do cores hops per GEMM time; the time per hop beyond that is what scheduling the processes
// costs per message. Returns rank 0's seconds per hop (each process does the same number) and
// the thread CPU time of its GEMMs per hop, measured in the same ring: the cost per message is
// their difference, so both come from the same seconds of this shared machine.
struct RingTimes {
  double hop_s = 0, gemm_cpu_s = 0, process_cpu_s = 0;  // process_cpu_s: this process's, per hop
};


RingTimes OversubscribedRing(Communicator& comm, const ProbePlan& plan, int n) {
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  torch::Tensor c = torch::empty({n, n});
  torch::Tensor token = torch::ones({32 * 1024});
  torch::Tensor incoming = torch::empty({32 * 1024});
  const int next = (comm.rank() + 1) % comm.world_size();
  const int previous = (comm.rank() + comm.world_size() - 1) % comm.world_size();
  const std::string what = "calibration ring";
  Clock::time_point start;
  double gemm_cpu_s = 0, process_cpu_start_s = 0;
  for (int hop = 0; hop < plan.ring_warmup + plan.ring_hops; ++hop) {
    if (hop == plan.ring_warmup) {
      start = Clock::now();
      process_cpu_start_s = ProcessCpuSeconds();
    }
    const double cpu_before = ThreadCpuSeconds();
    for (int g = 0; g < plan.ring_gemms; ++g) at::mm_out(c, a, b);
    if (hop >= plan.ring_warmup) gemm_cpu_s += ThreadCpuSeconds() - cpu_before;
    comm.Send(token, next, 2 << 20 | (hop & 0xffff), what);
    comm.Recv(incoming, previous, 2 << 20 | (hop & 0xffff), what);
  }
  RingTimes times{SecondsSince(start) / plan.ring_hops, gemm_cpu_s / plan.ring_hops,
                  (ProcessCpuSeconds() - process_cpu_start_s) / plan.ring_hops};
  comm.FinishSends();
  return times;
}

// Two workers with a core each, as two 1F1B stages in their steady state: stage 0 computes the
// next micro-batch's forward, sends its activation (128 KB), waits for the gradient and computes
// the backward; stage 1 waits for the activation, computes its forward and backward (more work:
// it is the bottleneck) and sends the gradient. Stage 1 sends the gradient and then posts its
// receive of the next activation, which stage 0 sent before it began waiting, so the activation
// moves (c10d Gloo sends once the receive is posted, ReceivePosting::kAtTheirOp) right when the
// gradient has woken stage 0 into its backward: stage 0's Gloo thread pushes it on a core its
// own computing thread holds, and the scheduler may let that thread run out its slice first
// (docs/calibration.md). Timed as stage 1's wait for each activation, once with stage 0
// computing its backward and once with it sleeping as long: the difference is what a sender that
// computes adds to a message. Returns stage 1's mean wait per message, each way (0 on rank 0).
struct BusySenderTimes {
  double busy_s = 0, idle_s = 0;
};

BusySenderTimes BusySender(Communicator& comm, const ProbePlan& plan, int n) {
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  torch::Tensor c = torch::empty({n, n});
  torch::Tensor activation = torch::ones({32 * 1024}), gradient = torch::ones({32 * 1024});
  const std::string what = "calibration busy sender";
  const auto gemms = [&](int count) {
    for (int g = 0; g < count; ++g) at::mm_out(c, a, b);
  };
  BusySenderTimes times;
  double backward_s = 0;  // stage 0's backwards, computing: the sleeping way sleeps as long
  for (int way = 0; way < 2; ++way) {  // 0: stage 0 computes its backward; 1: it sleeps
    const bool computing = way == 0;
    const int count = plan.busy_warmup + plan.busy_messages;
    std::mt19937 jitter(12345);  // the same micro-batches both ways
    std::uniform_int_distribution<int> extra(0, plan.busy_stage1_jitter);
    const int base = (5 + way) << 20;
    comm.Barrier();
    double waited_s = 0;
    if (comm.rank() == 0) {
      gemms(plan.busy_forward_gemms);
      comm.Send(activation, 1, base | 0, what);
      for (int k = 0; k < count; ++k) {
        if (k + 1 < count) {
          gemms(plan.busy_forward_gemms);
          comm.Send(activation, 1, base | ((k + 1) & 0xffff), what);
        }
        comm.Recv(gradient, 1, base | 0x10000 | (k & 0xffff), what);
        if (computing) {
          const Clock::time_point start = Clock::now();
          gemms(plan.busy_backward_gemms);
          backward_s += SecondsSince(start);
        } else {
          std::this_thread::sleep_for(std::chrono::duration<double>(backward_s / count));
        }
      }
    } else if (comm.rank() == 1) {
      for (int k = 0; k < count; ++k) {
        const Clock::time_point start = Clock::now();
        comm.Recv(activation, 0, base | (k & 0xffff), what);
        if (k >= plan.busy_warmup) waited_s += SecondsSince(start);
        gemms(plan.busy_stage1_gemms + extra(jitter));
        comm.Send(gradient, 0, base | 0x10000 | (k & 0xffff), what);
      }
      (computing ? times.busy_s : times.idle_s) = waited_s / plan.busy_messages;
    }
    comm.FinishSends();
  }
  return times;
}

// --- 3. Compute ---------------------------------------------------------------------------------

// The median time of copying `bytes` of fp32 from one tensor to another.
double CopySeconds(double bytes, int repeats) {
  torch::NoGradGuard no_grad;
  const torch::Tensor from = torch::rand({static_cast<int64_t>(bytes / 4)});
  torch::Tensor to = torch::empty_like(from);
  std::vector<double> seconds;
  for (int i = 0; i < 1 + repeats; ++i) {
    const auto start = Clock::now();
    to.copy_(from);
    if (i >= 1) seconds.push_back(SecondsSince(start));
  }
  return Median(seconds);
}

// `seconds` as text that reads back to the same double (std::to_string keeps 6 decimals).
std::string Exactly(double seconds) {
  std::ostringstream text;
  text << std::setprecision(17) << seconds;
  return text.str();
}

// --- GPU probes (calibrate --device cuda) ----------------------------------------------------

// Seconds of each of `repeats` runs of `work` after `warmup`, by CUDA events around each.
template <typename Work>
std::vector<double> GpuSeconds(const ExecDevice& device, int warmup, int repeats, Work work) {
  for (int i = 0; i < warmup; ++i) work();
  GpuTimer timer(device);
  for (int i = 0; i < repeats; ++i) {
    timer.Start(static_cast<size_t>(i));
    work();
    timer.End(static_cast<size_t>(i));
  }
  std::vector<double> seconds;
  for (const auto& [index, span] : timer.Read()) seconds.push_back(span.second - span.first);
  return seconds;
}

// bf16 GEMMs at the shapes of a transformer layer's linear layers (Megatron-LM's: tokens T = b s
// by hidden h: QKV T x 3h x h, projection T x h x h, MLP T x 4h x h and T x h x 4h; C[m x n] =
// A[m x k] B[k x n] with m = T) over T and h, and the attention's batched GEMMs (s = 2048, head
// size 128): the shapes the device model looks up its nearest measured one among
// (workloads/megatron, GemmEfficiency).
std::vector<MeasuredGemm> GpuGemms(const ExecDevice& device, bool quick) {
  torch::NoGradGuard no_grad;
  std::vector<MeasuredGemm> shapes;
  const std::vector<double> tokens = quick ? std::vector<double>{4096}
                                           : std::vector<double>{2048, 4096, 8192};
  const std::vector<double> hiddens = quick ? std::vector<double>{2048, 8192}
                                            : std::vector<double>{1024, 2048, 4096, 8192};
  for (double t : tokens)
    for (double h : hiddens)
      for (const auto& [n, k] : std::vector<std::pair<double, double>>{
               {3 * h, h}, {h, h}, {4 * h, h}, {h, 4 * h}})
        shapes.push_back({t, n, k, 1, 0});
  shapes.push_back({2048, 2048, 128, 32, 0});  // scores Q K^T per head
  shapes.push_back({2048, 128, 2048, 32, 0});  // context: probabilities V
  const auto options = device.options().dtype(torch::kBFloat16);
  for (MeasuredGemm& g : shapes) {
    const auto m = static_cast<int64_t>(g.m), n = static_cast<int64_t>(g.n),
               k = static_cast<int64_t>(g.k), batch = static_cast<int64_t>(g.batch);
    const torch::Tensor a = torch::randn({batch, m, k}, options);
    const torch::Tensor b = torch::randn({batch, k, n}, options);
    torch::Tensor c = torch::empty({batch, m, n}, options);
    const double seconds =
        Median(GpuSeconds(device, 3, quick ? 5 : 10, [&] { at::bmm_out(c, a, b); }));
    g.tflops = 2 * g.m * g.n * g.k * g.batch / seconds / 1e12;
  }
  return shapes;
}

// A device-to-device copy, and copies between pinned host memory and the device, by CUDA events.
void GpuCopies(const ExecDevice& device, bool quick, GpuProbes& p) {
  torch::NoGradGuard no_grad;
  const int64_t elements = (quick ? 64 : 256) * (int64_t{1} << 20);  // fp32: 256 MiB or 1 GiB
  const torch::Tensor from = torch::ones({elements}, device.options());
  torch::Tensor to = torch::empty_like(from);
  p.copy_bytes = 2.0 * static_cast<double>(from.nbytes());  // read and written
  p.copy_s = Median(GpuSeconds(device, 2, 10, [&] { to.copy_(from); }));
  const int64_t host_elements = elements / 4;
  torch::Tensor host = torch::ones({host_elements}, torch::TensorOptions().pinned_memory(true));
  torch::Tensor on_device = torch::empty({host_elements}, device.options());
  p.host_copy_bytes = static_cast<double>(host.nbytes());
  p.to_device_s =
      Median(GpuSeconds(device, 2, 10, [&] { on_device.copy_(host, /*non_blocking=*/true); }));
  p.to_host_s =
      Median(GpuSeconds(device, 2, 10, [&] { host.copy_(on_device, /*non_blocking=*/true); }));
}

void Report(const CalibrateOptions& options, const Cluster& cluster);

int RunGpuCalibrateWorker(const CalibrateOptions& options, const ProcessEnv& env) {
  ExecDevice device = SelectDevice("cuda", "fp32", env);  // refuses a machine without a GPU
  GpuProbes p;
  p.gpus = c10::cuda::device_count();
  const int workers = options.workers > 0 ? options.workers : p.gpus;
  // The messages go as the run's would: NCCL between GPUs of their own, staged Gloo between
  // workers sharing one (and between the two probe workers on a machine of one GPU).
  const bool shared = workers > p.gpus || p.gpus < 2;
  const auto index = static_cast<c10::DeviceIndex>(shared ? 0 : env.rank);
  device.device = torch::Device(torch::kCUDA, index);
  device.sharers = shared ? 2 : 1;
  c10::cuda::set_device(index);
  const ProbePlan plan = PlanFor(options.quick);
  Communicator comm(env, options.timeout_s, {{0, 1}},
                    std::string("calibrate cuda ") + (options.quick ? "quick" : "full"), false,
                    device);
  p.transport = comm.transport();
  using D = Communicator::Direction;
  comm.OpenChannels({{0, 1, D::kActivations}, {1, 0, D::kActivations}});
  p.ping_pong = GlooPingPong(comm, plan, device);
  p.allreduce = GlooAllReduce(comm, plan, device);
  comm.Barrier();
  if (env.rank == 0) {  // alone on the GPU
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, index) == cudaSuccess) {
      p.gpu = props.name;
      p.multiprocessors = props.multiProcessorCount;
      p.memory_bytes = static_cast<double>(props.totalGlobalMem);
    }
    p.gemms = GpuGemms(device, options.quick);
    GpuCopies(device, options.quick, p);
  }
  comm.Barrier();
  if (env.rank != 0) return 0;
  p.host = HostName();
  p.when = UtcNow();
  p.quick = options.quick;
  Cluster cluster;
  try {
    cluster = GpuCalibratedCluster(p, workers);
  } catch (const std::invalid_argument& e) {
    throw RunError(std::string("the message probe cannot be fitted: ") + e.what());
  }
  Report(options, cluster);
  return 0;
}

// Rank 0 prints the cluster and writes --output.
void Report(const CalibrateOptions& options, const Cluster& cluster) {
  if (!options.output_file.empty()) {
    CheckCalibrationOutput(options);  // again: it may have appeared while the probes ran
    WriteTextFileAtomically(options.output_file, JsonText(ClusterToJson(cluster), 1) + "\n");
  }
  if (options.json) {
    std::cout << JsonText(ClusterToJson(cluster), 1) << "\n";
  } else {
    std::cout << CalibrationSummary(cluster);
    if (!options.output_file.empty()) std::cout << "\nwrote " << options.output_file << "\n";
  }
  std::cout.flush();
}

}  // namespace

bool IsCalibrationWorker() {
  const char* hosted = std::getenv("PIPETWIN_STORE_HOSTED");
  return hosted && std::string(hosted) == "1" && std::getenv("RANK");
}

int RunCalibrate(const CalibrateOptions& options, const std::string& program,
                 const std::vector<std::string>& args) {
  CheckCalibrationOutput(options);
  if (options.device == "cuda") return LaunchLocalWorkers(2, program, args);  // ranks 0 and 1
  // One process per core (at least 2), and one more for the oversubscribed ring.
  const int workers = std::max(2, static_cast<int>(AllowedCpus().size())) + 1;
  return LaunchLocalWorkers(workers, program, args);
}

namespace {

// One round of the CPU probes in every worker; rank 0's return holds them all. `round` keys the
// values exchanged through the store, which a later round must not read.
CalibrationProbes ProbeRound(Communicator& comm, const ProbePlan& plan, const ProcessEnv& env,
                             const std::vector<int>& cpus, int round) {
  CalibrationProbes probes;
  probes.cpus = cpus;
  const int cores = probes.cores();
  const std::string key = "calibrate/" + std::to_string(round) + "/";
  // As `pipetwin run` places its workers: one core each, one intra-op thread.
  AllowCpus({cpus[env.rank % cores]});
  if (env.rank == 1)
    EchoTcp(comm, key + "tcp-port", probes.tcp_message_bytes, plan.warmup + plan.tcp_round_trips);
  if (env.rank == 0)
    probes.tcp_one_way_s = TcpOneWaySeconds(comm, key + "tcp-port", probes.tcp_message_bytes,
                                            plan.warmup, plan.tcp_round_trips);
  if (env.rank < 2) probes.ping_pong = GlooPingPong(comm, plan);
  if (env.rank < 2) probes.allreduce = GlooAllReduce(comm, plan);

  {
    const BusySenderTimes busy = BusySender(comm, plan, plan.gemm_n);  // every rank: barriers
    if (env.rank == 1) {  // stage 1 timed it; rank 0 holds the round's probes
      comm.Publish(key + "busy-sender/busy", Exactly(busy.busy_s));
      comm.Publish(key + "busy-sender/idle", Exactly(busy.idle_s));
    }
    if (env.rank == 0) {
      probes.busy_sender.messages = plan.busy_messages;
      probes.busy_sender.busy_s = std::stod(comm.Fetch(key + "busy-sender/busy"));
      probes.busy_sender.idle_s = std::stod(comm.Fetch(key + "busy-sender/idle"));
    }
  }

  comm.Barrier();
  if (env.rank == 0) {
    probes.compute.gemm_n = plan.gemm_n;
    probes.compute.alone_s = GemmSeconds(plan.gemm_n, plan.gemm_warmup, plan.gemm_repeats);
    probes.compute.copy_bytes = 2 * plan.copy_bytes;  // read and written
    probes.compute.copy_s = CopySeconds(plan.copy_bytes, plan.copy_repeats);
  }
  comm.Barrier();  // the others wait while rank 0 computes alone
  if (env.rank < cores)
    comm.Publish(key + "busy/" + std::to_string(env.rank),
                 Exactly(GemmSeconds(plan.gemm_n, plan.gemm_warmup, plan.gemm_repeats)));
  // The ring: every process (one more than the cores), free to run anywhere.
  comm.Barrier();
  AllowCpus(cpus);
  // As the executor's workers run where they outnumber the cores (cpu_policy.h).
  std::string refused;
  probes.ring.policy = UseRoundRobin(&refused) ? "SCHED_RR" : "SCHED_OTHER (" + refused + ")";
  if (timespec slice{}; probes.ring.policy == "SCHED_RR" && sched_rr_get_interval(0, &slice) == 0)
    probes.ring.round_robin_slice_s = static_cast<double>(slice.tv_sec) + slice.tv_nsec * 1e-9;
  for (int k = 0; k < plan.ring_repeats; ++k) {
    if (k > 0) comm.Barrier();  // every ring starts together
    const RingTimes ring = OversubscribedRing(comm, plan, plan.gemm_n);
    probes.ring.hop_s_each.push_back(ring.hop_s);
    probes.ring.gemm_cpu_s_each.push_back(ring.gemm_cpu_s);
    // Every process's CPU per hop, summed at rank 0 (ring k's, keyed by ring and rank).
    if (env.rank != 0)
      comm.Publish(key + "ring-cpu/" + std::to_string(k) + "/" + std::to_string(env.rank),
                   Exactly(ring.process_cpu_s));
    else
      probes.ring.process_cpu_s_each.push_back(ring.process_cpu_s);
  }
  // The all-reduce again, as the executor's workers run it where they outnumber the cores
  // (ClusterLevel::allreduce_round_robin); the other processes wait, blocked, as a pipeline's
  // other stage does while its replicated stage reduces at the end of an iteration.
  if (probes.ring.policy == "SCHED_RR") {
    comm.Barrier();
    if (env.rank < 2) probes.allreduce_round_robin = GlooAllReduce(comm, plan);
  }
  UseDefaultScheduling();
  if (env.rank != 0) return probes;
  for (int k = 0; k < plan.ring_repeats; ++k)
    for (int r = 1; r < env.world_size; ++r)
      probes.ring.process_cpu_s_each[k] += std::stod(
          comm.Fetch(key + "ring-cpu/" + std::to_string(k) + "/" + std::to_string(r)));
  probes.ring.processes = env.world_size;
  probes.ring.gemms_per_hop = plan.ring_gemms;
  probes.ring.hops = plan.ring_hops;
  probes.ring.hop_s = Median(probes.ring.hop_s_each);
  for (int r = 0; r < cores; ++r)
    probes.compute.busy_s.push_back(std::stod(comm.Fetch(key + "busy/" + std::to_string(r))));
  probes.tcp_round_trips = plan.tcp_round_trips;
  return probes;
}

// Rank 0's stopping rule after `rounds` rounds and `seconds` (calibrate --target-spread).
bool EnoughRounds(const CalibrateOptions& o, const std::vector<CalibrationProbes>& rounds,
                  int workers, double seconds) {
  const int n = static_cast<int>(rounds.size());
  if (o.target_spread <= 0) return n >= o.rounds;
  if (seconds >= o.max_seconds) return true;
  if (n < std::max(2, o.rounds)) return false;
  return JudgedSpread(SpreadOfRounds(FiguresOfRounds(rounds, workers))) <= o.target_spread;
}

}  // namespace

int RunCalibrateWorker(const CalibrateOptions& options, const ProcessEnv& env) {
  if (options.device == "cuda") return RunGpuCalibrateWorker(options, env);
  const ProbePlan plan = PlanFor(options.quick);
  CalibrationRounds rounds;
  rounds.target_spread = options.target_spread;
  rounds.max_seconds = options.max_seconds;
  MachineLoad& load = rounds.load;
  load.subject = "calibration";
  load.load_average_1m = LoadAverage1m();  // before the probes add to it
  const std::vector<int> cpus = AllowedCpus();  // before this process pins itself
  load.cpus = static_cast<int>(cpus.size());
  const int cores = load.cpus;
  const int workers = options.workers > 0 ? options.workers : cores;
  at::set_num_threads(1);
  SetBlasThreads(1);
  // Ranks 0 and 1 also form a replica group, for the all-reduce probe.
  Communicator comm(env, options.timeout_s, {{0, 1}},
                    std::string("calibrate ") + (options.quick ? "quick" : "full"));
  // The machine before the probes: rank 0 watches it while the others wait at the barrier.
  if (env.rank == 0) {
    load.before = SampleLoad(cpus, 0.3);
    load.sampled_before = true;
  }
  comm.Barrier();
  const CpuTimes cpu_from = ReadCpuTimes();
  const double own_from = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  for (int round = 0;; ++round) {
    CalibrationProbes probes = ProbeRound(comm, plan, env, cpus, round);
    const std::string more = "calibrate/" + std::to_string(round) + "/more";
    if (env.rank != 0) {
      if (comm.Fetch(more) == "0") break;
      continue;
    }
    rounds.rounds.push_back(std::move(probes));
    try {
      const bool enough = EnoughRounds(options, rounds.rounds, workers, SecondsSince(start));
      comm.Publish(more, enough ? "0" : "1");
      if (enough) break;
    } catch (const std::invalid_argument& e) {
      comm.Publish(more, "0");
      throw RunError(std::string("the loopback probe cannot be fitted: ") + e.what());
    }
  }
  // Every probe process's CPU is the calibration's own; the rest of the cores' time is foreign.
  comm.Publish("calibrate/cpu/" + std::to_string(env.rank), Exactly(ProcessCpuSeconds() - own_from));
  if (env.rank != 0) return 0;
  rounds.seconds = SecondsSince(start);
  double own_s = 0;
  for (int r = 0; r < env.world_size; ++r)
    own_s += std::stod(comm.Fetch("calibrate/cpu/" + std::to_string(r)));
  load.during = ShareBetween(cpu_from, ReadCpuTimes(), cpus, rounds.seconds, own_s);
  load.measured_during = true;

  CalibrationProbes& first = rounds.rounds.front();
  first.load_average = load.load_average_1m;
  first.host = HostName();
  first.when = UtcNow();
  first.memory_bytes = PhysicalMemoryBytes();
  first.probe_workers = env.world_size;
  first.quick = options.quick;
  Cluster cluster;
  try {
    cluster = CalibratedCluster(rounds, workers);
  } catch (const std::invalid_argument& e) {
    throw RunError(std::string("the loopback probe cannot be fitted: ") + e.what());
  }
  Report(options, cluster);
  return 0;
}

}  // namespace pipetwin::exec
