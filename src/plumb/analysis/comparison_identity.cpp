// A stored run's identity (see comparison_identity.h).
#include "plumb/analysis/comparison_identity.h"

#include <algorithm>
#include <set>

#include "plumb/core/json_text.h"

namespace plumb::analysis {

run::Setting stored_setting(const store::StoredRecord& r) {
  run::RunIdentity id;
  id.mode = r.mode;
  id.batch = r.batch;
  id.threads = r.threads;
  id.device = r.device;
  // Precision is a run setting; records from before schema v7 kept it as a config key.
  id.dtype = dtype_name(r.dtype);  // the column wins over such a config key (below)
  id.memory_format = r.memory_format;
  id.engine = r.engine;
  id.heap = r.heap;
  for (const auto& item : r.config.items()) {
    if (item.key() == "batch") continue;  // the record's own column
    const auto& v = item.value();
    id.config.push_back({item.key(), v.is_string() ? v.get<std::string>() : json_text(v), false});
  }
  run::Setting s = run::run_setting("plumb run", r.workload, id);
  // A config key named like a run field (an old record's "dtype") gives way to the column.
  std::set<std::string> seen;
  s.fields.erase(std::remove_if(s.fields.begin(), s.fields.end(),
                                [&](const run::SettingField& f) {
                                  return f.in_key && !seen.insert(f.name).second;
                                }),
                 s.fields.end());
  return s;
}

std::string stored_key(const store::StoredRecord& r) {
  return run::print_setting(stored_setting(r), run::SettingPrint::kCanonical);
}

}  // namespace plumb::analysis
