// PLUMB_KILL_AT, PLUMB_STOP_AT, PLUMB_FAIL_AT: the test hooks that kill, stop or fail plumb at
// a named phase (see kill_point.h).
#include "plumb/core/kill_point.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace plumb {
namespace {

// One variable's request and how often its phase has been reached.
struct PhaseRequest {
  std::string phase;  // empty: no request
  long nth = 1;
  std::atomic<long> reached{0};

  explicit PhaseRequest(const char* variable) {
    const char* text = std::getenv(variable);
    if (text == nullptr) return;
    phase = text;
    if (const auto colon = phase.find(':'); colon != std::string::npos) {
      nth = std::strtol(phase.c_str() + colon + 1, nullptr, 10);
      phase.resize(colon);
    }
  }

  // True the n-th time the named phase is reached.
  bool due(const char* at) {
    if (phase.empty() || phase != at) return false;
    return ++reached == nth;
  }
};

}  // namespace

void kill_point(const char* phase) {
  static PhaseRequest kill("PLUMB_KILL_AT");
  static PhaseRequest stop("PLUMB_STOP_AT");
  if (kill.due(phase)) ::raise(SIGKILL);
  if (stop.due(phase)) ::raise(SIGSTOP);
}

bool failure_injected(const char* phase) {
  static PhaseRequest fail("PLUMB_FAIL_AT");
  return fail.due(phase);
}

}  // namespace plumb
