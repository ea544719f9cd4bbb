// PLUMB_KILL_AT: the test hook that kills plumb at a named phase (see kill_point.h).
#include "plumb/core/kill_point.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace plumb {
namespace {

struct KillRequest {
  std::string phase;  // empty: no request
  long nth = 1;
};

const KillRequest& request() {
  static const KillRequest r = [] {
    KillRequest k;
    const char* text = std::getenv("PLUMB_KILL_AT");
    if (text == nullptr) return k;
    k.phase = text;
    if (const auto colon = k.phase.find(':'); colon != std::string::npos) {
      k.nth = std::strtol(k.phase.c_str() + colon + 1, nullptr, 10);
      k.phase.resize(colon);
    }
    return k;
  }();
  return r;
}

}  // namespace

void kill_point(const char* phase) {
  const KillRequest& r = request();
  if (r.phase.empty() || r.phase != phase) return;
  static std::atomic<long> reached{0};
  if (++reached == r.nth) ::raise(SIGKILL);
}

}  // namespace plumb
