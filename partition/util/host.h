// What this process learns of the machine it runs on, in one place: the CPUs it may use, its
// memory, its name, the programs beside it. Used by the front end (compare), the executor (its
// workers, the profiler, the calibration) and the simulator's --bench.
#pragma once

#include <string>
#include <vector>

namespace pipetwin {

// The CPUs this process may run on, ascending: its affinity mask as taskset, Slurm, cgroups or
// `ip netns exec` under taskset set it; {0} when it cannot be read.
std::vector<int> AllowedCpus();
// Restricts this process (its calling thread and the threads it starts later) to `cpus`.
void AllowCpus(const std::vector<int>& cpus);
// The path of the running executable (/proc/self/exe), "" when unknown.
std::string SelfExecutable();
// bin/NAME beside the running executable, or "" when it is not there (not built).
std::string SiblingProgram(const std::string& name);
// The machine's physical memory in bytes (MemTotal), 0 when unknown.
double PhysicalMemoryBytes();
// This process's peak resident set in bytes.
double PeakRssBytes();
// The host name.
std::string HostName();
// The machine's boot id (/proc/sys/kernel/random/boot_id), "" when unknown: processes that
// share it read one CLOCK_MONOTONIC.
std::string BootId();

}  // namespace pipetwin
