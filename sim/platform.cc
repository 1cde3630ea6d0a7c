#include "sim/platform.h"

#include <cstdio>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include "partition/util/error.h"

namespace pipetwin::sim {

namespace sg4 = simgrid::s4u;

void ConfigureNetwork(const Cluster& cluster) {
  if (cluster.network_model == "tcp") return;
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/latency-factor:1");
  sg4::Engine::set_config("network/bandwidth-factor:1");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/weight-S:0");
  sg4::Engine::set_config("network/TCP-gamma:1e300");
}

namespace {

// Bytes of address space this process maps now (/proc/self/statm's first field, in pages).
long long MappedBytes() {
  long long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * sysconf(_SC_PAGESIZE);
}

std::string Megabytes(long long bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// The mappings a process may have (/proc/sys/vm/max_map_count), 0 when unknown, and a margin
// for those that are not actors' stacks (libraries, heap arenas).
long long MaxMapCount() {
  long long n = 0;
  if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%lld", &n) != 1) n = 0;
    std::fclose(f);
  }
  return n;
}
constexpr long long kOtherMappings = 4096;

}  // namespace

EngineArguments::EngineArguments(const char* program) : words_{program} {
#if defined(__SANITIZE_ADDRESS__) || defined(PIPETWIN_ASAN)
  words_.push_back("--log=xbt_cfg.thresh:critical");  // no "Configuration change" line
  words_.push_back("--cfg=contexts/factory:thread");
#endif
  for (std::string& w : words_) argv.push_back(w.data());
  argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
}

long ConfigureActorStacks(long actors) {
#if defined(__SANITIZE_ADDRESS__) || defined(PIPETWIN_ASAN)
  (void)actors;  // no address-space limit under ASan
  sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kSanitizerStackKiB));
  return kSanitizerStackKiB;
#else
  long kib = kPreferredStackKiB;
  rlimit limit{};
  if (actors > 0 && getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const long long left = static_cast<long long>(limit.rlim_cur) - MappedBytes();
    const long long fit = left > 0 ? left / 2 / actors / 1024 : 0;
    const long page_kib = sysconf(_SC_PAGESIZE) / 1024;
    kib = static_cast<long>(std::min<long long>(kib, fit / page_kib * page_kib));
    if (kib < kMinimumStackKiB)
      throw RunError("the simulation's " + std::to_string(actors) + " actors need " +
                     std::to_string(kMinimumStackKiB) + " KiB of stack each (" +
                     Megabytes(2LL * actors * kMinimumStackKiB * 1024) +
                     " of address space with the records), but the address-space limit of " +
                     Megabytes(static_cast<long long>(limit.rlim_cur)) + " (ulimit -v) leaves " +
                     Megabytes(std::max(left, 0LL)) +
                     ": raise it (ulimit -v unlimited) or simulate fewer workers");
  }
  sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kib));
  // Each stack is a mapping, and its guard page (contexts/guard-size) splits it in two: past
  // vm.max_map_count mappings the next actor cannot be created. Without guards there is one
  // per actor.
  const long long maps = MaxMapCount();
  if (maps > 0 && 2 * actors + kOtherMappings > maps) {
    if (actors + kOtherMappings > maps)
      throw RunError("the simulation's " + std::to_string(actors) + " actors need a memory "
                     "mapping each, past the " + std::to_string(maps) +
                     " a process may have (vm.max_map_count): raise it (sysctl -w "
                     "vm.max_map_count=" + std::to_string(2 * (actors + kOtherMappings)) +
                     ") or simulate fewer workers");
    sg4::Engine::set_config("contexts/guard-size:0");
  }
  return kib;
#endif
}

namespace {

// A unit of some level: its zone and the router through which it reaches its parent.
struct Unit {
  sg4::NetZone* zone = nullptr;
  simgrid::kernel::routing::NetPoint* gateway = nullptr;
};

bool ContentionFree(const Cluster& cluster) { return cluster.network_model == "contention_free"; }

// A full-duplex link; "contention_free": one FATPIPE link (every flow gets the whole bandwidth,
// so the two directions cannot interfere either).
sg4::Link* Link(const Cluster& cluster, sg4::NetZone* zone, const std::string& name,
                const ClusterLevel& level) {
  sg4::Link* link =
      ContentionFree(cluster)
          ? zone->create_link(name, level.bandwidth_bytes_per_s())
                ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
          : zone->create_split_duplex_link(name, level.bandwidth_bytes_per_s());
  link->set_latency(level.latency_us * 1e-6 / 2);
  return link->seal();
}

sg4::LinkInRoute InRoute(const Cluster& cluster, sg4::Link* link,
                         sg4::LinkInRoute::Direction direction) {
  return ContentionFree(cluster) ? sg4::LinkInRoute(link) : sg4::LinkInRoute(link, direction);
}

// Servers whose devices are joined by NVLink reach their NICs over PCIe, not over NVLink (a DGX's
// GPUDirect RDMA path): what leaves the server must not share a device's NVLink link with the
// traffic inside it. Such a server is a full zone: device to device over both devices' NVLink
// links, device to the server's gateway over a link of its own that the NIC's level limits
// (its latency is the NVLink link's, its bandwidth unbounded), device to the switch host over
// its NVLink link. Full zones store a route per pair, so only servers of at most this many
// devices get one; larger ones stay star zones.
constexpr int kMaxFullServer = 64;

bool NvlinkServer(const ClusterLevel& level) {
  return level.link == "nvlink" && level.count <= kMaxFullServer;
}

void Attach(const Cluster& cluster, sg4::NetZone* zone,
            simgrid::kernel::routing::NetPoint* member,
            simgrid::kernel::routing::NetPoint* gateway, sg4::Link* link) {
  zone->add_route(member, nullptr, gateway, nullptr,
                  {ContentionFree(cluster)
                       ? sg4::LinkInRoute(link)
                       : sg4::LinkInRoute(link, sg4::LinkInRoute::Direction::UP)},
                  true);
}

// The hosts of a server (a level-0 unit) in `zone`, with its switch host when asked, and their
// routes: a star zone's (every route over the device's own link) or an NVLink server's.
void BuildServer(const Cluster& cluster, int first_device, const std::string& name,
                 sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* gateway, bool nvlink,
                 bool with_switches, Platform& platform) {
  const ClusterLevel& spec = cluster.levels[0];
  sg4::Host* shared_cpu = nullptr;
  if (cluster.shared_cores > 0)
    shared_cpu =
        zone->create_host(name + "-cpu", kHostSpeed)->set_core_count(cluster.shared_cores)->seal();
  sg4::Host* nvswitch = nullptr;
  sg4::Link* switch_link = nullptr;
  // A device alone on an NVLink server shares its NVLink link with nothing (what leaves the
  // server takes PCIe): its collectives' flows would take exactly their time, so none is made.
  if (with_switches && !(nvlink && spec.count == 1)) {
    nvswitch = zone->create_host(name + "-switch", kHostSpeed);
    switch_link = zone->create_link(name + "-switch", 1e15)
                      ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                      ->seal();
    if (!nvlink)
      zone->add_route(nvswitch->get_netpoint(), nullptr, nullptr, nullptr,
                      {sg4::LinkInRoute(switch_link)}, true);
  }
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Link*> links;
  for (int c = 0; c < spec.count; ++c) {
    const int d = first_device + c;
    const std::string host_name = "gpu" + std::to_string(d);
    sg4::Host* host = zone->create_host(host_name, kHostSpeed);
    sg4::Link* link = Link(cluster, zone, host_name, spec);
    if (!nvlink) Attach(cluster, zone, host->get_netpoint(), nullptr, link);
    hosts.push_back(host);
    links.push_back(link);
    platform.hosts[d] = host;
    platform.cpus[d] = shared_cpu ? shared_cpu : host;
    if (nvswitch) platform.switches[d] = nvswitch;
  }
  if (!nvlink) return;
  using Direction = sg4::LinkInRoute::Direction;
  for (size_t i = 0; i < hosts.size(); ++i) {
    for (size_t j = i + 1; j < hosts.size(); ++j)
      zone->add_route(hosts[i]->get_netpoint(), hosts[j]->get_netpoint(), nullptr, nullptr,
                      {InRoute(cluster, links[i], Direction::UP),
                       InRoute(cluster, links[j], Direction::DOWN)},
                      true);
    if (nvswitch)
      zone->add_route(hosts[i]->get_netpoint(), nvswitch->get_netpoint(), nullptr, nullptr,
                      {InRoute(cluster, links[i], Direction::UP), sg4::LinkInRoute(switch_link)},
                      true);
    if (gateway) {
      sg4::Link* pcie = zone->create_link(hosts[i]->get_name() + "-pcie", 1e15)
                            ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                            ->set_latency(spec.latency_us * 1e-6 / 2)
                            ->seal();
      zone->add_route(hosts[i]->get_netpoint(), gateway, nullptr, nullptr,
                      {sg4::LinkInRoute(pcie)}, true);
    }
  }
}

// A unit of level `level` holding devices first_device.. (level 0: a server of hosts), built top
// down: a zone must have its parent before it gets hosts or children.
Unit BuildUnit(const Cluster& cluster, int level, int index, int first_device,
               sg4::NetZone* parent, bool with_switches, int devices, Platform& platform) {
  Unit unit;
  const std::string name = "L" + std::to_string(level) + "-" + std::to_string(index);
  const ClusterLevel& spec = cluster.levels[level];
  const bool nvlink = level == 0 && NvlinkServer(spec);
  unit.zone = nvlink ? sg4::create_full_zone(name) : sg4::create_star_zone(name);
  if (parent) unit.zone->set_parent(parent);
  if (level == 0) {
    if (parent) unit.gateway = unit.zone->create_router(name + "-gw");
    BuildServer(cluster, first_device, name, unit.zone, unit.gateway, nvlink, with_switches,
                platform);
    unit.zone->seal();
    return unit;
  }
  const int below = cluster.DevicesPerUnit(level - 1);
  for (int c = 0; c < spec.count && first_device + c * below < devices; ++c) {
    const Unit child = BuildUnit(cluster, level - 1, index * spec.count + c,
                                 first_device + c * below, unit.zone, with_switches, devices,
                                 platform);
    Attach(cluster, unit.zone, child.zone->get_netpoint(), child.gateway,
           Link(cluster, unit.zone, child.zone->get_name() + "-uplink", spec));
  }
  if (parent) unit.gateway = unit.zone->create_router(name + "-gw");
  unit.zone->seal();
  return unit;
}

}  // namespace

Platform BuildPlatform(const Cluster& cluster, bool with_switches, int devices) {
  if (devices < 0) devices = cluster.DeviceCount();
  Platform platform;
  platform.hosts.resize(cluster.DeviceCount());
  platform.cpus.resize(cluster.DeviceCount());
  if (with_switches) platform.switches.resize(cluster.DeviceCount());
  BuildUnit(cluster, static_cast<int>(cluster.levels.size()) - 1, 0, 0, nullptr, with_switches,
            devices, platform);
  return platform;
}

}  // namespace pipetwin::sim
