// A shaped loopback in a network namespace of plumb's own (see shaped_link.h).
#include "plumb/run/shaped_link.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/process_group.h"

namespace plumb::run {
namespace {

// Runs an iproute2 command quietly; its exit status.
int ip_command(const std::string& args) {
  return std::system((args + " >/dev/null 2>&1").c_str());
}

}  // namespace

double parse_link_rate(const std::string& text) {
  static const std::regex form("([0-9]+(\\.[0-9]+)?)(kbit|mbit|gbit)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw UsageError(fmt::format(
        "--link '{}' is not a rate: use tc's units, e.g. 1gbit, 10gbit, 100mbit (or none)", text));
  const double value = std::stod(m[1]);
  const double unit = m[3] == "kbit" ? 1e3 : m[3] == "mbit" ? 1e6 : 1e9;
  if (value <= 0) throw UsageError("--link rate must be positive");
  return value * unit;
}

ShapedLink::ShapedLink(const std::string& rate) {
  const double bits_per_s = parse_link_rate(rate);
  if (geteuid() != 0)
    throw UsageError(
        "--link shapes a loopback inside a network namespace of plumb's own, which needs root "
        "(CAP_NET_ADMIN); run as root or leave --link out");
  if (ip_command("ip -V") != 0 || ip_command("tc -V") != 0)
    throw UsageError("--link needs iproute2's ip and tc (apt-get install iproute2)");
  name_ = fmt::format("plumb-{}-{}", getpid(), static_cast<long>(bits_per_s / 1e3));
  ip_command("ip netns delete " + name_);  // a leftover of a killed run with the same pid
  if (ip_command("ip netns add " + name_) != 0)
    throw DistError("could not create network namespace " + name_ + " (ip netns add)");
  // Burst: 1 ms at the rate, and at least a few full Ethernet frames.
  const long burst = std::max(15000L, std::lround(bits_per_s / 8 / 1000));
  const std::string in = "ip netns exec " + name_ + " ";
  if (ip_command(in + "ip link set lo mtu 1500") != 0 ||
      ip_command(in + "ip link set lo up") != 0 ||
      ip_command(in + fmt::format("tc qdisc add dev lo root tbf rate {} burst {} latency 100ms",
                                  rate, burst)) != 0) {
    ip_command("ip netns delete " + name_);
    throw DistError("could not shape the loopback of namespace " + name_ + " with tc tbf");
  }
}

ShapedLink::~ShapedLink() {
  ip_command("ip netns delete " + name_);
}

bool ShapedLink::enter() const {
  const int fd = open(("/var/run/netns/" + name_).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace plumb::run
