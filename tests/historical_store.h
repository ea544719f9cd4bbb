// The results stores older plumbs wrote, for the upgrade tests: the schema of each older version
// as tests/store_schemas/ holds it (derived from the repository's history by
// derive_from_history.py), put back together and filled with rows of a store of today's plumb.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>

namespace plumb::testing {

// What a fixture statement creates or sets ("CREATE TABLE runs", "PRAGMA user_version"); empty
// for an ALTER.
inline std::string schema_object_of(const std::string& statement) {
  static const std::regex object(R"(^(CREATE (TABLE|INDEX)) (IF NOT EXISTS )?(\w+)|^(PRAGMA \w+))");
  std::smatch m;
  if (!std::regex_search(statement, m, object)) return "";
  return m[5].matched ? m[5].str() : m[1].str() + " " + m[4].str();
}

// The statements with which the plumb of an older schema created a new store: "v5" and so on,
// derived from the repository's history. tests/store_schemas/v1.sql holds all of v1's; a later
// <name>.sql holds what its version changed against the file named in its first line: a CREATE
// of an object the earlier one creates takes that statement's place, another statement comes
// before the closing PRAGMAs, a PRAGMA replaces the one that sets the same (or, new, comes
// last). As compose() in tests/store_schemas/derive_from_history.py; empty without the file.
inline std::vector<std::string> historical_statements(const std::string& name) {
  std::ifstream in(std::filesystem::path(__FILE__).parent_path() / "store_schemas" /
                   (name + ".sql"));
  std::vector<std::string> out;
  std::string header, line, sql;
  if (!std::getline(in, header)) return out;
  static const std::regex base(R"(as changes to (\S+)\.sql)");
  std::smatch m;
  if (std::regex_search(header, m, base)) out = historical_statements(m[1].str());
  while (std::getline(in, line))
    if (line.rfind("--", 0) != 0) sql += line + "\n";
  for (size_t start = 0, end; start < sql.size(); start = end + 2) {
    end = std::min(sql.find(";\n", start), sql.size());
    const std::string statement = sql.substr(start, end - start);
    const std::string object = schema_object_of(statement);
    auto same = std::find_if(out.begin(), out.end(), [&](const std::string& s) {
      return !object.empty() && schema_object_of(s) == object;
    });
    if (same != out.end()) {
      *same = statement;
      continue;
    }
    auto pragmas = std::find_if(out.begin(), out.end(),
                                [](const std::string& s) { return s.rfind("PRAGMA", 0) == 0; });
    out.insert(statement.rfind("PRAGMA", 0) == 0 ? out.end() : pragmas, statement);
  }
  return out;
}

inline std::string historical_schema(const std::string& name) {
  std::string sql;
  for (const std::string& statement : historical_statements(name)) sql += statement + ";\n";
  return sql;
}

// A store at `db` as the plumb of schema `name` wrote it: that schema, in WAL mode, holding the
// rows of `rows_from` (a store written by today's plumb) in every column the old schema had. How
// the upgrade tests make the files of older versions.
inline std::string old_store(const std::string& db, const std::string& name,
                             const std::string& rows_from = "") {
  const std::string sql = historical_schema(name);
  if (sql.empty()) throw std::runtime_error("no tests/store_schemas/" + name + ".sql");
  SQLite::Database old(db, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  old.exec(sql);
  if (!rows_from.empty()) {
    SQLite::Statement attach(old, "ATTACH DATABASE ? AS today");
    attach.bind(1, rows_from);
    attach.exec();
    std::vector<std::string> tables;
    SQLite::Statement list(old,
                           "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT "
                           "LIKE 'sqlite_%' ORDER BY name");
    while (list.executeStep()) tables.push_back(list.getColumn(0).getString());
    for (const std::string& table : tables) {
      SQLite::Statement shared(old,
                               "SELECT group_concat('\"' || name || '\"', ', ') FROM "
                               "pragma_table_info(?1, 'main') WHERE name IN (SELECT name FROM "
                               "pragma_table_info(?1, 'today'))");
      shared.bind(1, table);
      shared.executeStep();
      const std::string columns = shared.getColumn(0).getString();
      old.exec("INSERT INTO main.\"" + table + "\" (" + columns + ") SELECT " + columns +
               " FROM today.\"" + table + "\"");
    }
    old.exec("DETACH DATABASE today");
  }
  old.exec("PRAGMA journal_mode = WAL");  // as every plumb left its files
  return db;
}

}  // namespace plumb::testing
