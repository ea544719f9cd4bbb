// Persistence of data-parallel measurements: the `dist_worlds` table (schema v8).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_text.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {

int64_t ResultsStore::save_dist_world(const StoredDistWorld& w) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t environment_id = detail::save_environment(*db_, w.environment);
    const int64_t id = detail::Row()
                           .text("started_at", w.started_at)
                           .text("workload", w.workload)
                           .integer("workers", w.workers)
                           .integer("threads_per_worker", w.threads_per_worker)
                           .integer("batch_per_worker", w.batch_per_worker)
                           .integer("bucket_bytes", w.bucket_bytes)
                           .boolean("overlap", w.overlap)
                           .text("link", w.link)
                           .text("tag", w.tag)
                           .text("status", run::status_name(w.status))
                           .text("message", w.message)
                           .real("throughput", w.throughput)
                           .text("throughput_unit", w.throughput_unit)
                           .real("step_mean_s", w.step_mean_s)
                           .real("step_ci_rel", w.step_ci_rel)
                           .real("efficiency", w.efficiency)
                           .real("compute_s", w.compute_s)
                           .real("exposed_s", w.exposed_s)
                           .real("overlapped_s", w.overlapped_s)
                           .integer("gradient_bytes", w.gradient_bytes)
                           .integer("peak_rss_bytes", w.peak_rss_bytes)
                           .integer("environment_id", environment_id)
                           .text("json", json_text(w.document))
                           .insert_into(*db_, "dist_worlds");
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
                        "SELECT d.*, e.json AS env_json FROM dist_worlds d JOIN environments e ON "
                        "e.id = d.environment_id ORDER BY d.id");
    while (q.executeStep()) {
      StoredDistWorld w;
      w.id = q.getColumn("id").getInt64();
      w.started_at = q.getColumn("started_at").getString();
      w.workload = q.getColumn("workload").getString();
      w.workers = q.getColumn("workers").getInt();
      w.threads_per_worker = q.getColumn("threads_per_worker").getInt();
      w.batch_per_worker = q.getColumn("batch_per_worker").getInt64();
      w.bucket_bytes = q.getColumn("bucket_bytes").getInt64();
      w.overlap = q.getColumn("overlap").getInt() != 0;
      w.link = q.getColumn("link").getString();
      w.tag = q.getColumn("tag").getString();
      w.status = detail::status_from_name(q.getColumn("status").getString());
      w.message = q.getColumn("message").getString();
      w.throughput = detail::real_or_nan(q.getColumn("throughput"));
      w.throughput_unit = q.getColumn("throughput_unit").getString();
      w.step_mean_s = detail::real_or_nan(q.getColumn("step_mean_s"));
      w.step_ci_rel = detail::real_or_nan(q.getColumn("step_ci_rel"));
      w.efficiency = detail::real_or_nan(q.getColumn("efficiency"));
      w.compute_s = detail::real_or_nan(q.getColumn("compute_s"));
      w.exposed_s = detail::real_or_nan(q.getColumn("exposed_s"));
      w.overlapped_s = detail::real_or_nan(q.getColumn("overlapped_s"));
      w.gradient_bytes = q.getColumn("gradient_bytes").getInt64();
      w.peak_rss_bytes = q.getColumn("peak_rss_bytes").getInt64();
      w.environment = platform::environment_from_json(
          nlohmann::json::parse(q.getColumn("env_json").getString()));
      w.document = nlohmann::ordered_json::parse(q.getColumn("json").getString());
      out.push_back(std::move(w));
    }
    return out;
  });
}

}  // namespace plumb::store
