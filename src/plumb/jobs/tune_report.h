// The two reporters of a tuning session (jobs/tune_job.h): the text plumb tune prints and the
// JSON document `plumb tune --json` prints (the stored document with the session's id).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/store/results_store.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {

// The headline, the precisions' errors, then (when found) stock and best with the speedup, what
// each change contributed, the headroom and the best's reproducer; else why nothing was found.
void print_tune_text(const store::StoredTuneSession& session, std::ostream& out);

nlohmann::ordered_json tune_json(const store::StoredTuneSession& session);

}  // namespace plumb::jobs
