// Precisions a quick characterization left untimed (schema v14; see results_store.h).
#include <SQLiteCpp/SQLiteCpp.h>

#include "plumb/store/precision_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

using Untimed = UntimedPrecision;
const std::vector<detail::ColumnOf<Untimed>> kUntimedColumns = {
    {"tag", &Untimed::tag},
    {"workload", &Untimed::workload},
    {"mode", &Untimed::mode},
    {"dtype", &Untimed::dtype},
    {"reason", &Untimed::reason},
    {"command", &Untimed::command},
    {"decided_at", &Untimed::decided_at}};

}  // namespace

void ResultsStore::save_untimed_precision(const UntimedPrecision& untimed) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // One row per item: a later decision replaces the earlier one.
    SQLite::Statement drop(*db_,
                           "DELETE FROM untimed_precisions WHERE tag = ? AND workload = ? AND "
                           "mode = ? AND dtype = ?");
    drop.bind(1, untimed.tag);
    drop.bind(2, untimed.workload);
    drop.bind(3, untimed.mode);
    drop.bind(4, untimed.dtype);
    drop.exec();
    detail::Row row;
    detail::write_columns(row, untimed, kUntimedColumns).insert_into(*db_, "untimed_precisions");
    tx.commit();
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(
        e, "untimed " + untimed.dtype + " of " + untimed.workload + " " + untimed.mode, path_);
  }
}

std::vector<UntimedPrecision> ResultsStore::load_untimed_precisions() const {
  return detail::guarded_read(path_, "untimed precisions", [&]() -> std::vector<UntimedPrecision> {
    std::vector<UntimedPrecision> out;
    if (!detail::has_table(*db_, "untimed_precisions")) return out;
    SQLite::Statement q(*db_, "SELECT * FROM untimed_precisions ORDER BY id");
    while (q.executeStep()) {
      UntimedPrecision u;
      u.id = q.getColumn("id").getInt64();
      detail::read_columns(q, u, kUntimedColumns);
      out.push_back(std::move(u));
    }
    return out;
  });
}

}  // namespace plumb::store
