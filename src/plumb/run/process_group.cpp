// The world of a data-parallel job and its c10d Gloo process group (see process_group.h).
#include "plumb/run/process_group.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "plumb/core/errors.h"

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
  } else if (slurm_rank && slurm_size) {
    w.rank = env_int("SLURM_PROCID", *slurm_rank);
    w.size = env_int("SLURM_NTASKS", *slurm_size);
    const auto local = env("SLURM_LOCALID");
    w.local_rank = local ? env_int("SLURM_LOCALID", *local) : 0;
    w.source = "slurm";
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

c10::intrusive_ptr<c10d::ProcessGroup> join_process_group(const WorldInfo& world,
                                                          std::chrono::milliseconds timeout) {
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
        what.substr(0, what.find('\n'))));
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const auto ifname = env("GLOO_SOCKET_IFNAME"))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*ifname));
  else if (is_loopback(world.master_addr))
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  try {
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, world.rank, world.size, options);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw DistError(fmt::format("rank {}: connecting to the other {} worker(s) failed: {}",
                                world.rank, world.size - 1, what.substr(0, what.find('\n'))));
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
