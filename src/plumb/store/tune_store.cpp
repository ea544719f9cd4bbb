// Persistence of plumb tune: tune_sessions (schema v11).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_text.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {

void ResultsStore::save_tune_session(StoredTuneSession& s) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t environment_id = detail::save_environment(*db_, s.environment);
    s.id = detail::Row()
               .text("started_at", s.started_at)
               .text("workload", s.workload)
               .text("mode", s.mode)
               .integer("batch", s.batch)
               .integer("threads", s.threads)
               .boolean("found", s.found)
               .real("speedup", s.speedup)
               .real("speedup_low", s.speedup_low)
               .real("speedup_high", s.speedup_high)
               .text("best_command", s.best_command)
               .text("tag", s.tag)
               .integer("environment_id", environment_id)
               .text("json", json_text(s.document))
               .insert_into(*db_, "tune_sessions");
    tx.commit();
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(
        e, "tuning result of " + s.workload, path_,
        fmt::format("best/stock {:.3g} [{:.3g}, {:.3g}]; best: {}", s.speedup, s.speedup_low,
                    s.speedup_high, s.best_command));
  }
}

std::vector<StoredTuneSession> ResultsStore::load_tune_sessions() const {
  return detail::guarded_read(path_, "tune sessions", [&]() -> std::vector<StoredTuneSession> {
    std::vector<StoredTuneSession> out;
    if (!detail::has_table(*db_, "tune_sessions")) return out;
    SQLite::Statement q(*db_,
                        "SELECT t.*, e.json AS env_json FROM tune_sessions t JOIN environments e "
                        "ON e.id = t.environment_id ORDER BY t.id");
    while (q.executeStep()) {
      StoredTuneSession s;
      s.id = q.getColumn("id").getInt64();
      s.started_at = q.getColumn("started_at").getString();
      s.workload = q.getColumn("workload").getString();
      s.mode = q.getColumn("mode").getString();
      s.batch = q.getColumn("batch").getInt64();
      s.threads = q.getColumn("threads").getInt();
      s.found = q.getColumn("found").getInt() != 0;
      s.speedup = detail::real_or_nan(q.getColumn("speedup"));
      s.speedup_low = detail::real_or_nan(q.getColumn("speedup_low"));
      s.speedup_high = detail::real_or_nan(q.getColumn("speedup_high"));
      s.best_command = q.getColumn("best_command").getString();
      s.tag = q.getColumn("tag").getString();
      s.environment = platform::environment_from_json(
          nlohmann::json::parse(q.getColumn("env_json").getString()));
      s.document = nlohmann::ordered_json::parse(q.getColumn("json").getString());
      out.push_back(std::move(s));
    }
    return out;
  });
}

}  // namespace plumb::store
