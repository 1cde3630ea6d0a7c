// How the worker processes of a server with more workers than cores share those cores.
//
// Left to Linux's default policy (SCHED_OTHER), a core can stand idle for milliseconds while a
// runnable worker waits in the other core's queue (scripts/sched-idle.sh measures that idle time
// from a perf trace; docs/executor.md). Under SCHED_RR the kernel pushes a
// woken or preempted real-time thread to any core running none at once, so the cores serve the
// workers' threads as one pool, first come first served, as the simulator's shared host does.
//
//   if (!UseRoundRobin()) ... // not permitted (needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 1)
#pragma once

#include <string>

namespace pipetwin::exec {

// Puts every thread of this process (those running now) under SCHED_RR at priority 1, the
// lowest. Threads started later inherit it. Returns false, changing nothing, where the kernel
// refuses; `why` then says why.
bool UseRoundRobin(std::string* why = nullptr);

// Back to SCHED_OTHER for every thread of this process.
void UseDefaultScheduling();

}  // namespace pipetwin::exec
