// The world of a data-parallel job and its c10d process group (see process_group.h).
#include "plumb/run/process_group.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef PLUMB_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef PLUMB_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/core/torch_compat.h"

namespace plumb::run {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

int env_int(const char* name, const std::string& value) {
  try {
    size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{}='{}' is not a non-negative whole number", name, value));
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// LibTorch 2 splits a process group into a front that dispatches by the tensors' device and
// the backends behind it; 1.13's backends are process groups themselves.
#if PLUMB_TORCH_2
template <typename BackendT>
c10::intrusive_ptr<c10d::ProcessGroup> as_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, const WorldInfo& world,
    c10d::ProcessGroup::BackendType type, c10::Device device,
    c10::intrusive_ptr<BackendT> backend) {
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, world.rank, world.size);
  if (device.is_cuda()) group->setBoundDeviceId(device);  // the communicator's GPU
  group->setDefaultBackend(type);
  group->setBackend(device.type(), type, backend);
  return group;
}
#endif

#ifdef PLUMB_WITH_GLOO
c10::intrusive_ptr<c10d::ProcessGroup> gloo_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const WorldInfo& world,
                                                  std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const auto ifname = env("GLOO_SOCKET_IFNAME"))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
  else if (is_loopback(world.master_addr))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, world.rank, world.size, options);
#if PLUMB_TORCH_2
  return as_process_group(store, world, c10d::ProcessGroup::BackendType::GLOO, c10::kCPU, gloo);
#else
  return gloo;
#endif
}
#endif

#ifdef PLUMB_WITH_NCCL
c10::intrusive_ptr<c10d::ProcessGroup> nccl_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const WorldInfo& world,
                                                  std::chrono::milliseconds timeout,
                                                  c10::Device device) {
  c10::cuda::set_device(device.index());  // NCCL's own buffers go to this worker's GPU
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, world.rank, world.size, options);
#if PLUMB_TORCH_2
  return as_process_group(store, world, c10d::ProcessGroup::BackendType::NCCL, device, nccl);
#else
  return nccl;
#endif
}
#endif

}  // namespace

std::optional<WorldInfo> world_from_environment() {
  WorldInfo w;
  const auto rank = env("RANK"), size = env("WORLD_SIZE");
  const auto slurm_rank = env("SLURM_PROCID"), slurm_size = env("SLURM_NTASKS");
  if (rank || size) {
    if (!rank || !size)
      throw UsageError("RANK and WORLD_SIZE go together: set both (torchrun sets them)");
    w.rank = env_int("RANK", *rank);
    w.size = env_int("WORLD_SIZE", *size);
    const auto local = env("LOCAL_RANK");
    w.local_rank = local ? env_int("LOCAL_RANK", *local) : 0;
    w.source = env("PLUMB_DIST_LAUNCHER") ? "plumb" : "torchrun";
    const auto local_size = env("LOCAL_WORLD_SIZE");  // torchrun's
    if (w.source == "plumb")
      w.local_size = w.size;  // plumb's launcher starts every worker on this machine
    else if (local_size)
      w.local_size = env_int("LOCAL_WORLD_SIZE", *local_size);
  } else if (slurm_rank && slurm_size) {
    w.rank = env_int("SLURM_PROCID", *slurm_rank);
    w.size = env_int("SLURM_NTASKS", *slurm_size);
    const auto local = env("SLURM_LOCALID");
    w.local_rank = local ? env_int("SLURM_LOCALID", *local) : 0;
    w.source = "slurm";
    // "2", or "2(x3)" when every node runs 2: a plain count only, else this node is not known.
    const auto per_node = env("SLURM_NTASKS_PER_NODE");
    if (per_node && per_node->find_first_not_of("0123456789") == std::string::npos)
      w.local_size = env_int("SLURM_NTASKS_PER_NODE", *per_node);
  } else {
    return std::nullopt;
  }
  if (w.size < 1 || w.rank >= w.size)
    throw UsageError(fmt::format("rank {} is outside a world of {} worker(s)", w.rank, w.size));
  const auto addr = env("MASTER_ADDR"), port = env("MASTER_PORT");
  if (!addr || !port)
    throw UsageError(
        "MASTER_ADDR and MASTER_PORT must name rank 0's host and a free port (torchrun sets "
        "them; under Slurm, export them in the job script: docs/dist.md)");
  w.master_addr = *addr;
  w.master_port = env_int("MASTER_PORT", *port);
  if (w.master_port < 1 || w.master_port > 65535)
    throw UsageError(fmt::format("MASTER_PORT={} is not a TCP port (1-65535)", w.master_port));
  return w;
}

std::string backend_for(c10::Device device) {
  return device.is_cuda() ? "nccl" : "gloo";
}

c10::intrusive_ptr<c10d::ProcessGroup> join_process_group(const WorldInfo& world,
                                                          std::chrono::milliseconds timeout,
                                                          c10::Device device) {
  // A missing backend is known before anyone waits for a rendezvous.
#ifndef PLUMB_WITH_GLOO
  if (!device.is_cuda())
    throw UsageError(
        "this plumb was built without Gloo, which data-parallel training on the CPU needs "
        "(Debian: apt-get install libgloo-dev, then rebuild); on GPUs use --device cuda");
#endif
#ifndef PLUMB_WITH_NCCL
  if (device.is_cuda())
    throw UsageError(
        "this plumb was built without NCCL, which data-parallel training on GPUs needs: build "
        "it against a CUDA LibTorch with NCCL (docs/dist.md)");
#endif
  if (device.is_cuda() && !device.has_index())
    device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(world.local_rank));
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(world.master_port);
  store_options.isServer = world.rank == 0;
  store_options.numWorkers = static_cast<size_t>(world.size);
  store_options.waitWorkers = false;
  store_options.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, store_options);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (world.rank == 0 && what.find("in use") != std::string::npos)
      throw UsageError(fmt::format(
          "cannot serve the rendezvous on {}:{}: the port is in use; set MASTER_PORT to a free "
          "port",
          world.master_addr, world.master_port));
    throw DistError(fmt::format(
        "rank {}: rendezvous with {}:{} failed within {} s (is rank 0 running there, and the "
        "port reachable?): {}",
        world.rank, world.master_addr, world.master_port, timeout.count() / 1000,
        first_line(e.what())));
  }
  try {
#ifdef PLUMB_WITH_NCCL
    if (device.is_cuda()) return nccl_group(store, world, timeout, device);
#endif
#ifdef PLUMB_WITH_GLOO
    if (!device.is_cuda()) return gloo_group(store, world, timeout);
#endif
  } catch (const std::exception& e) {
    throw DistError(fmt::format("rank {}: connecting to the other {} worker(s) over {} failed: {}",
                                world.rank, world.size - 1, backend_for(device),
                                first_line(e.what())));
  }
  throw UsageError("no process group backend for " + device.str());  // refused above already
}

void synchronize_workers(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10::Device device) {
  std::vector<at::Tensor> one{torch::zeros({1}, torch::TensorOptions().device(device))};
  try {
    group->allreduce(one)->wait();
    one.front().item<float>();  // on a GPU, wait() holds the stream; this holds the host
  } catch (const std::exception& e) {
    throw DistError(fmt::format("rank {}: waiting for the other workers failed (one stopped?): {}",
                                group->getRank(), first_line(e.what())));
  }
}

namespace {
// Whether this LibTorch's ProcessGroup has shutdown() (2.x's front over its backends).
template <typename Group, typename = void>
struct HasShutdown : std::false_type {};
template <typename Group>
struct HasShutdown<Group, std::void_t<decltype(std::declval<Group&>().shutdown())>>
    : std::true_type {};

template <typename Group>
void shut_down(Group& group) {
  if constexpr (HasShutdown<Group>::value) group.shutdown();
}
}  // namespace

void leave_process_group(const c10::intrusive_ptr<c10d::ProcessGroup>& group, c10::Device device) {
  if (!device.is_cuda()) return;  // only NCCL warns at exit; Gloo is left as on 1.13
  try {
    shut_down(*group);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("plumb dist: rank {}: shutting NCCL down failed: {}\n",
                             group->getRank(), first_line(e.what()));
  }
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw DistError(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw DistError("cannot find a free port on 127.0.0.1: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace plumb::run
