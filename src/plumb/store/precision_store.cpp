// Stored precision comparisons (`plumb precision`, schema v7; see results_store.h).
#include <cmath>
#include <limits>

#include <SQLiteCpp/SQLiteCpp.h>

#include "plumb/store/precision_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

using Comparison = PrecisionComparisonRecord;
using Error = run::OutputError;
// precision_comparisons' columns: the comparison's, then its output error's.
const std::vector<detail::ColumnOf<Comparison>> kComparisonColumns = {
    {"run_id", &Comparison::run_id},
    {"reference_run_id", &Comparison::reference_run_id},
    {"speedup", &Comparison::speedup},
    {"speedup_low", &Comparison::speedup_low},
    {"speedup_high", &Comparison::speedup_high},
    {"error_measured", &Comparison::error_measured},
    {"note", &Comparison::note}};
const std::vector<detail::ColumnOf<Error>> kErrorColumns = {
    {"relative_l2", &Error::relative_l2},
    {"max_abs", &Error::max_abs},
    {"cosine", &Error::cosine},
    {"agreement", &Error::agreement},
    {"agreement_kind", &Error::agreement_kind},
    {"elements", &Error::elements},
    {"examples", &Error::examples}};

// Comparisons stored before a run of one step-time sample had a ratio (it had no interval, and
// the ratio was stored NULL with it) read the ratio from the two runs' throughputs, the same
// figure (units per step / mean step time); the interval stays unknown. NaN when either
// throughput is missing.
double derived_speedup(const SQLite::Column& run, const SQLite::Column& reference) {
  if (run.isNull() || reference.isNull()) return std::numeric_limits<double>::quiet_NaN();
  const double a = run.getDouble(), b = reference.getDouble();
  return a > 0 && b > 0 ? a / b : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

int64_t ResultsStore::save_precision_comparison(const PrecisionComparisonRecord& r) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    detail::Row row;
    detail::write_columns(row, r, kComparisonColumns);
    const int64_t id = detail::write_columns(row, r.error, kErrorColumns)
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
            "r.threads, r.throughput AS run_throughput, f.throughput AS reference_throughput "
            "FROM precision_comparisons p JOIN runs r ON r.id = p.run_id "
            "LEFT JOIN runs f ON f.id = p.reference_run_id ORDER BY p.id");
        while (q.executeStep()) {
          PrecisionComparisonRecord r;
          r.id = q.getColumn("id").getInt64();
          detail::read_columns(q, r, kComparisonColumns);
          detail::read_columns(q, r.error, kErrorColumns);
          // The run's own columns, joined in.
          r.workload = q.getColumn("workload").getString();
          r.mode = q.getColumn("mode").getString();
          r.dtype = detail::stored_dtype(q.getColumn("dtype").getString());
          r.memory_format = q.getColumn("memory_format").getString();
          r.tag = q.getColumn("tag").getString();
          r.batch = q.getColumn("batch").getInt64();
          r.threads = q.getColumn("threads").getInt();
          if (!std::isfinite(r.speedup))
            r.speedup =
                derived_speedup(q.getColumn("run_throughput"), q.getColumn("reference_throughput"));
          out.push_back(std::move(r));
        }
        return out;
      });
}

}  // namespace plumb::store
