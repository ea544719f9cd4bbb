// Test hooks for what a kill or a failure at an exact moment leaves behind, so a test can stop
// plumb there instead of hoping a timer lands there. Unset (always, in normal use) each costs
// one cached comparison. Each variable takes <phase>[:<n>]: the n-th time (default: the first)
// the process reaches the named phase,
//   PLUMB_KILL_AT  kills it with SIGKILL;
//   PLUMB_STOP_AT  stops it with SIGSTOP, so that a test can run another process at that moment
//                  and then let this one go on (SIGCONT);
//   PLUMB_FAIL_AT  makes failure_injected() true there, and the code at the phase fails as if
//                  what it was doing had failed (a full disk, a lock that timed out).
// The phases, where they are marked:
//   warmup         after a warm-up step              (run/step_loop.cpp)
//   sampling       after a measured step             (run/runner.cpp)
//   create-db      a new results database made whole under its temporary name, before it is
//                  published under its own (store/results_store.cpp; kill, stop and fail)
//   storing        inside a run's write, before it commits   (store/results_store.cpp)
//   profile        after an observed profiling step  (profile/profiler.cpp)
//   memory-search  before each memory pass plumb memory measures  (cli/cmd_memory.cpp)
//   sweep-point    before each sweep point is measured  (cli/cmd_sweep.cpp)
//   characterize-item  before each item of plumb characterize is measured
//                  (cli/cmd_characterize.cpp)
//   file-write     a file such as the report written, before it replaces the old one
//                  (core/atomic_file.cpp)
#pragma once

namespace plumb {

// Kills or stops the process here when PLUMB_KILL_AT or PLUMB_STOP_AT names this phase.
void kill_point(const char* phase);

// True when PLUMB_FAIL_AT names this phase (and this is its n-th time here).
bool failure_injected(const char* phase);

}  // namespace plumb
