// Where a data-parallel worker's peers are and how it talks to them: the world (rank, size,
// the rendezvous address) read from the variables torchrun and Slurm set or that plumb's own
// launcher sets, and a c10d process group over it (Gloo on CPU tensors, rendezvous through a
// TCPStore that rank 0 serves). Failures a user can act on (a port in use, a rendezvous that
// times out, a peer that disappears) become UsageError / DistError with one clear line.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace plumb::run {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string source;  // "plumb", "torchrun" or "slurm": who set the variables
};

// The world from the environment: RANK, WORLD_SIZE, LOCAL_RANK (torchrun, plumb's launcher),
// else SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; MASTER_ADDR and MASTER_PORT in both cases.
// nullopt when none of them is set (a single process, or the launcher itself). Throws
// UsageError when they are set but incomplete or not numbers.
std::optional<WorldInfo> world_from_environment();

// A worker lost its peers or the collective failed (exit status 1, not a usage error).
struct DistError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Joins the world: rank 0 serves the store on master_addr:master_port, the others connect;
// then a Gloo process group. `timeout` bounds the rendezvous and every collective (a dead peer
// is reported after it). The Gloo transport binds to GLOO_SOCKET_IFNAME when set, to the
// loopback address when the master is local, else to the address of this host's name.
c10::intrusive_ptr<c10d::ProcessGroup> join_process_group(const WorldInfo& world,
                                                          std::chrono::milliseconds timeout);

// A TCP port on 127.0.0.1 that was free a moment ago (the launcher's rendezvous port).
int free_loopback_port();

}  // namespace plumb::run
