// What a characterize pass stored that explains a generative workload, read back from the store
// (docs/characterize.md, docs/llm.md): each phase of its profiled inference step (prefill,
// decode) with its time and what bounds it, the KV cache of its inference memory pass, and its
// decode roofline (the runs of the pass's decode item at batch 1 over three sizes: bytes per
// token, tokens/s, and TPOT = a + bytes / BW fitted over them, BW against the probe's DRAM
// triad ceiling).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/decode_roofline.h"
#include "plumb/analysis/phase_profile.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {

struct CharacterizePhase {
  analysis::PhaseTime time;
  analysis::BoundFinding bound;  // of the phase's own operators, on the machine's roofs
};

// The phases of a profiled generation step, in order; empty for a step without phases.
std::vector<CharacterizePhase> characterize_phases(const store::StoredProfile& profile,
                                                   const std::vector<store::StoredProbe>& probes);

// The KV cache an inference memory pass saw.
struct CharacterizeKvCache {
  int64_t memory_id = 0;
  int64_t bytes = 0;           // at the step's peak
  double bytes_per_token = 0;  // per position of context
  double share_of_peak = 0;    // of the step's memory peak
};
std::optional<CharacterizeKvCache> characterize_kv_cache(const store::StoredMemoryProfile& m);

struct CharacterizeDecodePoint {
  std::string size;  // "preset=medium", "layers=2"
  int64_t run_id = 0;
  double bytes_per_token = 0, tpot_s = 0, tokens_per_s = 0;
};

struct CharacterizeDecode {
  std::vector<CharacterizeDecodePoint> points;  // the newest ok run per size, fewest bytes first
  std::optional<analysis::DecodeRoofFit> fit;   // three points or more
  double triad_fraction = 0;  // fit BW over the probe's DRAM triad; 0 without a probe
};

// From `runs` (db's) of `workload` stored under `decode_tag`, set against the newest probe of
// their machine in `db`; nullopt when none ran.
std::optional<CharacterizeDecode> characterize_decode(const store::ResultsStore& db,
                                                      const std::vector<store::StoredRun>& runs,
                                                      const std::string& workload,
                                                      const std::string& decode_tag);

}  // namespace plumb::jobs
