// Stored precision comparisons (`plumb precision`, schema v7; see results_store.h).
#include <SQLiteCpp/SQLiteCpp.h>

#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {

int64_t ResultsStore::save_precision_comparison(const PrecisionComparisonRecord& r) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t id = detail::Row()
                           .integer("run_id", r.run_id)
                           .integer("reference_run_id", r.reference_run_id)
                           .real("speedup", r.speedup)
                           .real("speedup_low", r.speedup_low)
                           .real("speedup_high", r.speedup_high)
                           .boolean("error_measured", r.error_measured)
                           .real("relative_l2", r.error.relative_l2)
                           .real("max_abs", r.error.max_abs)
                           .real("cosine", r.error.cosine)
                           .real("agreement", r.error.agreement)
                           .text("agreement_kind", r.error.agreement_kind)
                           .integer("elements", r.error.elements)
                           .integer("examples", r.error.examples)
                           .text("note", r.note)
                           .insert_into(*db_, "precision_comparisons");
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "precision comparison of run " + std::to_string(r.run_id), path_);
  }
}

std::vector<PrecisionComparisonRecord> ResultsStore::load_precision_comparisons() const {
  return detail::guarded_read(
      path_, "precision comparisons", [&]() -> std::vector<PrecisionComparisonRecord> {
        std::vector<PrecisionComparisonRecord> out;
        if (!detail::has_table(*db_, "precision_comparisons")) return out;
        SQLite::Statement q(
            *db_,
            "SELECT p.*, r.workload, r.mode, r.dtype, r.memory_format, r.tag, r.batch, "
            "r.threads FROM precision_comparisons p JOIN runs r ON r.id = p.run_id "
            "ORDER BY p.id");
        while (q.executeStep()) {
          PrecisionComparisonRecord r;
          r.id = q.getColumn("id").getInt64();
          r.run_id = q.getColumn("run_id").getInt64();
          r.reference_run_id = q.getColumn("reference_run_id").getInt64();
          r.workload = q.getColumn("workload").getString();
          r.mode = q.getColumn("mode").getString();
          r.dtype = q.getColumn("dtype").getString();
          r.memory_format = q.getColumn("memory_format").getString();
          r.tag = q.getColumn("tag").getString();
          r.batch = q.getColumn("batch").getInt64();
          r.threads = q.getColumn("threads").getInt();
          r.speedup = detail::real_or_nan(q.getColumn("speedup"));
          r.speedup_low = detail::real_or_nan(q.getColumn("speedup_low"));
          r.speedup_high = detail::real_or_nan(q.getColumn("speedup_high"));
          r.error_measured = q.getColumn("error_measured").getInt() != 0;
          r.error.relative_l2 = detail::real_or_nan(q.getColumn("relative_l2"));
          r.error.max_abs = detail::real_or_nan(q.getColumn("max_abs"));
          r.error.cosine = detail::real_or_nan(q.getColumn("cosine"));
          r.error.agreement = detail::real_or_nan(q.getColumn("agreement"));
          r.error.agreement_kind = q.getColumn("agreement_kind").getString();
          r.error.elements = q.getColumn("elements").getInt64();
          r.error.examples = q.getColumn("examples").getInt64();
          r.note = q.getColumn("note").getString();
          out.push_back(std::move(r));
        }
        return out;
      });
}

}  // namespace plumb::store
