// Persistence of memory-profiling passes: the `memory_profiles` table (schema v4).
#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/profile/memory_json.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

StoredMemoryProfile read_memory_row(const SQLite::Statement& st) {
  StoredMemoryProfile m;
  detail::read_record_columns(st, m);
  m.group = st.getColumn("group_id").getString();
  profile::MemoryProfileResult& r = m.result;
  r.status = detail::status_from_name(st.getColumn("status").getString());
  r.message = st.getColumn("message").getString();
  r.command = st.getColumn("command").getString();
  r.started_at = st.getColumn("started_at").getString();
  r.threads = m.threads;
  r.limit_bytes = st.getColumn("limit_bytes").getInt64();
  r.step_s = detail::real_or_nan(st.getColumn("step_s"));
  r.units_per_step = detail::real_or_nan(st.getColumn("units_per_step"));
  r.throughput_unit = st.getColumn("throughput_unit").getString();
  r.tracked_peak = st.getColumn("tracked_peak").getInt64();
  r.rss_peak_growth =
      st.getColumn("rss_peak_growth").isNull() ? -1 : st.getColumn("rss_peak_growth").getInt64();
  // Plumb writes "--heap return" since schema 12; an unupgraded older file says keep.
  if (detail::legacy_rss_check(r.command)) m.heap = heap_policy_name(HeapPolicy::kReturn);
  r.warnings = nlohmann::json::parse(st.getColumn("warnings_json").getString())
                   .get<std::vector<std::string>>();
  r.breakdown = profile::breakdown_from_json(
      nlohmann::json::parse(st.getColumn("breakdown_json").getString()));
  return m;
}

}  // namespace

namespace detail {

int64_t insert_memory_profile(SQLite::Database& db, const run::RunOptions& options,
                              const profile::MemoryProfileResult& result,
                              const platform::Environment& environment, const std::string& group,
                              const std::string& tag) {
  const profile::MemoryBreakdown& b = result.breakdown;
  const bool ok = result.status == run::RunStatus::kOk;
  const int64_t environment_id = save_environment(db, environment);
  const PassRecord pass{group, result.started_at, result.command, result.status, result.message};
  Row row = pass_row(pass, options, tag, environment_id);
  // A failed pass has no meaningful peaks: NULL, not zero.
  for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i) {
    // kv_cache has no column (yet): its peak is kept in breakdown_json's, which loads read.
    if (profile::category_at(i) == profile::MemoryCategory::kKvCache) continue;
    const char* column = profile::category_key(profile::category_at(i));
    if (ok) {
      row.integer(column, b.peak[i]);
    } else {
      row.null(column);
    }
  }
  if (ok) {
    row.integer("total_peak", b.total_peak);
  } else {
    row.null("total_peak");
  }
  row.integer("tracked_peak", result.tracked_peak)
      .real("rss_peak_growth",
            result.rss_peak_growth < 0 ? std::nan("") : static_cast<double>(result.rss_peak_growth))
      .integer("limit_bytes", result.limit_bytes)
      .real("step_s", ok ? result.step_s : std::nan(""))
      .real("units_per_step", result.units_per_step)
      .text("throughput_unit", result.throughput_unit)
      .text("warnings_json", strings_json(result.warnings))
      .text("breakdown_json", json_text(profile::to_json(b)));
  return row.insert_into(db, "memory_profiles");
}

}  // namespace detail

int64_t ResultsStore::save_memory_profile(const run::RunOptions& options,
                                          const profile::MemoryProfileResult& result,
                                          const platform::Environment& environment,
                                          const std::string& group, const std::string& tag) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t id =
        detail::insert_memory_profile(*db_, options, result, environment, group, tag);
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "memory profile of " + options.workload, path_);
  }
}

std::vector<StoredMemoryProfile> ResultsStore::load_memory_profiles(
    const std::string& group) const {
  return detail::guarded_read(path_, "memory profiles", [&]() -> std::vector<StoredMemoryProfile> {
    if (!detail::has_table(*db_, "memory_profiles")) return {};
    SQLite::Statement q(*db_, detail::select_with_environment("memory_profiles", "m") +
                                  std::string(group.empty() ? "" : " WHERE m.group_id = :g") +
                                  " ORDER BY m.id");
    if (!group.empty()) q.bind(":g", group);
    std::vector<StoredMemoryProfile> out;
    while (q.executeStep()) out.push_back(read_memory_row(q));
    return out;
  });
}

nlohmann::ordered_json memory_profile_json(const StoredMemoryProfile& m) {
  const profile::MemoryProfileResult& r = m.result;
  nlohmann::ordered_json j;
  j["memory_id"] = m.id;
  detail::add_record_json(j, m);
  j["group"] = m.group;
  j["status"] = run::status_name(r.status);
  j["message"] = r.message;
  j["command"] = r.command;
  j["started_at"] = r.started_at;
  const bool ok = r.status == run::RunStatus::kOk;
  const nlohmann::ordered_json details = profile::to_json(r.breakdown);
  for (const auto& [key, bytes] : details.at("peak").items())
    j[key] = ok ? bytes : nlohmann::ordered_json();
  j["total_peak"] = ok ? details.at("total_peak") : nlohmann::ordered_json();
  j["tracked_peak"] = r.tracked_peak;
  j["rss_peak_growth"] =
      r.rss_peak_growth < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.rss_peak_growth);
  j["limit_bytes"] = r.limit_bytes;
  j["step_s"] = json_number(r.step_s);
  j["units_per_step"] = json_number(r.units_per_step);
  j["throughput_unit"] = r.throughput_unit;
  j["warnings"] = r.warnings;
  if (ok)
    for (const auto& [key, value] : details.items())
      if (key != "peak" && key != "total_peak") j[key] = value;
  j["config"] = m.config;
  j["environment"] = platform::to_json(m.environment);
  return j;
}

}  // namespace plumb::store
