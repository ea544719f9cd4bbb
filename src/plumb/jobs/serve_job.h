// plumb serve's job: one serve session per run setting (a --dtype list gives several), each
// measured by run::serve_workload (a generative workload: run::serve_generative, token by token),
// stored with every query's (request's and engine iteration's) times, and handed to the caller as
// it finishes. The session's command and key are printed by run::serve_setting, the one
// identity printer. Reporters: serve_report.h (JSON); the text table is the CLI's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/serve_defaults.h"
#include "plumb/run/serve_session.h"
#include "plumb/run/token_serve_session.h"
#include "plumb/store/results_store.h"
#include "plumb/store/serve_records.h"

namespace plumb::jobs {

struct ServeJob {
  run::ServeOptions base;  // scenario, bound, batching, workers, duration ...
  // A generative workload is served token by token (run/token_serve_session.h) with these
  // options instead of `base`.
  bool token_level = false;
  run::TokenServeOptions token;
  // One session per scheduler for each setting (--scheduler static,continuous), in this order;
  // empty: token.scheduler.kind alone.
  std::vector<run::SchedulerKind> schedulers;
  run::TokenServeDefaults token_defaults;
  std::vector<run::RunOptions> settings;  // one session per entry, in order
  run::ServeDefaults defaults;            // the workload's, stored with each session
  std::string db;
  std::string tag;
};

struct ServedSession {
  store::StoredServeSession stored;   // as saved (ids filled in)
  std::vector<std::string> warnings;  // the measurement's, for the text reporter
};

struct ServeJobResult {
  std::vector<ServedSession> sessions;
  // 1 when a session failed, its bound was not reachable, or its search found no rate.
  int exit_code = 0;
};

struct ServeJobHooks {
  run::ProgressFn announce;  // a session's command line, before it runs; failures
  run::ProgressFn progress;  // the measurement's progress lines
  std::function<void(const ServedSession&)> done;  // each session once stored
};

// The options of one token-level session of `job`: its token options at `setting` and
// `scheduler` (static beside continuous in a list leaves --chunk to the continuous one).
run::TokenServeOptions token_session_options(const ServeJob& job, const run::RunOptions& setting,
                                             run::SchedulerKind scheduler);

// The stored form of a token-level session (token_serve_record.cpp).
store::StoredServeSession stored_token_serve_session(const Workload& workload,
                                                     const run::TokenServeOptions& options,
                                                     const run::TokenServeDefaults& defaults,
                                                     const run::TokenServeResult& result,
                                                     const std::string& tag);

ServeJobResult run_serve_job(const Workload& workload, const ServeJob& job,
                             const ServeJobHooks& hooks);

}  // namespace plumb::jobs
