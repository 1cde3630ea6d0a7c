// The SimGrid platform of a Cluster: one host per device, one star zone per unit of every level,
// and, when the devices are processes sharing CPU cores, one multi-core host per server on which
// they compute.
//
// Level 0 (a server) is a star zone whose hosts each reach the server's switch (NVSwitch, PCIe
// switch) over a private full-duplex link of the level's bandwidth; level l >= 1 is a star zone
// whose children (units of level l-1) reach its switch over one full-duplex uplink each (the
// server's NIC at level 1, a rack's uplink at level 2) of level l's bandwidth. Every link carries
// half its level's latency, so a message between two devices pays the latency of every level up
// to the one that joins them, and concurrent flows share every link they cross: a server's
// all-reduce and its pipeline traffic compete for its NIC. Star zones keep routing tables linear
// in the hosts (a full zone stores N x N routes).
//
//   simgrid::s4u::Engine engine(&argc, argv);
//   ConfigureNetwork(cluster);          // before the platform: model and its factors
//   Platform p = BuildPlatform(cluster);
//   p.hosts[5];                         // device 5
#pragma once

#include <string>
#include <vector>

#include <simgrid/s4u/Host.hpp>

#include "partition/model/cluster.h"

namespace pipetwin::sim {

// Host speed in flop/s. Operations are given in seconds; an execution of t seconds is
// t * kHostSpeed flops, so the device's speed lives in the costs, not in the platform.
constexpr double kHostSpeed = 1e9;

// cluster.network_model "datacenter" (and "contention_free", whose links BuildPlatform makes
// FATPIPE): ideal links. SimGrid's default LV08 model is calibrated for
// TCP (latency x 13.01, bandwidth x 0.97, 5% reverse cross-traffic, a 4 MiB window bound, RTT
// weighted sharing: Velho and Legrand, SIMUTools 2009); a 1 GB transfer at 25 GB/s takes 40 ms
// on an ideal link. So: CM02, latency and bandwidth factors 1, no cross-traffic, no window
// bound, no RTT weight. "tcp": SimGrid's LV08 defaults untouched.
// Must be called after the Engine is created and before BuildPlatform.
void ConfigureNetwork(const Cluster& cluster);

// SimGrid gives every actor a stack of its own (config contexts/stack-size, 8 MiB by default),
// mapped when the actor is created: 1,024 workers with their stream actors reserve 16 GiB of
// address space, past the `ulimit -v` clusters often set, although an actor of ours touches a
// few KiB of it (the whole suite passes with 16 KiB stacks). So the stacks are sized to the
// address space left: kPreferredStackKiB each when it allows (16 times the need seen), less down
// to kMinimumStackKiB, and a RunError naming the limit and how to raise it when even that does
// not fit. Stacks take at most half of what is left; the simulation's own records need the rest.
// Must be called after the Engine is created and before the first actor. Returns the KiB set.
// Under AddressSanitizer (scripts/sanitize.sh) actors run as threads (contexts/factory:thread):
// ASan cannot follow SimGrid's own stack switching, and warns on every switch; a thread's stack
// it knows. Its frames are larger, so the stacks get kSanitizerStackKiB.
// The arguments an Engine is created with: the context factory is chosen then, not later.
struct EngineArguments {
  explicit EngineArguments(const char* program);
  int argc = 0;
  std::vector<char*> argv;

 private:
  std::vector<std::string> words_;
};

constexpr long kPreferredStackKiB = 256;
constexpr long kMinimumStackKiB = 64;
constexpr long kSanitizerStackKiB = 2048;
long ConfigureActorStacks(long actors);

struct Platform {
  std::vector<simgrid::s4u::Host*> hosts;  // by device id
  // By device id: where its computations run. The device's own host, unless the cluster's
  // devices share CPU cores (cluster.shared_cores > 0): then one multi-core host per server,
  // which SimGrid's CPU model shares among the executions running on it (each gets at most one
  // core's speed; beyond one per core they divide the cores equally), as the OS scheduler
  // shares a machine's cores among worker processes.
  std::vector<simgrid::s4u::Host*> cpus;
  // By device id, with `with_switches`: a host standing for its server's switch (NVSwitch),
  // joined to the server's zone by a link that never limits (FATPIPE, no latency), so that a
  // flow from a device to it crosses the device's own server link upwards and a flow back
  // crosses it downwards: the tensor-parallel group's collectives (sim/actors.cc). Empty
  // otherwise; null for the device of an NVLink server of one device, whose link nothing else
  // crosses.
  std::vector<simgrid::s4u::Host*> switches;
};

// `devices` >= 0: only the units holding devices 0..devices-1 are built (a unit is built whole
// or not at all; the others' hosts stay null): nothing else is simulated on the rest.
// SimGrid checks each new host's and link's name against every zone, so building all of a
// large cluster costs the square of its size.
Platform BuildPlatform(const Cluster& cluster, bool with_switches = false, int devices = -1);

}  // namespace pipetwin::sim
