// Persistence of plumb tune: tune_sessions (schema v11).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_text.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"
#include "plumb/store/tune_record.h"

namespace plumb::store {
namespace {

using Tune = StoredTuneSession;
// tune_sessions' own columns (besides id, environment and the whole report, the typed result
// written and read as its JSON document: tune_result.h).
const std::vector<detail::ColumnOf<Tune>> kTuneColumns = {{"started_at", &Tune::started_at},
                                                          {"workload", &Tune::workload},
                                                          {"mode", &Tune::mode},
                                                          {"batch", &Tune::batch},
                                                          {"threads", &Tune::threads},
                                                          {"found", &Tune::found},
                                                          {"speedup", &Tune::speedup},
                                                          {"speedup_low", &Tune::speedup_low},
                                                          {"speedup_high", &Tune::speedup_high},
                                                          {"best_command", &Tune::best_command},
                                                          {"tag", &Tune::tag}};

}  // namespace

void ResultsStore::save_tune_session(StoredTuneSession& s) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t environment_id = detail::save_environment(*db_, s.environment);
    detail::Row row;
    s.id = detail::write_columns(row, s, kTuneColumns)
               .integer("environment_id", environment_id)
               .text("json", json_text(nlohmann::ordered_json(s.result)))
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
      detail::read_columns(q, s, kTuneColumns);
      s.environment = platform::environment_from_json(
          nlohmann::json::parse(q.getColumn("env_json").getString()));
      s.result = nlohmann::ordered_json::parse(q.getColumn("json").getString()).get<TuneResult>();
      out.push_back(std::move(s));
    }
    return out;
  });
}

}  // namespace plumb::store
