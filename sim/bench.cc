// SimGrid alone, for `--bench`: the same platform and actor count as a simulation (its simulated
// replicas), each actor alternating an execution and a message to its neighbour, with none of
// pipetwin's bookkeeping.
// The ratio of the two rates is the simulator's overhead over bare SimGrid.
#include <algorithm>
#include <chrono>
#include <string>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <xbt/log.h>

#include "sim/commands.h"
#include "sim/child_process.h"
#include "sim/platform.h"
#include "sim/symmetry.h"

namespace pipetwin::sim {

namespace sg4 = simgrid::s4u;

namespace {

double RunBare(const SimulationSetup& setup, long long activities, int threads) {
  EngineArguments args("pipetwin-sim-bench");
  sg4::Engine engine(&args.argc, args.argv.data());
  xbt_log_control_set("root.thresh:critical");
  // SimGrid's parallel execution of the actors' code between simulation steps.
  if (threads > 1) sg4::Engine::set_config("contexts/nthreads:" + std::to_string(threads));
  ConfigureNetwork(setup.cluster);
  // The workers the simulation runs (sim/symmetry.h), on the platform it builds.
  const ReplicaReduction reduction = ReduceReplicas(setup);
  std::vector<int> devices;
  for (int w = 0; w < setup.schedule.WorkerCount(); ++w)
    if (reduction.Simulated(w)) devices.push_back(setup.worker_device[w]);
  const int workers = static_cast<int>(devices.size());
  ConfigureActorStacks(workers);
  const Platform platform =
      BuildPlatform(setup.cluster, false, *std::max_element(devices.begin(), devices.end()) + 1);
  activities = activities / reduction.replicas * reduction.simulated;
  // Each round is one execution and one message per actor.
  const long long rounds = std::max(1LL, activities / (2LL * workers));
  static char token = 0;
  for (int w = 0; w < workers; ++w) {
    sg4::Host* host = platform.hosts[devices[w]];
    sg4::Mailbox* out = sg4::Mailbox::by_name("bench" + std::to_string((w + 1) % workers));
    sg4::Mailbox* in = sg4::Mailbox::by_name("bench" + std::to_string(w));
    sg4::Actor::create("bench" + std::to_string(w), host, [=] {
      for (long long r = 0; r < rounds; ++r) {
        sg4::this_actor::execute(1e-3 * kHostSpeed);
        if (workers == 1) continue;
        sg4::CommPtr put = out->put_async(&token, 1000000);
        in->get<char>();
        put->wait();
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  engine.run();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long long done = rounds * workers * (workers == 1 ? 1 : 2);
  return wall > 0 ? done / wall : 0;
}

}  // namespace

double BareSimGridActivitiesPerSecond(const SimulationSetup& setup, long long activities,
                                      int threads) {
  return std::stod(
      RunInChild([&] { return std::to_string(RunBare(setup, activities, threads)); }));
}

}  // namespace pipetwin::sim
