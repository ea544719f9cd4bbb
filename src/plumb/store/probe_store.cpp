// Persistence of machine-ceilings probes: the `probes` table (schema v3).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_text.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

// probes' own columns (besides id, environment and the whole document).
const std::vector<detail::ColumnOf<StoredProbe>> kProbeColumns = {
    {"machine", &StoredProbe::machine},
    {"mode", &StoredProbe::mode},
    {"measured_at", &StoredProbe::measured_at},
    {"seconds", &StoredProbe::seconds}};

StoredProbe read_probe_row(const SQLite::Statement& st) {
  auto p = detail::read_documented_row(st, kProbeColumns);
  p.document = nlohmann::ordered_json::parse(st.getColumn("json").getString());
  return p;
}

std::vector<StoredProbe> query_probes(SQLite::Database& db, const std::string& where,
                                      const std::string& machine) {
  if (!detail::has_table(db, "probes")) return {};
  SQLite::Statement q(db, detail::select_with_environment("probes", "p") + " " + where);
  if (!machine.empty()) q.bind(":m", machine);
  std::vector<StoredProbe> out;
  while (q.executeStep()) out.push_back(read_probe_row(q));
  return out;
}

}  // namespace

int64_t ResultsStore::save_probe(const StoredProbe& probe) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    detail::Row row;
    const int64_t id = detail::insert_documented_row(*db_, "probes", row, probe, kProbeColumns,
                                                     json_text(probe.document));
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "probe of this machine", path_);
  }
}

std::optional<StoredProbe> ResultsStore::latest_probe(const std::string& machine,
                                                      bool thorough_only) const {
  return detail::guarded_read(path_, "probes", [&]() -> std::optional<StoredProbe> {
    auto found = query_probes(*db_,
                              std::string("WHERE p.machine = :m") +
                                  (thorough_only ? " AND p.mode = 'thorough'" : "") +
                                  " ORDER BY p.id DESC LIMIT 1",
                              machine);
    if (found.empty()) return std::nullopt;
    return std::move(found.front());
  });
}

std::vector<StoredProbe> ResultsStore::load_probes() const {
  return detail::guarded_read(path_, "probes", [&]() -> std::vector<StoredProbe> {
    return query_probes(*db_, "ORDER BY p.id", "");
  });
}

}  // namespace plumb::store
