#include "exec/runtime/cpu_policy.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace pipetwin::exec {
namespace {

std::vector<pid_t> ThreadsOfThisProcess() {
  std::vector<pid_t> tids;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir))
      if (entry->d_name[0] != '.') tids.push_back(static_cast<pid_t>(std::atoi(entry->d_name)));
    ::closedir(dir);
  }
  if (tids.empty()) tids.push_back(static_cast<pid_t>(::syscall(SYS_gettid)));
  return tids;
}

// sched_setscheduler on a thread id sets that thread only (Linux).
int SetEach(int policy, int priority) {
  sched_param param{};
  param.sched_priority = priority;
  int refused = 0;
  for (pid_t tid : ThreadsOfThisProcess())
    if (::sched_setscheduler(tid, policy, &param) != 0 && errno != ESRCH) refused = errno;
  return refused;
}

}  // namespace

bool UseRoundRobin(std::string* why) {
  const int refused = SetEach(SCHED_RR, 1);
  if (refused == 0) return true;
  SetEach(SCHED_OTHER, 0);
  if (why) *why = std::string("sched_setscheduler(SCHED_RR): ") + std::strerror(refused);
  return false;
}

void UseDefaultScheduling() { SetEach(SCHED_OTHER, 0); }

}  // namespace pipetwin::exec
