// Store internals shared by the run and profile tables: a row builder that names every
// column next to its value, NULL/NaN conversion, environment de-duplication, status names, and
// the mapping of SQLite read and write failures to actionable errors. Not part of the public API.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/run_result.h"

namespace plumb::store {
struct StoredRecord;
}

namespace plumb::store::detail {

// One row to insert, each column named next to its value: the INSERT statement is generated
// from the row, so a column can never be bound to the wrong value.
class Row {
 public:
  Row& text(const char* column, std::string value) { return add(column, std::move(value)); }
  Row& integer(const char* column, int64_t value) { return add(column, value); }
  Row& boolean(const char* column, bool value) { return add(column, int64_t{value ? 1 : 0}); }
  // Undefined statistics (NaN) are stored as SQL NULL and read back as NaN.
  Row& real(const char* column, double value) {
    if (std::isnan(value)) return add(column, std::monostate{});
    return add(column, value);
  }
  Row& null(const char* column) { return real(column, std::nan("")); }
  // One column of a row read back, whatever its type (copying rows between databases).
  Row& column_value(const SQLite::Column& c) {
    const std::string name = c.getName();
    if (c.isNull()) return add(name, std::monostate{});
    if (c.isInteger()) return add(name, c.getInt64());
    if (c.isFloat()) return add(name, c.getDouble());
    return add(name, c.getString());
  }

  // Returns the new row's id.
  int64_t insert_into(SQLite::Database& db, const char* table) const {
    std::string names, params;
    for (const auto& [column, value] : values_) {
      names += names.empty() ? "" : ", ";
      params += params.empty() ? "?" : ", ?";
      names += column;
    }
    SQLite::Statement insert(db,
                             fmt::format("INSERT INTO {} ({}) VALUES ({})", table, names, params));
    for (size_t i = 0; i < values_.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      std::visit(
          [&](const auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) {
              insert.bind(index);  // NULL
            } else {
              insert.bind(index, v);
            }
          },
          values_[i].second);
    }
    insert.exec();
    return db.getLastInsertRowid();
  }

 private:
  using Value = std::variant<std::monostate, int64_t, double, std::string>;
  Row& add(std::string column, Value value) {
    values_.emplace_back(std::move(column), std::move(value));
    return *this;
  }
  std::vector<std::pair<std::string, Value>> values_;
};

double real_or_nan(const SQLite::Column& c);
std::string strings_json(const std::vector<std::string>& xs);
// Environments are shared between records when identical; returns the row id.
int64_t save_environment(SQLite::Database& db, const platform::Environment& env);
// One row per sample (run_id, phase, idx, seconds) of `table`: a run's warm-up and measured
// steps ("samples"), a generative run's prefill and decode calls ("generation_samples").
void save_samples(SQLite::Database& db, int64_t run_id, const char* phase,
                  const std::vector<double>& seconds, const char* table = "samples");
run::RunStatus status_from_name(const std::string& name);

// What a pass of the profilers (profiles, memory_profiles) is, and where it ran: the columns
// those tables start with (group, time, workload, mode, batch, threads, device, tag, command,
// status, message, config, environment). The caller adds its own columns.
struct PassRecord {
  const std::string& group;
  const std::string& started_at;
  const std::string& command;
  run::RunStatus status;
  const std::string& message;
};
Row pass_row(const PassRecord& pass, const run::RunOptions& options, const std::string& tag,
             int64_t environment_id);

// The columns of what every record says was executed and where (StoredRecord; the inverse of
// read_record_columns): workload, mode, batch, threads, device, precision, memory format,
// engine, heap, tag, resolved config and environment.
Row& write_record_columns(Row& row, const run::RunOptions& options, const std::string& tag,
                          int64_t environment_id);

// Inserts one run with its samples and environment, without a transaction of its own (the
// caller holds one); returns its id.
int64_t insert_run(SQLite::Database& db, const run::RunOptions& options,
                   const run::RunResult& result, const platform::Environment& environment,
                   const std::string& tag);

// The same for one profiling pass and its operator rows.
int64_t insert_profile(SQLite::Database& db, const run::RunOptions& options,
                       const profile::ProfileResult& result,
                       const platform::Environment& environment, const std::string& group,
                       const std::string& tag);

// The same for one memory-profiling pass.
int64_t insert_memory_profile(SQLite::Database& db, const run::RunOptions& options,
                              const profile::MemoryProfileResult& result,
                              const platform::Environment& environment, const std::string& group,
                              const std::string& tag);

// The JSON fields of what every record says was executed and where, in the documented order
// (docs/json.md): workload, mode, batch, threads, device, dtype, memory_format, engine, heap,
// tag.
void add_record_json(nlohmann::ordered_json& j, const StoredRecord& record);

// One column of a record type R bound to the member holding it, so that a table's columns are
// listed once for both its INSERT and its reads: text; integers (int or int64_t); reals (NaN
// stored as NULL and read back as NaN); booleans as 0/1.
template <class R>
struct ColumnOf {
  const char* name;
  std::variant<std::string R::*, int64_t R::*, int R::*, double R::*, bool R::*> member;
};

template <class R>
Row& write_columns(Row& row, const R& record, const std::vector<ColumnOf<R>>& columns) {
  for (const auto& column : columns)
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(record.*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            row.text(column.name, record.*member);
          } else if constexpr (std::is_same_v<T, bool>) {
            row.boolean(column.name, record.*member);
          } else if constexpr (std::is_same_v<T, double>) {
            row.real(column.name, record.*member);
          } else {
            row.integer(column.name, static_cast<int64_t>(record.*member));
          }
        },
        column.member);
  return row;
}

template <class R>
void read_columns(const SQLite::Statement& st, R& record, const std::vector<ColumnOf<R>>& columns) {
  for (const auto& column : columns)
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(record.*member)>;
          const SQLite::Column value = st.getColumn(column.name);
          if constexpr (std::is_same_v<T, std::string>) {
            record.*member = value.getString();
          } else if constexpr (std::is_same_v<T, bool>) {
            record.*member = value.getInt() != 0;
          } else if constexpr (std::is_same_v<T, double>) {
            record.*member = real_or_nan(value);
          } else {
            record.*member = static_cast<T>(value.getInt64());
          }
        },
        column.member);
}

// "SELECT <alias>.*, e.json AS env_json FROM <table> <alias> JOIN environments e ON e.id =
// <alias>.environment_id": a record table's rows with their environment (read back with
// joined_environment); the caller adds WHERE and ORDER BY.
std::string select_with_environment(const char* table, const char* alias);

// The environment of a row of that join (its env_json column).
platform::Environment joined_environment(const SQLite::Statement& st);

// The tables that keep a record as its own columns, its environment and one JSON document
// (probes, dist_worlds, serve_sessions, tune_sessions) write and read a row the same way.
// Inserts one: the columns already in `row`, the record's `columns`, its environment (shared
// when identical) and `document`; returns the row's id. The caller holds the transaction.
template <class R>
int64_t insert_documented_row(SQLite::Database& db, const char* table, Row& row, const R& record,
                              const std::vector<ColumnOf<R>>& columns,
                              const std::string& document) {
  const int64_t environment_id = save_environment(db, record.environment);
  return write_columns(row, record, columns)
      .integer("environment_id", environment_id)
      .text("json", document)
      .insert_into(db, table);
}

// One row of such a table read with select_with_environment: its id, `columns` and
// environment; the caller reads the document (column json).
template <class R>
R read_documented_row(const SQLite::Statement& st, const std::vector<ColumnOf<R>>& columns) {
  R record;
  record.id = st.getColumn("id").getInt64();
  read_columns(st, record, columns);
  record.environment = joined_environment(st);
  return record;
}

// Whether a query's result has `column` (a file of an older schema read without upgrading
// lacks the columns later versions added).
bool has_result_column(const SQLite::Statement& st, const char* column);

// Reads the columns every record table shares (id, workload, mode, batch, threads, device,
// tag, config_json) and the joined environment JSON (column env_json).
void read_record_columns(const SQLite::Statement& st, store::StoredRecord& record);

// Throws for a failed write of `what` ("run of resnet50"): SaveError for conditions the user
// can fix (locked, read-only, disk full), std::runtime_error for anything else (a plumb bug).
// `measured`, when given, is the measurement's summary: the message carries it, so what was
// measured reaches stderr instead of being lost with the write.
[[noreturn]] void rethrow_save_error(const SQLite::Exception& e, const std::string& what,
                                     const std::string& path, const std::string& measured = "");

// A stored dtype name parsed back to the table's enum (core/dtype.h); a name not in the table
// throws an SQLite::Exception (SQLITE_MISMATCH) that guarded_read reports as a damaged file.
Dtype stored_dtype(const std::string& name);

// Rethrows what reading the store raised (an SQLite error, a malformed JSON column or one of the
// wrong type) as one UsageError naming the file and the `what` being read: a damaged or
// foreign file, or one held locked beyond the busy timeout. Never a raw library message.
[[noreturn]] void rethrow_read_error(const std::exception& e, const std::string& what,
                                     const std::string& path);

// Runs `read` (a load from the store at `path`) and turns what SQLite and the JSON parser raise
// into that UsageError. Anything else (a plumb bug) propagates as it is.
template <class Read>
auto guarded_read(const std::string& path, const std::string& what, Read&& read)
    -> decltype(read()) {
  try {
    return read();
  } catch (const SQLite::Exception& e) {
    rethrow_read_error(e, what, path);
  } catch (const nlohmann::json::exception& e) {
    rethrow_read_error(e, what, path);
  }
}

// A run's figures in one line, for the error of a write that lost it: throughput, median
// step, steps and the reproducer (or its status and message when it did not succeed).
std::string measured_run(const run::RunResult& result);

// "the disk holding '<dir>' is full (N bytes free)" when the file system of `path` has (almost)
// no space left for SQLite to write to (below 1 MiB), "" otherwise. SQLite reports a full
// disk as SQLITE_FULL only when the write itself fails; creating its side files there fails
// as a plain "disk I/O error", so the space is looked at directly.
std::string full_disk_note(const std::string& path);

}  // namespace plumb::store::detail
