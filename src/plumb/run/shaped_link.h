// A link of a given speed on one machine, for data-parallel workers (TBD's 1 Gbps Ethernet vs
// a fast network): a network namespace of plumb's own whose loopback is shaped with tc's token
// bucket filter (tbf) to the rate, with an Ethernet MTU (1500). Workers started inside it talk
// over 127.0.0.1 of that namespace only. It needs root (CAP_NET_ADMIN) and iproute2; it is
// removed when the object goes, also when a worker failed. The loopback has one egress queue,
// so the rate caps both directions together: two workers exchanging gradients share it, as on
// a half-duplex segment.
#pragma once

#include <string>

namespace plumb::run {

// "1gbit", "100mbit", "2.5gbit", "500kbit" (tc's units, bits per second); throws UsageError
// otherwise. Returns the rate in bits per second.
double parse_link_rate(const std::string& text);

class ShapedLink {
 public:
  // Creates the namespace and shapes its loopback; throws UsageError without root or iproute2
  // (saying so), DistError when a step fails (the namespace is removed again).
  explicit ShapedLink(const std::string& rate);
  ~ShapedLink();
  ShapedLink(const ShapedLink&) = delete;
  ShapedLink& operator=(const ShapedLink&) = delete;

  const std::string& name() const { return name_; }
  // Moves the calling process into the namespace (a launched worker, after fork).
  // Returns false when it could not.
  bool enter() const;

 private:
  std::string name_;
};

}  // namespace plumb::run
