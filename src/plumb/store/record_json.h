// Stored records as the JSON the commands print and `plumb export` writes (docs/json.md).
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/run_record.h"
#include "plumb/store/serve_records.h"

namespace plumb::store {

class ResultsStore;

// One run as the JSON object that `plumb run --json` prints and `plumb export` lists
// (fields documented in docs/json.md); samples and warm-up samples only when asked for.
nlohmann::ordered_json run_json(const StoredRun& run, bool with_samples);

// One serve session as `plumb serve --json` prints it (docs/json.md): the setting, the headline
// figures of its scenario (found rate, ceiling, floor), the batching and every measurement.
nlohmann::ordered_json serve_session_json(const StoredServeSession& session);

// One probe as `plumb probe --json` prints it and `plumb export` lists it: probe_id,
// machine_key, the probe document's fields (docs/json.md), and the environment.
nlohmann::ordered_json probe_json(const StoredProbe& probe);

// One memory-profiling pass as `plumb memory --json` prints it per batch and `plumb export`
// lists it (docs/json.md): the record, per-category peaks at the top level, total_peak, and
// the breakdown's details.
nlohmann::ordered_json memory_profile_json(const StoredMemoryProfile& memory);

// plumb export: the whole store as one JSON document (documented in docs/json.md).
void export_json(const ResultsStore& store, std::ostream& out);
// plumb export --format csv: "runs" (one row per run with summary + environment columns) or
// "samples" (run_id, phase, index, seconds).
void export_csv(const ResultsStore& store, const std::string& table, std::ostream& out);

}  // namespace plumb::store
