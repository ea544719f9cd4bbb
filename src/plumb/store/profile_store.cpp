// Persistence of profiling passes: the `profiles` and `op_stats` tables (schema v2).
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/profile/stored_phase.h"

#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"

namespace plumb::store {
namespace {

using profile::OpStat;
// op_stats' columns besides profile_id, in the order its INSERT binds them.
const std::vector<detail::ColumnOf<OpStat>> kOpStatColumns = {
    {"name", &OpStat::name},
    {"scope", &OpStat::scope},
    {"layer", &OpStat::layer},
    {"category", &OpStat::category},
    {"kind", &OpStat::kind},
    {"signature", &OpStat::signature},
    {"calls", &OpStat::calls},
    {"self_s", &OpStat::self_s},
    {"inclusive_s", &OpStat::inclusive_s},
    {"flops", &OpStat::flops},
    {"macs", &OpStat::macs},
    {"bytes_read", &OpStat::bytes_read},
    {"bytes_written", &OpStat::bytes_written}};

// fused_kernel_checks' columns of the check itself (besides id, time, machine, graph and
// environment).
using FusedCheck = profile::FusedKernelCheck;
const std::vector<detail::ColumnOf<FusedCheck>> kFusedCheckColumns = {
    {"kind", &FusedCheck::kind},
    {"shapes", &FusedCheck::shapes},
    {"unfused", &FusedCheck::unfused},
    {"fused_op", &FusedCheck::fused_op},
    {"dtype", &FusedCheck::dtype},
    {"threads", &FusedCheck::threads},
    {"repetitions", &FusedCheck::repetitions},
    {"unfused_s", &FusedCheck::unfused_s},
    {"fused_s", &FusedCheck::fused_s},
    {"max_abs_diff", &FusedCheck::max_abs_diff}};

}  // namespace
namespace {

std::vector<double> doubles_from_json(const std::string& text) {
  return nlohmann::json::parse(text).get<std::vector<double>>();
}

StoredProfile read_profile_row(const SQLite::Statement& st) {
  StoredProfile p;
  detail::read_record_columns(st, p);
  p.group = st.getColumn("group_id").getString();
  profile::ProfileResult& r = p.result;
  r.status = detail::status_from_name(st.getColumn("status").getString());
  r.message = st.getColumn("message").getString();
  r.command = st.getColumn("command").getString();
  r.started_at = st.getColumn("started_at").getString();
  r.threads = p.threads;
  r.steady_detected = st.getColumn("steady_detected").getInt() != 0;
  r.units_per_step = detail::real_or_nan(st.getColumn("units_per_step"));
  r.throughput_unit = st.getColumn("throughput_unit").getString();
  r.warmup_s = doubles_from_json(st.getColumn("warmup_json").getString());
  r.profiled_s = doubles_from_json(st.getColumn("profiled_json").getString());
  r.warnings = nlohmann::json::parse(st.getColumn("warnings_json").getString())
                   .get<std::vector<std::string>>();
  r.profile.steps = st.getColumn("steps").getInt();
  r.profile.step_s = detail::real_or_nan(st.getColumn("step_s"));
  r.profile.op_self_s = detail::real_or_nan(st.getColumn("op_self_s"));
  r.profile.overhead_s = detail::real_or_nan(st.getColumn("overhead_s"));
  r.profile.cpu_utilization = detail::real_or_nan(st.getColumn("cpu_utilization"));
  // NULL, or no column (a read-only open of a file older than v13): not recorded.
  const bool with_replay = detail::has_result_column(st, "replayed_steps");
  r.learning_step_s =
      with_replay ? detail::real_or_nan(st.getColumn("learning_step_s")) : std::nan("");
  r.replayed_steps = with_replay && !st.getColumn("replayed_steps").isNull()
                         ? st.getColumn("replayed_steps").getInt()
                         : -1;
  return p;
}

}  // namespace

namespace detail {

int64_t insert_profile(SQLite::Database& db, const run::RunOptions& options,
                       const profile::ProfileResult& result,
                       const platform::Environment& environment, const std::string& group,
                       const std::string& tag) {
  const profile::StepProfile& prof = result.profile;
  const int64_t environment_id = save_environment(db, environment);
  const PassRecord pass{group, result.started_at, result.command, result.status, result.message};
  const int64_t id = pass_row(pass, options, tag, environment_id)
                         .integer("steps", prof.steps)
                         .real("step_s", prof.step_s)
                         .real("op_self_s", prof.op_self_s)
                         .real("overhead_s", prof.overhead_s)
                         .real("cpu_utilization", prof.cpu_utilization)
                         .real("learning_step_s", result.learning_step_s)
                         .integer("replayed_steps", result.replayed_steps)
                         .real("units_per_step", result.units_per_step)
                         .text("throughput_unit", result.throughput_unit)
                         .boolean("steady_detected", result.steady_detected)
                         .text("warmup_json", json_text(nlohmann::json(result.warmup_s)))
                         .text("profiled_json", json_text(nlohmann::json(result.profiled_s)))
                         .text("warnings_json", strings_json(result.warnings))
                         .insert_into(db, "profiles");
  SQLite::Statement insert(
      db,
      "INSERT INTO op_stats (profile_id, name, scope, layer, category, kind, signature, calls, "
      "self_s, inclusive_s, flops, macs, bytes_read, bytes_written) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // A generation's phase rows go with the operators, told apart by their kind.
  std::vector<const profile::OpStat*> rows;
  for (const auto* list : {&prof.ops, &prof.phases})
    for (const profile::OpStat& op : *list) rows.push_back(&op);
  for (const profile::OpStat* row : rows) {
    const profile::OpStat op = profile::to_stored(*row);
    int i = 1;
    insert.bind(i++, id);
    insert.bind(i++, op.name);
    insert.bind(i++, op.scope);
    insert.bind(i++, op.layer);
    insert.bind(i++, op.category);
    insert.bind(i++, op.kind);
    insert.bind(i++, op.signature);
    for (double v :
         {op.calls, op.self_s, op.inclusive_s, op.flops, op.macs, op.bytes_read, op.bytes_written})
      insert.bind(i++, v);
    insert.exec();
    insert.reset();
  }
  if (result.graph_captured)
    detail::Row()
        .integer("profile_id", id)
        .integer("nodes", static_cast<int64_t>(result.graph.nodes.size()))
        .text("json", json_text(profile::graph_to_json(result.graph)))
        .insert_into(db, "profile_graphs");
  return id;
}

}  // namespace detail

int64_t ResultsStore::save_profile(const run::RunOptions& options,
                                   const profile::ProfileResult& result,
                                   const platform::Environment& environment,
                                   const std::string& group, const std::string& tag) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t id = detail::insert_profile(*db_, options, result, environment, group, tag);
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "profile of " + options.workload, path_);
  }
}

std::vector<StoredProfile> ResultsStore::load_profiles(const std::string& group) const {
  return detail::guarded_read(path_, "profiles", [&]() -> std::vector<StoredProfile> {
    if (!detail::has_table(*db_, "profiles")) return {};
    SQLite::Transaction tx(*db_);
    SQLite::Statement q(*db_, detail::select_with_environment("profiles", "p") +
                                  std::string(group.empty() ? "" : " WHERE p.group_id = :g") +
                                  " ORDER BY p.id");
    if (!group.empty()) q.bind(":g", group);
    std::vector<StoredProfile> out;
    while (q.executeStep()) out.push_back(read_profile_row(q));
    SQLite::Statement ops(*db_, "SELECT * FROM op_stats WHERE profile_id = ?");
    for (StoredProfile& p : out) {
      ops.bind(1, p.id);
      while (ops.executeStep()) {
        profile::OpStat s;
        detail::read_columns(ops, s, kOpStatColumns);
        s = profile::from_stored(std::move(s));
        auto& into = s.kind == profile::kPhaseRow ? p.result.profile.phases : p.result.profile.ops;
        into.push_back(std::move(s));
      }
      ops.reset();
    }
    tx.commit();
    return out;
  });
}

std::optional<profile::StepGraph> ResultsStore::load_profile_graph(int64_t profile_id) const {
  return detail::guarded_read(path_, "profile graphs", [&]() -> std::optional<profile::StepGraph> {
    if (!detail::has_table(*db_, "profile_graphs")) return std::nullopt;
    SQLite::Statement q(*db_, "SELECT json FROM profile_graphs WHERE profile_id = ?");
    q.bind(1, profile_id);
    if (!q.executeStep()) return std::nullopt;
    try {
      return profile::graph_from_json(nlohmann::json::parse(q.getColumn(0).getString()));
    } catch (const std::exception& e) {
      throw UsageError(
          fmt::format("the operator graph of profile {} in {} cannot be read ({}); re-profile with "
                      "this version",
                      profile_id, path_, e.what()));
    }
  });
}

int64_t ResultsStore::save_fused_kernel_check(const profile::FusedKernelCheck& c,
                                              const platform::Environment& environment) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t environment_id = detail::save_environment(*db_, environment);
    detail::Row row;
    row.text("measured_at", utc_now_iso8601()).text("machine", platform::machine_key(environment));
    const int64_t id = detail::write_columns(row, c, kFusedCheckColumns)
                           .text("graph_json", json_text(profile::graph_to_json(c.unfused_graph)))
                           .integer("environment_id", environment_id)
                           .insert_into(*db_, "fused_kernel_checks");
    tx.commit();
    return id;
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "fused-kernel check " + c.kind, path_);
  }
}

std::vector<StoredFusedKernelCheck> ResultsStore::load_fused_kernel_checks() const {
  return detail::guarded_read(
      path_, "fused-kernel checks", [&]() -> std::vector<StoredFusedKernelCheck> {
        std::vector<StoredFusedKernelCheck> out;
        if (!detail::has_table(*db_, "fused_kernel_checks")) return out;
        SQLite::Statement q(*db_, "SELECT * FROM fused_kernel_checks ORDER BY id");
        while (q.executeStep()) {
          StoredFusedKernelCheck s;
          s.id = q.getColumn("id").getInt64();
          s.measured_at = q.getColumn("measured_at").getString();
          s.machine = q.getColumn("machine").getString();
          profile::FusedKernelCheck& c = s.check;
          detail::read_columns(q, c, kFusedCheckColumns);
          try {
            c.unfused_graph = profile::graph_from_json(
                nlohmann::json::parse(q.getColumn("graph_json").getString()));
          } catch (const std::exception& e) {
            throw UsageError(fmt::format("fused-kernel check {} in {} cannot be read ({})", s.id,
                                         path_, e.what()));
          }
          out.push_back(std::move(s));
        }
        return out;
      });
}

}  // namespace plumb::store
