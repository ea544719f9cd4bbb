// A test hook for what a kill leaves behind: PLUMB_KILL_AT=<phase>[:<n>] makes the process kill
// itself with SIGKILL the n-th time (default: the first) it reaches the named phase, so a test
// can stop plumb at an exact moment instead of hoping a timer lands there. Unset (always, in
// normal use) it costs one cached comparison. The phases, where they are marked:
//   warmup         after a warm-up step              (run/step_loop.cpp)
//   sampling       after a measured step             (run/runner.cpp)
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

void kill_point(const char* phase);

}  // namespace plumb
