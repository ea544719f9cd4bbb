// Store internals shared by the run and profile tables (see rows.h).
#include "plumb/store/rows.h"

#include <sys/statvfs.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/schema.h"

namespace plumb::store::detail {

double real_or_nan(const SQLite::Column& c) {
  return c.isNull() ? std::numeric_limits<double>::quiet_NaN() : c.getDouble();
}

std::string strings_json(const std::vector<std::string>& xs) {
  return json_text(nlohmann::json(xs));
}

// Environments are shared between runs when identical (e.g. a sweep captures one).
int64_t save_environment(SQLite::Database& db, const platform::Environment& env) {
  const std::string json = json_text(platform::to_json(env));
  SQLite::Statement find(db, "SELECT id FROM environments WHERE json = ?");
  find.bind(1, json);
  if (find.executeStep()) return find.getColumn(0).getInt64();
  return Row()
      .text("host", env.host)
      .text("os", env.os)
      .text("cpu_model", env.cpu_model)
      .text("isa_json", strings_json(env.isa))
      .integer("logical_cores", env.logical_cores)
      .integer("threads_used", env.threads_used)
      .real("load_average_1m", env.load_average_1m)
      .text("cpu_governor", env.cpu_governor)
      .text("libtorch_version", env.libtorch_version)
      .text("blas", env.blas)
      .boolean("blas_optimized", env.blas_optimized)
      .text("onednn_version", env.onednn_version)
      .text("plumb_version", env.plumb_version)
      .text("git_commit", env.git_commit)
      .text("compiler", env.compiler)
      .text("device", env.device)
      .text("warnings_json", strings_json(env.warnings))
      .text("json", json)
      .insert_into(db, "environments");
}

void save_samples(SQLite::Database& db, int64_t run_id, const char* phase,
                  const std::vector<double>& seconds, const char* table) {
  SQLite::Statement insert(
      db, fmt::format("INSERT INTO {} (run_id, phase, idx, seconds) VALUES (?, ?, ?, ?)", table));
  insert.bind(1, run_id);
  insert.bind(2, phase);
  for (size_t i = 0; i < seconds.size(); ++i) {
    insert.bind(3, static_cast<int64_t>(i));
    insert.bind(4, seconds[i]);
    insert.exec();
    insert.reset();
  }
}

run::RunStatus status_from_name(const std::string& name) {
  // kError is unreachable for rows that passed the CHECK constraint.
  return run::status_from_name(name).value_or(run::RunStatus::kError);
}

Row& write_record_columns(Row& row, const run::RunOptions& options, const std::string& tag,
                          int64_t environment_id) {
  const nlohmann::ordered_json config = options.config.to_json();
  // A workload without a batch dimension (none today) is stored with batch 0.
  const auto batch = config.find("batch");
  return row.text("workload", options.workload)
      .text("mode", mode_name(options.mode))
      .integer("batch",
               batch != config.end() && batch->is_number_integer() ? batch->get<int64_t>() : 0)
      .integer("threads", options.threads)
      .text("device", options.device)
      .text("dtype", dtype_name(options.dtype))
      .text("memory_format", memory_format_name(options.memory_format))
      .text("engine", engine_name(options.engine))
      .text("heap", heap_policy_name(options.heap))
      .text("tag", tag)
      .text("config_json", json_text(config))
      .integer("environment_id", environment_id);
}

Row pass_row(const PassRecord& pass, const run::RunOptions& options, const std::string& tag,
             int64_t environment_id) {
  Row row;
  row.text("group_id", pass.group)
      .text("started_at", pass.started_at)
      .text("command", pass.command)
      .text("status", run::status_name(pass.status))
      .text("message", pass.message);
  write_record_columns(row, options, tag, environment_id);
  return row;
}

void add_record_json(nlohmann::ordered_json& j, const StoredRecord& r) {
  j["workload"] = r.workload;
  j["mode"] = r.mode;
  j["batch"] = r.batch;
  j["threads"] = r.threads;
  j["device"] = r.device;
  j["dtype"] = dtype_name(r.dtype);
  j["memory_format"] = r.memory_format;
  j["engine"] = r.engine;
  j["heap"] = r.heap;
  j["tag"] = r.tag;
}

bool has_result_column(const SQLite::Statement& st, const char* column) {
  for (int i = 0; i < st.getColumnCount(); ++i)
    if (std::strcmp(st.getColumnName(i), column) == 0) return true;
  return false;
}

Dtype stored_dtype(const std::string& name) {
  const auto dtype = dtype_from_name(name);
  // A column of the wrong kind: guarded_read turns it into the store's read error.
  if (!dtype) throw SQLite::Exception("'" + name + "' is no dtype plumb knows", SQLITE_MISMATCH);
  return *dtype;
}

void read_record_columns(const SQLite::Statement& st, store::StoredRecord& r) {
  r.id = st.getColumn("id").getInt64();
  r.workload = st.getColumn("workload").getString();
  r.mode = st.getColumn("mode").getString();
  r.batch = st.getColumn("batch").getInt64();
  r.threads = st.getColumn("threads").getInt();
  r.device = st.getColumn("device").getString();
  // A file read without upgrading (read-only open of an older schema) lacks the v7 and v11 columns.
  using TextColumn = std::pair<const char*, std::string StoredRecord::*>;
  for (const auto& [column, field] :
       {TextColumn{"memory_format", &StoredRecord::memory_format},
        TextColumn{"engine", &StoredRecord::engine}, TextColumn{"heap", &StoredRecord::heap}})
    if (has_result_column(st, column)) r.*field = st.getColumn(column).getString();
  if (has_result_column(st, "dtype")) r.dtype = stored_dtype(st.getColumn("dtype").getString());
  r.tag = st.getColumn("tag").getString();
  r.config = nlohmann::ordered_json::parse(st.getColumn("config_json").getString());
  r.environment = joined_environment(st);
}

std::string select_with_environment(const char* table, const char* alias) {
  return fmt::format(
      "SELECT {1}.*, e.json AS env_json FROM {0} {1} JOIN environments e ON e.id = "
      "{1}.environment_id",
      table, alias);
}

platform::Environment joined_environment(const SQLite::Statement& st) {
  return platform::environment_from_json(
      nlohmann::json::parse(st.getColumn("env_json").getString()));
}

std::string measured_run(const run::RunResult& result) {
  if (result.status != run::RunStatus::kOk)
    return fmt::format("{}: {}", run::status_name(result.status), result.message);
  return fmt::format("{:.6g} {}, median step {:.6g} s over {} steps; reproduce: {}",
                     result.throughput, result.throughput_unit, result.step_time.median,
                     result.step_time.n, result.command);
}

std::string full_disk_note(const std::string& path) {
  struct statvfs fs {};
  const std::string dir = directory_of(path);
  if (::statvfs(dir.c_str(), &fs) != 0) return "";
  const auto free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= (uint64_t{1} << 20)) return "";
  return fmt::format("the disk holding '{}' is full ({} bytes free)", dir, free_bytes);
}

void rethrow_save_error(const SQLite::Exception& e, const std::string& what,
                        const std::string& path, const std::string& measured) {
  const int code = e.getErrorCode();
  std::string message = fmt::format("could not save the {} to '{}' (nothing of it was stored): {}",
                                    what, path, e.what());
  if (!measured.empty()) message += " [measured: " + measured + "]";
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw SaveError(message +
                    "; another process holds the database locked: retry when it is done or "
                    "pass another --db");
  if (code == SQLITE_READONLY)
    throw SaveError(message +
                    "; the store was opened read-only or its file is not writable: fix "
                    "permissions or pass another --db");
  if (const std::string full = full_disk_note(path); !full.empty())
    throw SaveError(message + "; " + full + ": free space there or pass another --db");
  if (code == SQLITE_FULL || code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_PERM)
    throw SaveError(message + "; free disk space or fix permissions, or pass another --db");
  throw std::runtime_error(message);
}

void rethrow_read_error(const std::exception& e, const std::string& what, const std::string& path) {
  const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&e);
  const int code = sqlite != nullptr ? sqlite->getErrorCode() : SQLITE_OK;
  const std::string message =
      fmt::format("cannot read the {} in results database '{}': {}", what, path, e.what());
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw UsageError(message + "; another process has held it locked for over " +
                     std::to_string(kBusyTimeoutMs / 1000) + " s: retry when it is done");
  if (code == SQLITE_IOERR || code == SQLITE_CANTOPEN || code == SQLITE_PERM)
    throw UsageError(message + "; check the file and its permissions, or pass another --db");
  throw UsageError(message +
                   "; the file is damaged or was not written by plumb: restore it from a copy "
                   "or pass another --db");
}

}  // namespace plumb::store::detail
