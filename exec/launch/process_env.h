// Who this process is in a run, from the environment, by the torchrun convention (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or Slurm's (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE; MASTER_ADDR and MASTER_PORT still needed).
//
//   std::optional<ProcessEnv> env = ProcessEnvFromEnvironment();   // nullopt: launch locally
//
// Free of LibTorch.
#pragma once

#include <optional>
#include <string>

namespace pipetwin::exec {

struct ProcessEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;   // workers on this machine (threads are shared among them)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Rank 0 hosts the TCPStore unless the local launcher does (PIPETWIN_STORE_HOSTED=1).
  bool store_hosted_elsewhere = false;
};

// nullopt when neither RANK/WORLD_SIZE nor SLURM_PROCID/SLURM_NTASKS is set. Throws InputError
// naming the variable when one is malformed or out of range (RANK >= WORLD_SIZE, no
// MASTER_ADDR/MASTER_PORT for a multi-process run).
std::optional<ProcessEnv> ProcessEnvFromEnvironment();

}  // namespace pipetwin::exec
