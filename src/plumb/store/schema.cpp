// The checks the results store's open() runs before touching a file: that its directory and file
// can be written, and that it is a plumb database rather than a blank file, a foreign database or
// one written by a newer plumb; and what an open database holds (see schema.h). The schema itself
// and its upgrades: schema_sql.h, schema_upgrades.cpp.
#include "plumb/store/schema.h"

#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <sqlite3.h>

#include "plumb/core/errors.h"
#include "plumb/store/results_store.h"

namespace plumb::store::detail {

namespace fs = std::filesystem;

namespace {

// Every SQLite 3 file starts with these 16 bytes. Checked before SQLite sees the file, so a
// file that is plainly something else is refused with a clear message without being handed
// to SQLite at all (which would only report SQLITE_NOTADB on first read).
constexpr std::array<char, 16> kSqliteMagic = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                               'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

// Refuses, before SQLite opens anything for writing, a path whose file or directory cannot
// be written: otherwise the failure would surface only when the first run is saved, after
// minutes of benchmarking. The directory matters too: WAL keeps '-wal' and '-shm' files next
// to the database.
void require_writable(const std::string& path, bool file_exists) {
  const std::string dir = directory_of(path);
  if (file_exists && ::access(path.c_str(), W_OK) != 0)
    throw UsageError(fmt::format(
        "cannot write results database '{}': {}; fix its permissions or pass another --db", path,
        std::strerror(errno)));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(fmt::format(
        "cannot write in directory '{}' (for results database '{}'): {}; fix its permissions "
        "or pass another --db",
        dir, path, std::strerror(errno)));
}

bool has_sqlite_magic(const std::string& path, bool* readable) {
  std::ifstream in(path, std::ios::binary);
  *readable = static_cast<bool>(in);
  if (!in) return false;
  std::array<char, 16> head{};
  in.read(head.data(), head.size());
  return in.gcount() == static_cast<std::streamsize>(head.size()) && head == kSqliteMagic;
}

}  // namespace

// "file:/abs/path?immutable=1", percent-encoding what a URI path may not hold literally.
std::string immutable_uri(const std::string& path) {
  const std::string abs = std::filesystem::absolute(path).string();
  std::string uri = "file:";
  for (unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?immutable=1";
}

bool has_side_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (std::filesystem::exists(path + suffix, ec)) return true;
  return false;
}

DbIdentity read_identity(SQLite::Database& db) {
  DbIdentity id;
  id.application_id = db.execAndGet("PRAGMA application_id").getInt();
  id.user_version = db.execAndGet("PRAGMA user_version").getInt();
  id.schema_objects = db.execAndGet("SELECT count(*) FROM sqlite_master").getInt64();
  return id;
}

DbKind classify(const DbIdentity& identity, const std::string& path) {
  if (identity.application_id == kApplicationId) {
    if (identity.user_version > kSchemaVersion)
      throw UsageError(fmt::format(
          "results database '{}' was created by a newer plumb (schema version {}, this build "
          "reads up to {}); upgrade plumb or use another --db",
          path, identity.user_version, kSchemaVersion));
    if (identity.user_version == kSchemaVersion) return DbKind::kPlumb;
    if (identity.user_version >= 1 && identity.schema_objects > 0) return DbKind::kOlder;
    if (identity.schema_objects == 0) return DbKind::kEmpty;
    throw UsageError(fmt::format(
        "results database '{}' carries plumb's id but an unknown schema version {}; it was "
        "not written by a released plumb, so it is left untouched: use another --db",
        path, identity.user_version));
  }
  if (identity.application_id == 0 && identity.schema_objects == 0) return DbKind::kEmpty;
  throw UsageError(fmt::format(
      "'{}' is an SQLite database that does not belong to plumb (application_id {:#x}, {} "
      "schema objects); plumb leaves it untouched: pass another --db",
      path, static_cast<uint32_t>(identity.application_id), identity.schema_objects));
}

DbKind probe_existing_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  bool readable = false;
  const bool magic = has_sqlite_magic(path, &readable);
  if (!readable)
    throw UsageError(
        fmt::format("cannot read results database '{}': permission denied or unreadable; fix its "
                    "permissions or pass another --db",
                    path));
  // A 0-byte file may still hold a database in an uncheckpointed '-wal' file next to it, so
  // it is probed through SQLite like any other.
  if (!ec && size > 0 && !magic)
    throw UsageError(
        fmt::format("'{}' is not an SQLite database (not a plumb results store); plumb leaves it "
                    "untouched: pass another --db",
                    path));
  try {
    // Even a read-only connection to a WAL database creates '-wal' and '-shm' files, which a
    // refusal must not leave behind. With no side files present no other connection is
    // writing, so the file can be read as immutable (no locks, no side files). Otherwise
    // they exist already and a normal read-only connection sees what the WAL holds.
    SQLite::Database probe =
        has_side_files(path)
            ? SQLite::Database(path, SQLite::OPEN_READONLY, kBusyTimeoutMs)
            : SQLite::Database(immutable_uri(path), SQLite::OPEN_READONLY | SQLite::OPEN_URI);
    return classify(read_identity(probe), path);
  } catch (const SQLite::Exception& e) {
    const int code = e.getErrorCode();
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
      throw UsageError(fmt::format(
          "'{}' is not a valid SQLite database ({}); plumb leaves it untouched: pass another "
          "--db",
          path, e.what()));
    throw UsageError(fmt::format(
        "cannot read results database '{}': {}; check the file and its permissions or pass "
        "another --db",
        path, e.what()));
  }
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

UsageError no_results_yet(const std::string& path) {
  return UsageError(fmt::format(
      "'{}' holds no plumb results yet; run a benchmark first (plumb run ... --db {}) or pass "
      "the right --db",
      path, path));
}

// What is at `path` before anything is opened: nothing, or a file SQLite may be pointed at.
// Returns nullopt when the file does not exist (and may be created).
std::optional<DbKind> check_path(const std::string& path, bool read_only) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw UsageError(
        fmt::format("cannot access results database '{}': {}; check the path or pass another --db",
                    path, ec.message()));
  if (!fs::exists(st)) {
    if (read_only)
      throw UsageError(fmt::format(
          "no results database at '{}'; run a benchmark first (plumb run ... --db {}) or pass "
          "the right --db",
          path, path));
    const std::string dir = directory_of(path);
    if (!fs::exists(dir, ec))
      throw UsageError(fmt::format(
          "cannot create results database '{}': directory '{}' does not exist; create it "
          "(mkdir -p {}) or pass another --db",
          path, dir, dir));
    if (!fs::is_directory(dir, ec))
      throw UsageError(fmt::format(
          "cannot create results database '{}': '{}' is not a directory; pass another --db", path,
          dir));
    require_writable(path, false);
    return std::nullopt;
  }
  if (fs::is_directory(st))
    throw UsageError(fmt::format(
        "'{}' is a directory, not a results database; pass a file path such as {}/plumb.db "
        "with --db",
        path, path));
  if (!fs::is_regular_file(st))
    throw UsageError(fmt::format(
        "'{}' is not a regular file, so it cannot hold a results database; pass another --db",
        path));
  if (!read_only) require_writable(path, true);
  const DbKind kind = probe_existing_file(path);
  if (read_only && kind == DbKind::kEmpty) throw no_results_yet(path);
  return kind;
}

bool has_table(SQLite::Database& db, const std::string& table) {
  SQLite::Statement q(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.bind(1, table);
  q.executeStep();
  return q.getColumn(0).getInt() > 0;
}

bool has_column(SQLite::Database& db, const std::string& table, const std::string& column) {
  SQLite::Statement q(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
  q.bind(1, table);
  q.bind(2, column);
  q.executeStep();
  return q.getColumn(0).getInt() > 0;
}

}  // namespace plumb::store::detail
