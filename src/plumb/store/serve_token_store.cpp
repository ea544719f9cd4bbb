// Persistence of token-level plumb serve sessions (schema v16): the session and its
// measurements as a one-shot session's (serve_rows.h), with every request (serve_requests) and
// engine iteration (serve_iterations) of each measurement, all in one transaction.
#include <algorithm>
#include <cmath>
#include <limits>

#include <SQLiteCpp/SQLiteCpp.h>

#include "plumb/core/errors.h"
#include "plumb/run/token_scheduler.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/schema.h"
#include "plumb/store/serve_records.h"
#include "plumb/store/serve_rows.h"

namespace plumb::store {

namespace {

// Undefined times (NaN: a request never admitted or finished) are stored as NULL.
void bind_time(SQLite::Statement& st, int index, double seconds) {
  if (std::isnan(seconds)) {
    st.bind(index);
  } else {
    st.bind(index, seconds);
  }
}

// The largest gap between a request's consecutive tokens; NaN for fewer than two tokens.
double largest_token_gap(const std::vector<double>& token_s) {
  double gap = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 1; i < token_s.size(); ++i) {
    const double d = token_s[i] - token_s[i - 1];
    gap = std::isnan(gap) ? d : std::max(gap, d);
  }
  return gap;
}

}  // namespace

void ResultsStore::save_token_serve_session(StoredServeSession& s,
                                            const std::vector<run::TokenServeTrace>& traces) {
  PLUMB_ASSERT(s.kind == "token", "a token-level serve session");
  PLUMB_ASSERT(traces.size() == s.measurements.size(), "one trace per measurement");
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const auto inserted = detail::insert_serve_session(*db_, s);
    // One statement each, bound and reset per row: a measurement holds thousands of requests
    // and more iterations.
    SQLite::Statement request(*db_,
                              "INSERT INTO serve_requests (measurement_id, arrival_s, admitted_s, "
                              "first_token_s, finish_s, prompt_tokens, output_tokens, max_itl_s) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    SQLite::Statement iteration(*db_,
                                "INSERT INTO serve_iterations (measurement_id, start_s, end_s, "
                                "decode_batch, prefill_tokens, running, waiting, "
                                "kv_reserved_bytes, kv_used_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, "
                                "?, ?)");
    for (size_t i = 0; i < traces.size(); ++i) {
      const int64_t measurement_id = inserted.measurement_ids[i];
      for (const auto& r : traces[i].requests) {
        request.bind(1, measurement_id);
        request.bind(2, r.arrival_s);
        bind_time(request, 3, r.admitted_s);
        bind_time(request, 4, r.first_token_s);
        bind_time(request, 5, r.finish_s);
        request.bind(6, r.prompt);
        request.bind(7, r.output);
        bind_time(request, 8, largest_token_gap(r.token_s));
        request.exec();
        request.reset();
      }
      for (const auto& it : traces[i].iterations) {
        iteration.bind(1, measurement_id);
        iteration.bind(2, it.start_s);
        iteration.bind(3, it.end_s);
        iteration.bind(4, it.decode_batch);
        iteration.bind(5, it.prefill_tokens);
        iteration.bind(6, it.running);
        iteration.bind(7, it.waiting);
        iteration.bind(8, it.kv_reserved_bytes);
        iteration.bind(9, it.kv_used_bytes);
        iteration.exec();
        iteration.reset();
      }
    }
    tx.commit();
    s.id = inserted.id;
    for (size_t i = 0; i < s.measurements.size(); ++i)
      s.measurements[i].id = inserted.measurement_ids[i];
  } catch (const SQLite::Exception& e) {
    detail::rethrow_save_error(e, "token serving measurement of " + s.workload, path_);
  }
}

std::vector<run::RequestTrace> ResultsStore::load_serve_requests(int64_t measurement_id) const {
  return detail::guarded_read(path_, "serve requests", [&]() -> std::vector<run::RequestTrace> {
    std::vector<run::RequestTrace> out;
    if (!detail::has_table(*db_, "serve_requests")) return out;
    SQLite::Statement q(*db_,
                        "SELECT arrival_s, admitted_s, first_token_s, finish_s, prompt_tokens, "
                        "output_tokens FROM serve_requests WHERE measurement_id = ? ORDER BY "
                        "rowid");
    q.bind(1, measurement_id);
    while (q.executeStep()) {
      run::RequestTrace r;
      r.arrival_s = q.getColumn(0).getDouble();
      r.admitted_s = detail::real_or_nan(q.getColumn(1));
      r.first_token_s = detail::real_or_nan(q.getColumn(2));
      r.finish_s = detail::real_or_nan(q.getColumn(3));
      r.prompt = q.getColumn(4).getInt64();
      r.output = q.getColumn(5).getInt64();
      out.push_back(std::move(r));
    }
    return out;
  });
}

std::vector<run::IterationRecord> ResultsStore::load_serve_iterations(
    int64_t measurement_id) const {
  return detail::guarded_read(
      path_, "serve iterations", [&]() -> std::vector<run::IterationRecord> {
        std::vector<run::IterationRecord> out;
        if (!detail::has_table(*db_, "serve_iterations")) return out;
        SQLite::Statement q(
            *db_,
            "SELECT start_s, end_s, decode_batch, prefill_tokens, running, waiting, "
            "kv_reserved_bytes, kv_used_bytes FROM serve_iterations WHERE "
            "measurement_id = ? ORDER BY rowid");
        q.bind(1, measurement_id);
        while (q.executeStep()) {
          run::IterationRecord it;
          it.start_s = q.getColumn(0).getDouble();
          it.end_s = q.getColumn(1).getDouble();
          it.decode_batch = q.getColumn(2).getInt();
          it.prefill_tokens = q.getColumn(3).getInt();
          it.running = q.getColumn(4).getInt();
          it.waiting = q.getColumn(5).getInt();
          it.kv_reserved_bytes = q.getColumn(6).getInt64();
          it.kv_used_bytes = q.getColumn(7).getInt64();
          out.push_back(it);
        }
        return out;
      });
}

}  // namespace plumb::store
