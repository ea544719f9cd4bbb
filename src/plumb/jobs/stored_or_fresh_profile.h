// A setting's operator profile for the commands that read one (profile, roofline, gemm, analyze
// fusion, characterize): the newest stored profile of the same setting where the caller allows
// reuse, else a pass measured now and stored under the caller's group. One place decides what
// "the same setting" is and how a fresh pass is announced, measured and stored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/profile/profiler.h"
#include "plumb/run/runner.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

struct ProfileSourcing {
  // Take the newest stored profile with status ok of the same workload, mode and dtype.
  bool reuse_stored = false;
  int steps = 3;       // observed steps of a pass measured now
  bool trace = false;  // record its last step call by call (profile::ProfileResult::trace)
  std::string group;   // a pass measured now is stored under this group and tag
  std::string tag;
};

struct SourcedProfile {
  int64_t id = 0;       // in the store
  bool reused = false;  // read from the store, not measured now
  // Of the profile: a stored one may have been taken at another batch or thread count than the
  // options ask for.
  int64_t batch = 0;
  int threads = 0;
  // Measured now: as measured (warnings, trace and graph included). Stored: as read back (no
  // trace; its graph through store::ResultsStore::load_profile_graph).
  profile::ProfileResult result;
};

// The newest profile in `stored` (store::ResultsStore::load_profiles) that reuse may take for
// `options`; none when there is none.
std::optional<SourcedProfile> stored_profile(const std::vector<store::StoredProfile>& stored,
                                             const run::RunOptions& options);

// Profiles `options` now and stores the pass, whatever its status. `progress` gets one line
// announcing the pass, then the profiler's lines and the pass's warnings, indented.
SourcedProfile fresh_profile(store::ResultsStore& db, const run::RunOptions& options,
                             const ProfileSourcing& sourcing, const run::ProgressFn& progress);

// The stored profile where `sourcing` allows reuse and there is one (announced on `progress`),
// else fresh_profile.
SourcedProfile stored_or_fresh_profile(store::ResultsStore& db, const run::RunOptions& options,
                                       const ProfileSourcing& sourcing,
                                       const run::ProgressFn& progress);

}  // namespace plumb::jobs
