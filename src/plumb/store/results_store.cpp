// The results store (see results_store.h): opening a file safely, writing one run per
// transaction, and reading runs back.
#include "plumb/store/results_store.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/kill_point.h"
#include "plumb/run/generation_timing.h"
#include "plumb/store/rows.h"
#include "plumb/store/run_record.h"
#include "plumb/store/schema.h"

namespace plumb::store {

namespace fs = std::filesystem;

using detail::real_or_nan;
using detail::Row;
using detail::save_environment;
using detail::save_samples;
using detail::status_from_name;
using detail::strings_json;
using detail::write_record_columns;

namespace {

// Creates the schema unless another process did so between our probe and now; the check is
// repeated under the write lock (BEGIN IMMEDIATE) so two processes creating the same new
// file cannot both initialise it.
void initialise(SQLite::Database& db, const std::string& path) {
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  const detail::DbIdentity identity = detail::read_identity(db);
  const detail::DbKind kind = detail::classify(identity, path);
  if (kind == detail::DbKind::kEmpty) detail::create_schema(db);
  if (kind == detail::DbKind::kOlder) detail::migrate_schema(db, identity.user_version);
  tx.commit();
}

// A database file and the side files SQLite may have left beside it.
void remove_database_files(const std::string& file) {
  std::error_code ec;
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(file + suffix, ec);
}

// Gives the finished file `tmp` the name `path` too, in one step that never replaces a file
// already there: a hard link, or where the file system has none a rename with RENAME_NOREPLACE.
// Does nothing when `path` exists: another process published its database first.
void publish_new_database(const std::string& tmp, const std::string& path) {
  if (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST) return;
  const int link_error = errno;
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0 ||
      errno == EEXIST)
    return;
  throw UsageError(fmt::format(
      "cannot create results database '{}': its file system can neither hard-link ({}) nor "
      "rename without replacing ({}), which plumb needs to publish a new database whole; pass "
      "a --db on another file system",
      path, std::strerror(link_error), std::strerror(errno)));
}

// Creates a new database for `path`: made whole (schema, WAL mode) under a temporary name beside
// it, then published under `path`. Another process sees either no file or a whole database,
// and a failure removes only the temporary file, never a database at `path`: several processes
// may create the same new database at once, and one that fails must not delete the database
// another published meanwhile, with the results it may already hold. When another process
// published first, its database is kept and this one's discarded.
void create_database(const std::string& path) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  remove_database_files(tmp);  // left by a killed process that had this process id
  try {
    {
      SQLite::Database db(tmp, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                          detail::kBusyTimeoutMs);
      initialise(db, path);
      db.exec("PRAGMA journal_mode = WAL");
      kill_point("create-db");
      if (failure_injected("create-db"))
        throw SQLite::Exception("injected failure (PLUMB_FAIL_AT=create-db)", SQLITE_IOERR);
    }  // closed: the schema was committed to the file itself, before it switched to WAL
    publish_new_database(tmp, path);
    remove_database_files(tmp);  // the temporary name (and side files), published or not
  } catch (...) {
    remove_database_files(tmp);
    throw;
  }
}

// The UsageError for an SQLite failure to `verb` ("create", "open") the database at `path`.
UsageError open_error(const SQLite::Exception& e, const char* verb, const std::string& path) {
  if (const std::string full = detail::full_disk_note(path); !full.empty())
    return UsageError(fmt::format(
        "cannot {} results database '{}': {}; free space there or pass another --db (what it "
        "holds is unchanged)",
        verb, path, full));
  return UsageError(fmt::format(
      "cannot {} results database '{}': {}; check the path and its permissions or pass another "
      "--db",
      verb, path, e.what()));
}

StoredRun read_run_row(const SQLite::Statement& st) {
  StoredRun r;
  detail::read_record_columns(st, r);
  r.warmup_iterations = st.getColumn("warmup_iterations").getInt64();

  run::RunResult& res = r.result;
  res.status = status_from_name(st.getColumn("status").getString());
  res.message = st.getColumn("message").getString();
  res.command = st.getColumn("command").getString();
  res.started_at = st.getColumn("started_at").getString();
  res.wall_seconds = real_or_nan(st.getColumn("wall_seconds"));
  res.steady_detected = st.getColumn("steady_detected").getInt() != 0;
  res.target_met = st.getColumn("target_met").getInt() != 0;
  res.units_per_step = real_or_nan(st.getColumn("units_per_step"));
  res.throughput_unit = st.getColumn("throughput_unit").getString();
  res.throughput = real_or_nan(st.getColumn("throughput"));
  res.last_loss = real_or_nan(st.getColumn("last_loss"));
  res.cpu_utilization = real_or_nan(st.getColumn("cpu_utilization"));
  res.warnings = nlohmann::json::parse(st.getColumn("warnings_json").getString())
                     .get<std::vector<std::string>>();
  // Columns a file of an older schema read without upgrading lacks.
  if (detail::has_result_column(st, "precision_json"))
    res.precision_notes = nlohmann::json::parse(st.getColumn("precision_json").getString())
                              .get<std::vector<std::string>>();
  res.injected_delay_ms = detail::has_result_column(st, "injected_delay_ms")
                              ? st.getColumn("injected_delay_ms").getDouble()
                              : detail::legacy_injected_delay_ms(res.warnings);

  run::Summary& s = res.step_time;
  s.n = static_cast<size_t>(st.getColumn("n").getInt64());
  for (const auto& statistic : run::kSummaryStatistics)
    s.*statistic.value = real_or_nan(st.getColumn(statistic.name));
  return r;
}

// A generative run's sizes and phase samples (schema v15), with its statistics recomputed
// from them as the runner computed them. A file older than v15 has no such table: no row.
void read_generations(SQLite::Database& db, std::optional<int64_t> only_id,
                      std::vector<StoredRun>& runs, const std::map<int64_t, size_t>& index_of) {
  if (runs.empty() || !db.tableExists("run_generations")) return;
  const std::string where = only_id ? " WHERE run_id = :id" : "";
  SQLite::Statement heads(
      db, "SELECT run_id, batch, prompt, gen, kv_cache_bytes FROM run_generations" + where);
  if (only_id) heads.bind(":id", *only_id);
  while (heads.executeStep()) {
    auto it = index_of.find(heads.getColumn(0).getInt64());
    if (it == index_of.end()) continue;
    run::GenerationTimes& g = runs[it->second].result.generation.emplace();
    g.batch = heads.getColumn(1).getInt64();
    g.prompt = heads.getColumn(2).getInt64();
    g.gen = heads.getColumn(3).getInt64();
    g.kv_cache_bytes = heads.getColumn(4).getDouble();
  }
  SQLite::Statement samples(db, "SELECT run_id, phase, seconds FROM generation_samples" + where +
                                    " ORDER BY run_id, phase, idx");
  if (only_id) samples.bind(":id", *only_id);
  while (samples.executeStep()) {
    auto it = index_of.find(samples.getColumn(0).getInt64());
    if (it == index_of.end() || !runs[it->second].result.generation) continue;
    run::GenerationTimes& g = *runs[it->second].result.generation;
    (samples.getColumn(1).getString() == "prefill" ? g.ttft_s : g.decode_s)
        .push_back(samples.getColumn(2).getDouble());
  }
  for (auto& r : runs)
    if (r.result.generation) run::summarize_generation(*r.result.generation);
}

// Reads runs (all, or the one with `only_id`) and optionally their samples, inside one read
// transaction so a concurrent writer cannot slip a run in between the two queries.
std::vector<StoredRun> read_runs(SQLite::Database& db, std::optional<int64_t> only_id,
                                 bool with_samples) {
  SQLite::Transaction tx(db);
  const std::string where = only_id ? " WHERE r.id = :id" : "";
  SQLite::Statement runs(db,
                         detail::select_with_environment("runs", "r") + where + " ORDER BY r.id");
  if (only_id) runs.bind(":id", *only_id);
  std::vector<StoredRun> out;
  std::map<int64_t, size_t> index_of;
  while (runs.executeStep()) {
    index_of[runs.getColumn("id").getInt64()] = out.size();
    out.push_back(read_run_row(runs));
  }
  if (with_samples && !out.empty()) {
    const std::string swhere = only_id ? " WHERE run_id = :id" : "";
    SQLite::Statement samples(
        db, "SELECT run_id, phase, seconds FROM samples" + swhere + " ORDER BY run_id, phase, idx");
    if (only_id) samples.bind(":id", *only_id);
    while (samples.executeStep()) {
      auto it = index_of.find(samples.getColumn(0).getInt64());
      if (it == index_of.end()) continue;  // foreign keys make this impossible
      run::RunResult& res = out[it->second].result;
      const bool warmup = samples.getColumn(1).getString() == "warmup";
      (warmup ? res.warmup_s : res.samples_s).push_back(samples.getColumn(2).getDouble());
    }
  }
  read_generations(db, only_id, out, index_of);
  tx.commit();
  return out;
}

}  // namespace

ResultsStore::ResultsStore(std::string path, std::unique_ptr<SQLite::Database> db)
    : path_(std::move(path)), db_(std::move(db)) {}

ResultsStore::~ResultsStore() = default;

std::unique_ptr<ResultsStore> ResultsStore::open(const std::string& path, bool read_only) {
  // Every check that can refuse the file runs before it is opened for writing, so a refused
  // file is left byte-for-byte as it was.
  std::optional<detail::DbKind> existing = detail::check_path(path, read_only);
  if (!existing) {
    try {
      create_database(path);
    } catch (const SQLite::Exception& e) {
      throw open_error(e, "create", path);
    }
    // Ours, or the one another process published first.
    existing = detail::check_path(path, read_only);
    if (!existing)
      throw UsageError(fmt::format(
          "cannot create results database '{}': a new file there disappeared at once (a "
          "dangling symbolic link?); pass another --db",
          path));
  }

  // A reader of a file it could write connects read-write but sets query_only: SQLite then
  // refuses every change, and closing the last connection still checkpoints and removes the
  // '-wal'/'-shm' files, which a truly read-only connection would leave behind.
  const bool query_only = read_only && ::access(path.c_str(), W_OK) == 0 &&
                          ::access(detail::directory_of(path).c_str(), W_OK) == 0;
  int flags = read_only && !query_only ? SQLite::OPEN_READONLY : SQLite::OPEN_READWRITE;
  // A truly read-only reader of a WAL database needs a '-shm' file, which SQLite cannot
  // create in a directory we may not write (results shared read-only, read-only media).
  // With no side files present nobody is writing, so the file is read as immutable.
  std::string target = path;
  if (read_only && !query_only && !detail::has_side_files(path)) {
    target = detail::immutable_uri(path);
    flags |= SQLite::OPEN_URI;
  }
  // The file existed before this call or was published whole by it; either way another process
  // may be using it by now, so a failure below leaves it as it is.
  std::unique_ptr<SQLite::Database> db;
  try {
    db = std::make_unique<SQLite::Database>(target, flags, detail::kBusyTimeoutMs);
    // SQLite silently falls back to read-only when it cannot write the file; that would
    // only show when the first run is saved. sqlite3_db_readonly has no SQLiteCpp wrapper.
    if (!read_only && sqlite3_db_readonly(db->getHandle(), "main") == 1)
      throw UsageError(fmt::format(
          "cannot write results database '{}': SQLite can only open it read-only; fix its "
          "permissions or pass another --db",
          path));
    // The probe may have read the main file alone; checked again through this connection,
    // which also sees what an uncheckpointed WAL holds.
    const detail::DbKind kind = detail::classify(detail::read_identity(*db), path);
    if (read_only && kind == detail::DbKind::kEmpty) throw detail::no_results_yet(path);
    if (!read_only) {
      if (kind != detail::DbKind::kPlumb) initialise(*db, path);
      // Persistent in the file; WAL lets readers (plumb report) run beside a writer. If the
      // file system cannot do WAL, SQLite keeps its rollback journal: still atomic.
      db->exec("PRAGMA journal_mode = WAL");
    }
    if (query_only) db->exec("PRAGMA query_only = ON");
    db->exec("PRAGMA foreign_keys = ON");
  } catch (const SQLite::Exception& e) {
    throw open_error(e, "open", path);
  }
  return std::unique_ptr<ResultsStore>(new ResultsStore(path, std::move(db)));
}

namespace detail {

// The phases of a generative run: its sizes, then each prefill and decode call in order.
void save_generation(SQLite::Database& db, int64_t run_id, const run::GenerationTimes& g) {
  Row()
      .integer("run_id", run_id)
      .integer("batch", g.batch)
      .integer("prompt", g.prompt)
      .integer("gen", g.gen)
      .real("kv_cache_bytes", g.kv_cache_bytes)
      .insert_into(db, "run_generations");
  save_samples(db, run_id, "prefill", g.ttft_s, "generation_samples");
  save_samples(db, run_id, "decode", g.decode_s, "generation_samples");
}

int64_t insert_run(SQLite::Database& db, const run::RunOptions& options,
                   const run::RunResult& result, const platform::Environment& environment,
                   const std::string& tag) {
  const run::Summary& s = result.step_time;
  const int64_t environment_id = save_environment(db, environment);

  Row row;
  for (const auto& statistic : run::kSummaryStatistics)
    row.real(statistic.name, s.*statistic.value);
  write_record_columns(row, options, tag, environment_id);
  const int64_t run_id =
      row.text("started_at", result.started_at)
          .text("precision_json", strings_json(result.precision_notes))
          .text("command", result.command)
          .text("status", run::status_name(result.status))
          .text("message", result.message)
          .real("throughput", result.throughput)
          .text("throughput_unit", result.throughput_unit)
          .real("units_per_step", result.units_per_step)
          .real("wall_seconds", result.wall_seconds)
          .boolean("steady_detected", result.steady_detected)
          .boolean("target_met", result.target_met)
          .integer("warmup_iterations", static_cast<int64_t>(result.warmup_s.size()))
          .real("last_loss", result.last_loss)
          .real("cpu_utilization", result.cpu_utilization)
          .real("injected_delay_ms", result.injected_delay_ms)
          .text("warnings_json", strings_json(result.warnings))
          .integer("n", static_cast<int64_t>(s.n))
          .insert_into(db, "runs");
  save_samples(db, run_id, "warmup", result.warmup_s);
  save_samples(db, run_id, "measure", result.samples_s);
  if (result.generation) save_generation(db, run_id, *result.generation);
  return run_id;
}

}  // namespace detail

int64_t ResultsStore::save_run(const run::RunOptions& options, const run::RunResult& result,
                               const platform::Environment& environment, const std::string& tag) {
  try {
    // IMMEDIATE takes the write lock up front, so a concurrent writer makes us wait (busy
    // timeout) instead of failing half-way through with SQLITE_BUSY.
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const int64_t run_id = detail::insert_run(*db_, options, result, environment, tag);
    kill_point("storing");
    tx.commit();
    return run_id;
  } catch (const SQLite::Exception& e) {
    // The transaction has been rolled back by now: nothing of this run is stored, so its
    // figures go out with the error.
    detail::rethrow_save_error(e, "run of " + options.workload, path_,
                               detail::measured_run(result));
  }
}

std::vector<StoredRun> ResultsStore::load_runs(bool with_samples) const {
  return detail::guarded_read(path_, "runs", [&]() -> std::vector<StoredRun> {
    return read_runs(*db_, std::nullopt, with_samples);
  });
}

std::optional<StoredRun> ResultsStore::load_run(int64_t id, bool with_samples) const {
  return detail::guarded_read(path_, "runs", [&]() -> std::optional<StoredRun> {
    std::vector<StoredRun> runs = read_runs(*db_, id, with_samples);
    if (runs.empty()) return std::nullopt;
    return std::move(runs.front());
  });
}

}  // namespace plumb::store
