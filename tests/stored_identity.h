// The identity printer's round trip (run/setting_identity.h) as the CLI tests check it: a
// measuring command stores its record with a reproducer; that reproducer, run again into another
// database, must store the same command line (every option came back) and land on the same
// canonical key as the record it reproduces.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cli_fixture.h"
#include "plumb/analysis/comparison_identity.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/serve_records.h"

namespace plumb::testing {

struct StoredIdentity {
  std::string workload, command, key;
};

// The newest record of `kind` ("run", "profile", "memory", "serve") in `db`: its workload, stored
// command and canonical key (a serve session's stored setting).
inline StoredIdentity newest_stored_identity(const std::string& db, const std::string& kind) {
  auto store = store::ResultsStore::open(db, /*read_only=*/true);
  auto of = [](const store::StoredRecord& r, const std::string& command) {
    return StoredIdentity{r.workload, command, analysis::stored_key(r)};
  };
  if (kind == "run") {
    const auto runs = store->load_runs(false);
    if (!runs.empty()) return of(runs.back(), runs.back().result.command);
  } else if (kind == "profile") {
    const auto profiles = store->load_profiles();
    if (!profiles.empty()) return of(profiles.back(), profiles.back().result.command);
  } else if (kind == "memory") {
    const auto passes = store->load_memory_profiles();
    if (!passes.empty()) return of(passes.back(), passes.back().result.command);
  } else if (kind == "serve") {
    const auto sessions = store->load_serve_sessions();
    if (!sessions.empty())
      return {sessions.back().workload, sessions.back().command, sessions.back().setting};
  }
  ADD_FAILURE() << "no " << kind << " record in " << db;
  return {};
}

// Runs the reproducer of the newest `kind` record in `db` (through `plumb`, which takes the
// arguments after "plumb ") into `again`, and checks that it lands on the same identity.
inline void expect_reproducer_round_trip(const std::function<Result(const std::string&)>& plumb,
                                         const std::string& db, const std::string& again,
                                         const std::string& kind) {
  const StoredIdentity original = newest_stored_identity(db, kind);
  ASSERT_EQ(original.command.rfind("plumb " + kind + " " + original.workload + " ", 0), 0u)
      << original.command;
  const Result r = plumb(original.command.substr(6) + " --db " + again);
  ASSERT_EQ(r.code, 0) << original.command << ": " << r.err;
  const StoredIdentity reproduced = newest_stored_identity(again, kind);
  EXPECT_EQ(reproduced.workload, original.workload);
  EXPECT_EQ(reproduced.command, original.command);
  EXPECT_EQ(reproduced.key, original.key) << original.command;
}

}  // namespace plumb::testing
