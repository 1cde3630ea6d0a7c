#include "exec/launch/process_env.h"

#include <cstdlib>
#include <string>

#include "partition/util/error.h"

namespace pipetwin::exec {

namespace {

std::optional<std::string> Get(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int Integer(const char* name, const std::string& text, int minimum) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < minimum)
    throw InputError(std::string("environment variable ") + name + ": expected an integer >= " +
                     std::to_string(minimum) + ", got \"" + text + "\"");
  return value;
}

// The first of `names` that is set, as an integer >= minimum.
std::optional<int> First(std::initializer_list<const char*> names, int minimum) {
  for (const char* n : names)
    if (auto v = Get(n)) return Integer(n, *v, minimum);
  return std::nullopt;
}

}  // namespace

std::optional<ProcessEnv> ProcessEnvFromEnvironment() {
  const auto rank = First({"RANK", "SLURM_PROCID"}, 0);
  const auto world = First({"WORLD_SIZE", "SLURM_NTASKS"}, 1);
  if (!rank && !world) return std::nullopt;
  if (!rank || !world)
    throw InputError("environment: RANK and WORLD_SIZE (or SLURM_PROCID and SLURM_NTASKS) must "
                     "be set together");
  ProcessEnv e;
  e.rank = *rank;
  e.world_size = *world;
  if (e.rank >= e.world_size)
    throw InputError("environment: RANK=" + std::to_string(e.rank) + " must be below WORLD_SIZE=" +
                     std::to_string(e.world_size));
  e.local_rank = First({"LOCAL_RANK", "SLURM_LOCALID"}, 0).value_or(e.rank);
  e.local_world_size =
      First({"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"}, 1).value_or(e.world_size);
  const auto addr = Get("MASTER_ADDR");
  const auto port = Get("MASTER_PORT");
  if (e.world_size > 1 && (!addr || !port))
    throw InputError("environment: MASTER_ADDR and MASTER_PORT must name the store (rank 0's "
                     "host and a free port) for a run of " + std::to_string(e.world_size) +
                     " processes");
  if (addr) e.master_addr = *addr;
  if (port) e.master_port = Integer("MASTER_PORT", *port, 1);
  if (e.master_port > 65535)
    throw InputError("environment variable MASTER_PORT: expected a port <= 65535, got " + *port);
  e.store_hosted_elsewhere = Get("PIPETWIN_STORE_HOSTED").value_or("0") == "1";
  return e;
}

}  // namespace pipetwin::exec
