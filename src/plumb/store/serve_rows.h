// Store internals shared by the one-shot (serve_store.cpp) and token-level
// (serve_token_store.cpp) saves of plumb serve: a session's serve_sessions row and its
// serve_measurements rows, written from one list of columns. Not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include "plumb/store/serve_records.h"

namespace SQLite {
class Database;
}

namespace plumb::store::detail {

struct InsertedServeSession {
  int64_t id = 0;
  std::vector<int64_t> measurement_ids;  // in the order of session.measurements
};

// Inserts `session` (its environment shared when identical) and its measurements, every column
// of schema v16; the caller holds the transaction and sets the ids once it commits, so that a
// save that fails leaves the session as it was.
InsertedServeSession insert_serve_session(SQLite::Database& db, const StoredServeSession& session);

}  // namespace plumb::store::detail
