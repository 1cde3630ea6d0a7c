#include "partition/util/host.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "partition/util/machine.h"

namespace pipetwin {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

void AllowCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

std::string SelfExecutable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  path[n] = '\0';
  return path;
}

std::string SiblingProgram(const std::string& name) {
  const std::string self = SelfExecutable();
  if (self.empty()) return "";
  const std::string path = self.substr(0, self.find_last_of('/') + 1) + name;
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

double PhysicalMemoryBytes() {
  if (const double total = MemInfoBytes("MemTotal"); total > 0) return total;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_bytes = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0 ? static_cast<double>(pages) * page_bytes : 0;
}

double PeakRssBytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::string HostName() {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace pipetwin
