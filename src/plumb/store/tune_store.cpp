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
    detail::Row row;
    s.id = detail::insert_documented_row(*db_, "tune_sessions", row, s, kTuneColumns,
                                         json_text(nlohmann::ordered_json(s.result)));
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
                        detail::select_with_environment("tune_sessions", "t") + " ORDER BY t.id");
    while (q.executeStep()) {
      auto s = detail::read_documented_row(q, kTuneColumns);
      s.result = nlohmann::ordered_json::parse(q.getColumn("json").getString()).get<TuneResult>();
      out.push_back(std::move(s));
    }
    return out;
  });
}

}  // namespace plumb::store
