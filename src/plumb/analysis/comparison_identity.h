// A stored run's identity, printed by the one identity printer (run/setting_identity.h) from the
// record's columns: plumb compare matches runs on it and the report keeps the newest run of
// each. A record keeps no keep_fp32, embedding_bits or seed column: those stay at their defaults
// here (the stored command line carries them).
#pragma once

#include <string>

#include "plumb/run/setting_identity.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::analysis {

// The record's setting: plumb run's fields from its mode, batch, threads, device, precision,
// memory format, engine, heap and every config entry.
run::Setting stored_setting(const store::StoredRecord& record);

// print_setting(stored_setting(record), kCanonical).
std::string stored_key(const store::StoredRecord& record);

}  // namespace plumb::analysis
