#include "exec/runtime/cpu_policy.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

#include "partition/util/machine.h"

namespace pipetwin::exec {
namespace {

// sched_setscheduler on a thread id sets that thread only (Linux).
int SetEach(int policy, int priority) {
  sched_param param{};
  param.sched_priority = priority;
  int refused = 0;
  for (int tid : ThreadIdsOfThisProcess())
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
