// exec/cpu_policy.h: every thread of the process goes under SCHED_RR (the ones already running,
// as c10d Gloo's are by the time a worker switches) and back.
#include "exec/runtime/cpu_policy.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace pipetwin::exec {
namespace {

pid_t ThisThread() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

TEST(ExecCpuPolicy, RoundRobinCoversThreadsAlreadyRunningAndComesBack) {
  // A thread started before the switch, parked until the test is done with it.
  std::atomic<pid_t> other{0};
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    other = ThisThread();
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return done; });
  });
  while (other == 0) std::this_thread::yield();

  std::string why;
  const bool switched = UseRoundRobin(&why);
  if (!switched) {
    // Refused (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): nothing changed, and it says why.
    EXPECT_EQ(why.rfind("sched_setscheduler(SCHED_RR): ", 0), 0u) << why;
    EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
    EXPECT_EQ(::sched_getscheduler(other), SCHED_OTHER);
  } else {
    EXPECT_EQ(::sched_getscheduler(0), SCHED_RR);
    EXPECT_EQ(::sched_getscheduler(other), SCHED_RR);
    sched_param param{};
    ASSERT_EQ(::sched_getparam(other, &param), 0);
    EXPECT_EQ(param.sched_priority, 1);
    // A thread started afterwards inherits it.
    std::atomic<int> inherited{-1};
    std::thread([&] { inherited = ::sched_getscheduler(0); }).join();
    EXPECT_EQ(inherited, SCHED_RR);
  }
  UseDefaultScheduling();
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  EXPECT_EQ(::sched_getscheduler(other), SCHED_OTHER);
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  t.join();
  if (!switched) GTEST_SKIP() << "SCHED_RR refused here: " << why;
}

}  // namespace
}  // namespace pipetwin::exec
