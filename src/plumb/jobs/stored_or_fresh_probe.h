// Where a command gets this machine's ceilings: the newest stored probe of the same machine
// (platform::machine_key), or a fresh one, measured and stored, when there is none, it is
// too coarse for the request (quick when thorough is asked for, fewer threads), or --refresh
// says so. Measuring is the slow part, so every command that needs the roofs (probe, roofline,
// analyze fusion, sweep, tune) shares this. It reports a fresh probe on stderr itself.
#pragma once

#include "plumb/store/probe_record.h"
#include "plumb/store/results_store.h"

namespace plumb::jobs {

struct ProbeRequest {
  bool thorough = false;
  bool refresh = false;
  int max_threads = 0;  // 0: every CPU this process may use
};

struct ProbeChoice {
  store::StoredProbe probe;
  bool reused = false;
};

ProbeChoice current_probe(store::ResultsStore& db, const ProbeRequest& request);

}  // namespace plumb::jobs
