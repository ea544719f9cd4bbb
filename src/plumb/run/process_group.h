// Where a data-parallel worker's peers are and how it talks to them: the world (rank, size,
// the rendezvous address) read from the variables torchrun and Slurm set or that plumb's own
// launcher sets, and a c10d process group over it: Gloo for CPU tensors, NCCL for CUDA
// tensors (one GPU per worker), rendezvous through a TCPStore that rank 0 serves. Failures a
// user can act on (a port in use, a rendezvous that times out, a peer that disappears, a
// backend this build lacks) become UsageError / DistError with one clear line.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace plumb::run {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;  // workers of the world on this machine (1 when the launcher does not say)
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
// then a process group for tensors on `device`: Gloo for the CPU, NCCL for a GPU (this
// worker's; NCCL allows one worker per GPU). `timeout` bounds the rendezvous and every
// collective (a dead peer is reported after it). The Gloo transport binds to
// GLOO_SOCKET_IFNAME when set, to the loopback address when the master is local, else to the
// address of this host's name; NCCL picks its own transport (NCCL_SOCKET_IFNAME and the other
// NCCL_* variables apply). Throws UsageError when this plumb was built without the backend.
c10::intrusive_ptr<c10d::ProcessGroup> join_process_group(const WorldInfo& world,
                                                          std::chrono::milliseconds timeout,
                                                          c10::Device device = c10::kCPU);

// The collective library join_process_group uses for `device`: "gloo" or "nccl".
std::string backend_for(c10::Device device);

// Returns when every worker has called it (an all-reduce of one element on `device`, the
// group's; the host waits for it on a GPU too). Throws DistError when a peer is gone.
void synchronize_workers(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10::Device device);

// Shuts the group's communicators down where LibTorch can (NCCL on LibTorch 2.x, which warns at
// exit about a group never shut down, as Python's destroy_process_group would); a no-op for
// Gloo and on 1.13. A failure here is a warning on stderr: the worker's results are already in.
void leave_process_group(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10::Device device);

// A TCP port on 127.0.0.1 that was free a moment ago (the launcher's rendezvous port).
int free_loopback_port();

}  // namespace plumb::run
