// Persistence of data-parallel measurements: the `dist_worlds` table (schema v8).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_text.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

using World = StoredDistWorld;
// dist_worlds' own columns (besides id, status, environment and the whole document).
const std::vector<detail::ColumnOf<World>> kWorldColumns = {
    {"started_at", &World::started_at},
    {"workload", &World::workload},
    {"workers", &World::workers},
    {"threads_per_worker", &World::threads_per_worker},
    {"batch_per_worker", &World::batch_per_worker},
    {"bucket_bytes", &World::bucket_bytes},
    {"overlap", &World::overlap},
    {"link", &World::link},
    {"tag", &World::tag},
    {"message", &World::message},
    {"throughput", &World::throughput},
    {"throughput_unit", &World::throughput_unit},
    {"step_mean_s", &World::step_mean_s},
    {"step_ci_rel", &World::step_ci_rel},
    {"efficiency", &World::efficiency},
    {"compute_s", &World::compute_s},
    {"exposed_s", &World::exposed_s},
    {"overlapped_s", &World::overlapped_s},
    {"gradient_bytes", &World::gradient_bytes},
    {"peak_rss_bytes", &World::peak_rss_bytes}};

}  // namespace

int64_t ResultsStore::save_dist_world(const StoredDistWorld& w) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    detail::Row row;
    row.text("status", run::status_name(w.status));
    const int64_t id = detail::insert_documented_row(*db_, "dist_worlds", row, w, kWorldColumns,
                                                     json_text(w.document));
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(
        e, "data-parallel measurement of " + w.workload, path_,
        fmt::format("{} workers, {:.6g} {}, step {:.6g} s, exposed communication {:.6g} s",
                    w.workers, w.throughput, w.throughput_unit, w.step_mean_s, w.exposed_s));
  }
}

std::vector<StoredDistWorld> ResultsStore::load_dist_worlds() const {
  return detail::guarded_read(path_, "data-parallel worlds", [&]() -> std::vector<StoredDistWorld> {
    std::vector<StoredDistWorld> out;
    if (!detail::has_table(*db_, "dist_worlds")) return out;
    SQLite::Statement q(*db_,
                        detail::select_with_environment("dist_worlds", "d") + " ORDER BY d.id");
    while (q.executeStep()) {
      auto w = detail::read_documented_row(q, kWorldColumns);
      w.status = detail::status_from_name(q.getColumn("status").getString());
      w.document = nlohmann::ordered_json::parse(q.getColumn("json").getString());
      out.push_back(std::move(w));
    }
    return out;
  });
}

}  // namespace plumb::store
