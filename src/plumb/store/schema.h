// What a plumb results database is (schema v1) and how open() decides whether an existing
// file may be used: internal to store/, not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/core/errors.h"

namespace SQLite {
class Database;
}

namespace plumb::store::detail {

// How long a connection waits for another plumb process's write before giving up: a save
// holds the lock for milliseconds, so waiting long only matters when something is stuck.
inline constexpr int kBusyTimeoutMs = 10000;

// The identifying header fields and whether the file holds any schema object at all.
struct DbIdentity {
  int32_t application_id = 0;
  int user_version = 0;
  int64_t schema_objects = 0;  // rows of sqlite_master (tables, indexes, triggers, views)
};

enum class DbKind {
  kEmpty,  // no schema yet (0-byte file or a blank SQLite database): may be initialised
  kPlumb,  // a plumb database of the current schema version
  kOlder,  // a plumb database of an older schema version: readable, upgraded when written
};

// "file:/abs/path?immutable=1" (open with SQLite::OPEN_URI): read without locks or side
// files. Only safe while nothing writes the file.
std::string immutable_uri(const std::string& path);
// Whether '-wal', '-shm' or '-journal' files sit next to `path`: some connection is using it
// (or one ended uncleanly), so it must be read through SQLite's normal locking.
bool has_side_files(const std::string& path);

DbIdentity read_identity(SQLite::Database& db);

// Classifies a database from its identity; throws UsageError (naming `path`) for a foreign
// database, a newer schema, or a plumb id without a usable schema.
DbKind classify(const DbIdentity& identity, const std::string& path);

// Inspects an existing regular file without writing to it: the SQLite magic header, then
// the identity read through a read-only connection. Throws UsageError when the file is not
// an SQLite database or is refused by classify().
DbKind probe_existing_file(const std::string& path);

// The directory holding `path` ("." for a bare file name).
std::string directory_of(const std::string& path);

// The refusal for a read-only open of a file that holds no plumb schema yet.
UsageError no_results_yet(const std::string& path);

// Everything open() checks before SQLite opens the file for real; nothing is written. Returns
// nullopt when the file does not exist and may be created, else what the probe found. Throws
// UsageError (one line naming the path and what to do) for a missing file when read_only, a
// missing or unwritable directory, an unwritable file when !read_only, a directory or special
// file, and every refusal of probe_existing_file().
std::optional<DbKind> check_path(const std::string& path, bool read_only);

// Creates all tables and stamps application_id and user_version. The caller runs this
// inside its transaction, so a database is either fully initialised or left as it was.
void create_schema(SQLite::Database& db);

// Upgrades a plumb database of schema version `from` to kSchemaVersion; the caller runs it
// inside its (IMMEDIATE) transaction.
void migrate_schema(SQLite::Database& db, int from);

// What a record of schema 11 or older did on purpose, from where those plumbs left it: the
// delay the testing aid added to every step of a run (its warning; 0 when none) and whether a
// memory pass ran with --rss-check (its command line; such a pass returned freed memory, the
// heap policy return, though schema 11 stored it as keep). For the upgrade, and for reading
// such a file without upgrading it.
double legacy_injected_delay_ms(const std::vector<std::string>& warnings);
bool legacy_rss_check(const std::string& command);

// Whether `table` exists (an older database read without upgrading may lack it).
bool has_table(SQLite::Database& db, const std::string& table);

// Whether `table` has `column` (a database read without upgrading may lack a later column).
bool has_column(SQLite::Database& db, const std::string& table, const std::string& column);

}  // namespace plumb::store::detail
