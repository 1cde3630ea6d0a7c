// partition/util/machine.h: what a run launched here needs of this machine and when it is
// refused; the load of other processes and of the hypervisor, from /proc/stat, less the run's
// own CPU time; and the verdict `run` records and `compare` reads back.
#include "partition/util/machine.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "partition/report/compare.h"
#include "partition/util/host.h"

namespace pipetwin {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

MachineCapacity TwoCpus24GiB() {
  MachineCapacity m;
  m.cpus = 2;
  m.memory_bytes = 24 * kGiB;
  m.available_memory_bytes = 20 * kGiB;
  m.free_tasks = 10000;
  m.rr_timeslice_s = 0.1;
  return m;
}

TEST(Machine, ARunIsRefusedForTasksMemoryOrWorkersPerCpuNamingTheFigures) {
  const MachineCapacity here = TwoCpus24GiB();
  RunDemand small;
  small.processes = 4;
  small.process_bytes = 0.2 * kGiB;
  small.model_bytes = 1 * kGiB;
  EXPECT_EQ(WhyMachineCannotHold(small, here), "");

  // Memory: 1,008 processes of 0.2 GiB alone are 201.6 GiB.
  RunDemand gpt = small;
  gpt.processes = 1008;
  gpt.threads_per_process = 2;
  std::string why = WhyMachineCannotHold(gpt, here);
  EXPECT_NE(why.find("1008 worker processes need at least 202.6 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("more than this machine's 24.0 GiB"), std::string::npos) << why;
  RunDemand just_fits = small;
  just_fits.model_bytes = 24 * kGiB - 4 * just_fits.process_bytes;
  EXPECT_EQ(WhyMachineCannotHold(just_fits, here), "");
  just_fits.model_bytes += 1;
  EXPECT_NE(WhyMachineCannotHold(just_fits, here), "");

  // Tasks: 5,001 processes of 2 threads are more than 10,000.
  RunDemand many = small;
  many.process_bytes = many.model_bytes = 0;
  many.processes = 5001;
  why = WhyMachineCannotHold(many, here);
  EXPECT_NE(why.find("at least 10002 tasks"), std::string::npos) << why;
  MachineCapacity unknown_tasks = here;
  unknown_tasks.free_tasks = -1;  // unknown: not judged
  many.peer_timeout_s = 1e9;
  EXPECT_EQ(WhyMachineCannotHold(many, unknown_tasks), "");

  // Workers per CPU: 2 CPUs, 10 workers are 5 per CPU, a wait of 4 slices of 0.1 s.
  RunDemand crowded = small;
  crowded.processes = 10;
  crowded.peer_timeout_s = 0.39;
  why = WhyMachineCannotHold(crowded, here);
  EXPECT_NE(why.find("5 per CPU: one can wait 0.4 s"), std::string::npos) << why;
  EXPECT_NE(why.find("longer than the 0.4 s its peers wait"), std::string::npos) << why;
  crowded.peer_timeout_s = 0.41;
  EXPECT_EQ(WhyMachineCannotHold(crowded, here), "");
  crowded.processes = 11;  // ceil(11 / 2) = 6 per CPU: 0.5 s
  EXPECT_NE(WhyMachineCannotHold(crowded, here), "");
}

TEST(Machine, ThisMachinesCapacityIsReadFromTheKernel) {
  const MachineCapacity here = ThisMachineCapacity();
  EXPECT_EQ(here.cpus, static_cast<int>(AllowedCpus().size()));
  EXPECT_GT(here.memory_bytes, 0);
  EXPECT_LE(here.memory_bytes, PhysicalMemoryBytes());
  EXPECT_GT(here.available_memory_bytes, 0);
  EXPECT_LE(here.available_memory_bytes, here.memory_bytes);
  EXPECT_GT(here.rr_timeslice_s, 0);
  EXPECT_GT(ProcessPrivateBytes(), 0);
}

CpuTimes Times(std::vector<double> busy, std::vector<double> steal) {
  CpuTimes t;
  t.busy_s = std::move(busy);
  t.steal_s = std::move(steal);
  return t;
}

TEST(Machine, ForeignLoadIsTheBusyTimeOfTheRunsCpusLessItsOwn) {
  const CpuTimes from = Times({10, 20, 30}, {1, 1, 1});
  const CpuTimes to = Times({12, 21, 33}, {1.2, 1, 5});
  // CPUs 0 and 1 over 2 s: 3 s busy, 1 s of it the run's own, 0.2 s stolen, of 4 CPU-seconds.
  LoadShare s = ShareBetween(from, to, {0, 1}, 2, 1);
  EXPECT_DOUBLE_EQ(s.foreign, 0.5);
  EXPECT_DOUBLE_EQ(s.steal, 0.05);
  // CPU 2 is not the run's: its load does not count.
  s = ShareBetween(from, to, {0, 1}, 2, 3);
  EXPECT_DOUBLE_EQ(s.foreign, 0);  // more own time than busy (clock ticks): none foreign
  s = ShareBetween(from, to, {2}, 2, 0);
  EXPECT_DOUBLE_EQ(s.foreign, 1);
  EXPECT_DOUBLE_EQ(s.steal, 1);
  s = ShareBetween(from, to, {7}, 2, 0);  // a CPU /proc/stat does not list
  EXPECT_DOUBLE_EQ(s.foreign, 0);
}

// A child process that spins until killed.
pid_t Spinner() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    volatile unsigned long x = 0;
    for (;;) x = x + 1;
  }
  return pid;
}

// Two busy threads of this process on one CPU: each runs about half the time and waits, runnable,
// the other half, preempted by the kernel's time slices. What a worker on a core of its own
// loses to c10d Gloo's threads on that core is this account (details.overhead in a run's report).
TEST(Machine, ThreadAccountSeesTheOtherThreadsRunAndThisOnesWaitForTheCpu) {
  if (!ReadThreadAccount().available) GTEST_SKIP() << "no /proc/self/task/*/schedstat here";
  cpu_set_t allowed, one;
  ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
  CPU_ZERO(&one);
  CPU_SET(AllowedCpus().front(), &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);  // this thread only
  std::atomic<bool> stop{false}, pinned{false};
  std::thread other([&] {
    ::sched_setaffinity(0, sizeof one, &one);
    pinned = true;
    while (!stop) {
    }
  });
  while (!pinned) std::this_thread::yield();
  const ThreadAccount from = ReadThreadAccount();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300)) {
  }
  const ThreadAccount d = Since(ReadThreadAccount(), from);
  stop = true;
  other.join();
  ::sched_setaffinity(0, sizeof allowed, &allowed);
  ASSERT_TRUE(d.available);
  // About 150 ms each; a third of that is far from both 0 and the whole.
  EXPECT_GT(d.others_running_s, 0.05) << d.others_running_s;
  EXPECT_LT(d.others_running_s, 0.3);
  EXPECT_GT(d.waiting_s, 0.05) << d.waiting_s;
  EXPECT_LT(d.waiting_s, 0.3);
  EXPECT_GE(d.preempted, 1);
  // Nothing happened between two readings at once: no time goes backwards.
  const ThreadAccount now = ReadThreadAccount();
  const ThreadAccount none = Since(now, now);
  EXPECT_EQ(none.waiting_s, 0);
  EXPECT_EQ(none.others_running_s, 0);
}

TEST(Machine, AnotherProcessesLoadIsSeenAndThisProcesssOwnIsNot) {
  const std::vector<int> cpus = AllowedCpus();
  // This process's own spinning thread: /proc/stat's busy time holds it (the premise of
  // subtracting the run's CPU time), and ShareBetween takes it out.
  const CpuTimes from = ReadCpuTimes();
  const double own_from = ProcessCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400)) {
  }
  const CpuTimes to = ReadCpuTimes();
  const double own = ProcessCpuSeconds() - own_from;
  double busy = 0;
  for (int c : cpus) busy += to.busy_s[c] - from.busy_s[c];
  EXPECT_GT(own, 0.3);
  EXPECT_GE(busy, own - 0.03) << "busy " << busy << " s, own " << own << " s";  // 1-2 ticks
  // A spinning child is another process: it takes a CPU of the run's, at least most of one.
  const pid_t child = Spinner();
  ASSERT_GT(child, 0);
  const LoadShare loaded = SampleLoad(cpus, 0.5);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_GT(loaded.foreign, 0.8 / static_cast<double>(cpus.size())) << loaded.foreign;
  EXPECT_LE(loaded.foreign, 1);
}

TEST(Machine, ALoadOverFivePercentIsADisturbanceAndSurvivesTheReport) {
  MachineLoad load;
  load.cpus = 2;
  load.load_average_1m = 1.5;
  load.sampled_before = true;
  load.before = {0.04, 0.0};
  load.measured_during = true;
  load.during = {0.049, 0.01};
  EXPECT_FALSE(load.Disturbed());
  EXPECT_EQ(MachineLoad::FromJson(load.ToJson()).ToJson(), load.ToJson());
  load.during.foreign = 0.3;
  load.before.steal = 0.06;
  ASSERT_EQ(load.Warnings().size(), 2u);
  EXPECT_EQ(load.Warnings()[0],
            "the hypervisor took 6.0% of the 2 CPUs before the run (steal time): the "
            "measurement is disturbed");
  EXPECT_EQ(load.Warnings()[1],
            "the machine was loaded during the run: other processes used 30.0% of the 2 CPUs "
            "the run uses (load average 1.50): the measurement is disturbed");
  const MachineLoad back = MachineLoad::FromJson(load.ToJson());
  EXPECT_EQ(back.Warnings(), load.Warnings());
  EXPECT_TRUE(load.ToJson()["disturbed"].get<bool>());
  // Under torchrun there is no sample before the run: null, and nothing judged of it.
  MachineLoad torchrun;
  torchrun.cpus = 2;
  EXPECT_TRUE(torchrun.ToJson()["before"].is_null());
  EXPECT_FALSE(MachineLoad::FromJson(torchrun.ToJson()).sampled_before);
  // The launcher's hand-over to the workers.
  LoadShare share;
  ASSERT_TRUE(LoadShareFromText(LoadShareToText({0.25, 0.125}), &share));
  EXPECT_DOUBLE_EQ(share.foreign, 0.25);
  EXPECT_DOUBLE_EQ(share.steal, 0.125);
  EXPECT_FALSE(LoadShareFromText("", &share));
}

// The machine's speed (one core's GEMM rate) read before and after a measurement: more than 5%
// apart is a disturbance, which the report keeps; 0 is "not read" and judges nothing.
TEST(Machine, ASpeedThatMovedOverFivePercentIsADisturbanceAndSurvivesTheReport) {
  EXPECT_FALSE(SpeedChangeWarning(100, "before", 104.9, "after"));
  EXPECT_FALSE(SpeedChangeWarning(100, "before", 95.1, "after"));
  EXPECT_FALSE(SpeedChangeWarning(0, "before", 50, "after"));
  EXPECT_FALSE(SpeedChangeWarning(100, "before", 0, "after"));
  EXPECT_EQ(*SpeedChangeWarning(100, "before the run", 84, "after it"),
            "the machine computed 16.0% slower after it than before the run (one core's GEMM: "
            "84.0 against 100.0 GFLOP/s; other guests of a shared host, or the CPU's own clock, "
            "change it without any steal time)");
  EXPECT_NE(SpeedChangeWarning(80, "a", 90, "b")->find("12.5% faster b than a"),
            std::string::npos);

  MachineLoad load;
  load.cpus = 2;
  EXPECT_TRUE(load.ToJson()["one_core_gflops"].is_null());
  EXPECT_EQ(load.Gflops(), 0);
  load.gflops_before = 100;
  EXPECT_EQ(load.Gflops(), 100);  // one reading: itself, nothing judged
  EXPECT_FALSE(load.Disturbed());
  load.gflops_after = 97;
  EXPECT_DOUBLE_EQ(load.Gflops(), 98.5);
  EXPECT_FALSE(load.Disturbed());
  load.gflops_after = 90;
  ASSERT_EQ(load.Warnings().size(), 1u);
  EXPECT_EQ(load.Warnings()[0].rfind("the machine computed 10.0% slower after it than before the "
                                     "run", 0), 0u) << load.Warnings()[0];
  EXPECT_NE(load.Warnings()[0].find(": the measurement is disturbed"), std::string::npos);
  const MachineLoad back = MachineLoad::FromJson(load.ToJson());
  EXPECT_EQ(back.gflops_before, 100);
  EXPECT_EQ(back.gflops_after, 90);
  EXPECT_EQ(back.Warnings(), load.Warnings());
  EXPECT_TRUE(load.ToJson()["disturbed"].get<bool>());
}

Report MeasuredReport(const MachineLoad& load) {
  Report r;
  r.scenario = "s";
  r.schedule = "flush";
  r.pipeline_depth = 1;
  r.worker_count = 1;
  r.samples_per_iteration = 8;
  r.samples_per_s = 100;
  r.iteration_s = 0.08;
  r.details["machine_load"] = load.ToJson();
  return r;
}

TEST(Machine, CompareSaysTheMeasurementIsDisturbed) {
  MachineLoad quiet;
  quiet.cpus = 2;
  quiet.measured_during = true;
  MachineLoad busy = quiet;
  busy.during.foreign = 0.25;
  Report predicted = MeasuredReport(quiet);
  predicted.details = nlohmann::json::object();
  Comparison c = CompareReports(predicted, MeasuredReport(quiet));
  EXPECT_TRUE(c.disturbances.empty());
  EXPECT_FALSE(ComparisonToJson(c)["measurement_disturbed"].get<bool>());
  EXPECT_EQ(ComparisonToText(c).find("disturbed"), std::string::npos);
  c = CompareReports(predicted, MeasuredReport(busy));
  ASSERT_EQ(c.disturbances.size(), 1u);
  EXPECT_TRUE(ComparisonToJson(c)["measurement_disturbed"].get<bool>());
  EXPECT_EQ(ComparisonToJson(c)["disturbances"][0], c.disturbances[0]);
  EXPECT_NE(ComparisonToText(c).find("measurement disturbed: the machine was loaded during the "
                                     "run: other processes used 25.0%"),
            std::string::npos)
      << ComparisonToText(c);
}

// compare sets the machine's speed while the profile was taken against the run's: more than 5%
// apart, the prediction came from a machine that computed at another speed, and compare says so.
TEST(Machine, CompareSaysTheMachineChangedSpeedBetweenTheProfileAndTheRun) {
  MachineLoad load;
  load.cpus = 2;
  load.measured_during = true;
  load.gflops_before = 86;
  load.gflops_after = 90;
  Report predicted = MeasuredReport(MachineLoad{});
  predicted.details = nlohmann::json::object();
  Comparison c = CompareReports(predicted, MeasuredReport(load));
  EXPECT_EQ(c.machine_speed.run_gflops, 88);
  EXPECT_TRUE(c.disturbances.empty());
  Comparison close = c;
  AddProfileSpeed(close, 90);
  EXPECT_TRUE(close.disturbances.empty());
  EXPECT_NEAR(ComparisonToJson(close)["machine_speed"]["run_over_profile"].get<double>(), 88.0 / 90,
              1e-12);
  AddProfileSpeed(c, 100);
  ASSERT_EQ(c.disturbances.size(), 1u);
  EXPECT_EQ(c.disturbances[0].rfind("the machine computed 12.0% slower during the run than while "
                                    "the profile was taken (one core's GEMM: 88.0 against 100.0",
                                    0),
            0u) << c.disturbances[0];
  const nlohmann::json j = ComparisonToJson(c);
  EXPECT_TRUE(j["measurement_disturbed"].get<bool>());
  EXPECT_EQ(j["machine_speed"]["profile_gflops"], 100);
  EXPECT_EQ(j["machine_speed"]["run_gflops"], 88);
  EXPECT_NE(ComparisonToText(c).find("measurement disturbed: the machine computed 12.0% slower"),
            std::string::npos) << ComparisonToText(c);
  // Nothing read (a GPU, older files): null, nothing judged.
  Comparison unread = CompareReports(predicted, MeasuredReport(MachineLoad{}));
  AddProfileSpeed(unread, 0);
  EXPECT_TRUE(ComparisonToJson(unread)["machine_speed"].is_null());
  EXPECT_TRUE(unread.disturbances.empty());
}

}  // namespace
}  // namespace pipetwin
