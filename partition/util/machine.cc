#include "partition/util/machine.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "partition/util/host.h"

namespace pipetwin {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The first number in `path`, or `fallback` when it is absent or not a number ("max").
double NumberIn(const std::string& path, double fallback) {
  std::ifstream in(path);
  double value = 0;
  return in >> value ? value : fallback;
}

// The path of this process's cgroup for `controller` under /sys/fs/cgroup (v1: the controller's
// line; v2: the "0::" line), "" when unknown.
std::string CgroupDirectory(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, unified;
  while (std::getline(in, line)) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string names = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (names.empty()) unified = "/sys/fs/cgroup" + path;
    std::istringstream list(names);
    for (std::string name; std::getline(list, name, ',');)
      if (name == controller) return "/sys/fs/cgroup/" + controller + path;
  }
  return unified;
}

// The lowest limit a cgroup file sets along the cgroup's path up to its root (v1 and v2 limits
// apply from every ancestor); `fallback` when none is readable or all say "max".
double CgroupLimit(const std::string& controller, const std::string& file_v1,
                   const std::string& file_v2, double fallback) {
  std::string dir = CgroupDirectory(controller);
  double limit = fallback;
  while (!dir.empty() && dir.size() >= std::string("/sys/fs/cgroup").size()) {
    for (const std::string& f : {file_v1, file_v2})
      limit = std::min(limit, NumberIn(dir + "/" + f, fallback));
    const auto slash = dir.find_last_of('/');
    if (slash == std::string::npos || slash == 0) break;
    dir.resize(slash);
  }
  return limit;
}

// `x` with `digits` digits after the point.
std::string Fixed(double x, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << x;
  return out.str();
}

std::string Percent(double share) { return Fixed(100 * share, 1) + "%"; }

}  // namespace

MachineCapacity ThisMachineCapacity() {
  MachineCapacity m;
  m.cpus = static_cast<int>(AllowedCpus().size());
  const double total = PhysicalMemoryBytes();
  m.memory_bytes = CgroupLimit("memory", "memory.limit_in_bytes", "memory.max", total);
  m.available_memory_bytes = std::min(MemInfoBytes("MemAvailable"), m.memory_bytes);
  // Tasks: the kernel's limits on processes and threads, the user's, and the pids cgroup's.
  double tasks = NumberIn("/proc/sys/kernel/threads-max", 0);
  const double pid_max = NumberIn("/proc/sys/kernel/pid_max", 0);
  if (pid_max > 0) tasks = tasks > 0 ? std::min(tasks, pid_max) : pid_max;
  rlimit nproc{};
  if (::geteuid() != 0 && ::getrlimit(RLIMIT_NPROC, &nproc) == 0 &&
      nproc.rlim_cur != RLIM_INFINITY)
    tasks = tasks > 0 ? std::min(tasks, static_cast<double>(nproc.rlim_cur))
                      : static_cast<double>(nproc.rlim_cur);
  tasks = CgroupLimit("pids", "pids.max", "pids.max", tasks);
  // /proc/loadavg's fourth field: runnable / existing scheduling entities (tasks) now.
  std::ifstream loadavg("/proc/loadavg");
  std::string a, b, c, entities;
  long long existing = 0;
  if (loadavg >> a >> b >> c >> entities) {
    const auto slash = entities.find('/');
    if (slash != std::string::npos) existing = std::atoll(entities.c_str() + slash + 1);
  }
  m.free_tasks = tasks > 0 ? std::max(0LL, static_cast<long long>(tasks) - existing) : -1;
  const double slice_ms = NumberIn("/proc/sys/kernel/sched_rr_timeslice_ms", 0);
  if (slice_ms > 0) m.rr_timeslice_s = slice_ms / 1000;
  return m;
}

std::string WhyMachineCannotHold(const RunDemand& need, const MachineCapacity& machine) {
  std::ostringstream why;
  const long long tasks = static_cast<long long>(need.processes) * need.threads_per_process;
  if (machine.free_tasks >= 0 && tasks > machine.free_tasks) {
    why << need.processes << " worker processes start at least " << tasks
        << " tasks (processes and threads), more than the " << machine.free_tasks
        << " this machine lets start now (RLIMIT_NPROC, pid_max, threads-max, pids cgroup)";
    return why.str();
  }
  if (machine.memory_bytes > 0 && need.MemoryBytes() > machine.memory_bytes) {
    why << need.processes << " worker processes need at least "
        << Fixed(need.MemoryBytes() / kGiB, 1) << " GiB (" << Fixed(need.model_bytes / kGiB, 1)
        << " GiB of weights, gradients and optimizer state, and "
        << Fixed(need.process_bytes / kGiB, 2) << " GiB per process before its model), more "
        << "than this machine's " << Fixed(machine.memory_bytes / kGiB, 1) << " GiB";
    return why.str();
  }
  const int cpus = std::max(1, machine.cpus);
  const int per_cpu = (need.processes + cpus - 1) / cpus;
  const double wait_s = (per_cpu - 1) * machine.rr_timeslice_s;
  if (wait_s > need.peer_timeout_s) {
    why << need.processes << " workers on " << cpus << " CPUs are " << per_cpu
        << " per CPU: one can wait " << Fixed(wait_s, 1) << " s for its CPU ("
        << per_cpu - 1 << " time slices of " << Fixed(machine.rr_timeslice_s * 1e3, 0)
        << " ms), longer than the " << Fixed(need.peer_timeout_s, 1)
        << " s its peers wait for it (--timeout)";
    return why.str();
  }
  return "";
}

CpuTimes ReadCpuTimes() {
  CpuTimes t;
  std::ifstream in("/proc/stat");
  static const double tick_s = 1.0 / std::max(1L, ::sysconf(_SC_CLK_TCK));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(line[3])) continue;
    std::istringstream fields(line.substr(3));
    size_t cpu = 0;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) continue;
    fields >> steal;  // absent on old kernels
    if (t.busy_s.size() <= cpu) {
      t.busy_s.resize(cpu + 1, 0);
      t.steal_s.resize(cpu + 1, 0);
    }
    t.busy_s[cpu] = (user + nice + system) * tick_s;
    t.steal_s[cpu] = steal * tick_s;
  }
  return t;
}

double MemInfoBytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kilobytes = 0;
  while (in >> key >> kilobytes) {
    if (key == field + ":") return kilobytes * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

double LoadAverage1m() {
  return NumberIn("/proc/loadavg", -1);
}

namespace {
double ClockSeconds(clockid_t clock) {
  timespec t{};
  if (::clock_gettime(clock, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
}  // namespace

double ProcessCpuSeconds() { return ClockSeconds(CLOCK_PROCESS_CPUTIME_ID); }

double ThreadCpuSeconds() { return ClockSeconds(CLOCK_THREAD_CPUTIME_ID); }

std::vector<int> ThreadIdsOfThisProcess() {
  std::vector<int> ids;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] != '.') ids.push_back(std::atoi(entry->d_name));
    ::closedir(dir);
  }
  if (ids.empty()) ids.push_back(static_cast<int>(::syscall(SYS_gettid)));
  return ids;
}

ThreadAccount ReadThreadAccount() {
  ThreadAccount a;
  const int self = static_cast<int>(::syscall(SYS_gettid));
  for (int id : ThreadIdsOfThisProcess()) {
    const std::string task = "/proc/self/task/" + std::to_string(id);
    // schedstat: nanoseconds running, nanoseconds runnable and waiting, time slices.
    std::ifstream schedstat(task + "/schedstat");
    double running_ns = 0, waiting_ns = 0;
    if (!(schedstat >> running_ns >> waiting_ns)) continue;  // ended, or no schedstat
    a.available = true;
    if (id != self) {
      a.others_running_s += running_ns * 1e-9;
      continue;
    }
    a.waiting_s = waiting_ns * 1e-9;
    std::ifstream status(task + "/status");
    for (std::string key; status >> key;)
      if (key == "nonvoluntary_ctxt_switches:") status >> a.preempted;
  }
  return a;
}

ThreadAccount Since(const ThreadAccount& to, const ThreadAccount& from) {
  ThreadAccount d;
  d.available = to.available && from.available;
  d.waiting_s = std::max(0.0, to.waiting_s - from.waiting_s);
  d.preempted = std::max(0.0, to.preempted - from.preempted);
  d.others_running_s = std::max(0.0, to.others_running_s - from.others_running_s);
  return d;
}

double ProcessPrivateBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    double kilobytes = 0;
    if (fields >> key >> kilobytes && key == "RssAnon:") return kilobytes * 1024;
  }
  return 0;
}

LoadShare ShareBetween(const CpuTimes& from, const CpuTimes& to, const std::vector<int>& cpus,
                       double seconds, double own_cpu_s) {
  LoadShare share;
  double busy = 0, steal = 0;
  int counted = 0;
  for (int cpu : cpus) {
    const auto c = static_cast<size_t>(cpu);
    if (cpu < 0 || c >= from.busy_s.size() || c >= to.busy_s.size()) continue;
    busy += to.busy_s[c] - from.busy_s[c];
    steal += to.steal_s[c] - from.steal_s[c];
    ++counted;
  }
  if (counted == 0 || !(seconds > 0)) return share;
  const double capacity = seconds * counted;
  share.foreign = std::clamp((busy - own_cpu_s) / capacity, 0.0, 1.0);
  share.steal = std::clamp(steal / capacity, 0.0, 1.0);
  return share;
}

LoadShare SampleLoad(const std::vector<int>& cpus, double seconds) {
  using Clock = std::chrono::steady_clock;
  const CpuTimes from = ReadCpuTimes();
  const double own = ProcessCpuSeconds();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const CpuTimes to = ReadCpuTimes();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return ShareBetween(from, to, cpus, elapsed, ProcessCpuSeconds() - own);
}

std::optional<std::string> SpeedChangeWarning(double from_gflops, const std::string& from_when,
                                              double to_gflops, const std::string& to_when) {
  if (from_gflops <= 0 || to_gflops <= 0) return std::nullopt;
  const double change = to_gflops / from_gflops - 1;
  if (std::fabs(change) <= kDisturbingSpeedChange) return std::nullopt;
  return "the machine computed " + Percent(std::fabs(change)) + (change < 0 ? " slower " : " faster ") +
         to_when + " than " + from_when + " (one core's GEMM: " + Fixed(to_gflops, 1) +
         " against " + Fixed(from_gflops, 1) +
         " GFLOP/s; other guests of a shared host, or the CPU's own clock, change it without any "
         "steal time)";
}

double MachineLoad::Gflops() const {
  if (gflops_before > 0 && gflops_after > 0) return (gflops_before + gflops_after) / 2;
  return gflops_before > 0 ? gflops_before : gflops_after;
}

std::vector<std::string> MachineLoad::Warnings() const {
  std::vector<std::string> out;
  const auto judge = [&](const LoadShare& s, const std::string& when) {
    if (s.foreign > kDisturbingLoadShare)
      out.push_back("the machine was loaded " + when + ": other processes used " +
                    Percent(s.foreign) + " of the " + std::to_string(cpus) +
                    " CPUs the " + subject + " uses (load average " + Fixed(load_average_1m, 2) +
                    "): the measurement is disturbed");
    if (s.steal > kDisturbingLoadShare)
      out.push_back("the hypervisor took " + Percent(s.steal) + " of the " +
                    std::to_string(cpus) + " CPUs " + when +
                    " (steal time): the measurement is disturbed");
  };
  if (sampled_before) judge(before, "before the " + subject);
  if (measured_during) judge(during, "during the " + subject);
  if (auto w = SpeedChangeWarning(gflops_before, "before the " + subject, gflops_after,
                                  "after it"))
    out.push_back(*w + ": the measurement is disturbed");
  return out;
}

nlohmann::json MachineLoad::ToJson() const {
  const auto share = [](bool known, const LoadShare& s) {
    return known ? nlohmann::json{{"foreign_share", s.foreign}, {"steal_share", s.steal}}
                 : nlohmann::json(nullptr);
  };
  return {{"cpus", cpus},
          {"load_average_1m", load_average_1m},
          {"before", share(sampled_before, before)},
          {"during", share(measured_during, during)},
          {"one_core_gflops", gflops_before > 0 || gflops_after > 0
                                  ? nlohmann::json{{"before", gflops_before}, {"after", gflops_after}}
                                  : nlohmann::json(nullptr)},
          {"disturbed", Disturbed()}};
}

MachineLoad MachineLoad::FromJson(const nlohmann::json& j) {
  MachineLoad load;
  if (!j.is_object()) return load;
  load.cpus = j.value("cpus", 0);
  load.load_average_1m = j.value("load_average_1m", -1.0);
  const auto share = [&](const char* key, bool* known, LoadShare* s) {
    if (!j.contains(key) || !j[key].is_object()) return;
    *known = true;
    s->foreign = j[key].value("foreign_share", 0.0);
    s->steal = j[key].value("steal_share", 0.0);
  };
  share("before", &load.sampled_before, &load.before);
  share("during", &load.measured_during, &load.during);
  if (j.contains("one_core_gflops") && j["one_core_gflops"].is_object()) {
    load.gflops_before = j["one_core_gflops"].value("before", 0.0);
    load.gflops_after = j["one_core_gflops"].value("after", 0.0);
  }
  return load;
}

std::string LoadShareToText(const LoadShare& share) {
  std::ostringstream out;
  out.precision(6);
  out << share.foreign << " " << share.steal;
  return out.str();
}

bool LoadShareFromText(const std::string& text, LoadShare* share) {
  std::istringstream in(text);
  LoadShare s;
  if (!(in >> s.foreign >> s.steal)) return false;
  *share = s;
  return true;
}

}  // namespace pipetwin
