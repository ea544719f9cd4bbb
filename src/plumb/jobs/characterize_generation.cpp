// What a characterize pass stored about a generative workload (see characterize_generation.h).
#include "plumb/jobs/characterize_generation.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "plumb/analysis/comparison_identity.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"

namespace plumb::jobs {
namespace {

// The settings that tell a decode roofline run's size apart: its preset, and its layers when
// set (the tiny sizes vary only those).
std::string characterize_decode_size(const store::StoredRun& r) {
  std::vector<std::string> parts;
  if (r.config.contains("preset") && r.config.at("preset").is_string())
    parts.push_back("preset=" + r.config.at("preset").get<std::string>());
  if (r.config.contains("layers") && r.config.at("layers").is_number_integer() &&
      r.config.at("layers").get<int64_t>() > 0)
    parts.push_back(fmt::format("layers={}", r.config.at("layers").get<int64_t>()));
  return join(parts, ",");
}

// The fit's bandwidth over the DRAM triad ceiling of the newest probe of the runs' machine at
// their thread count; 0 without one.
double characterize_triad_fraction(const store::StoredRun& run, double bytes_per_s,
                                   const store::ResultsStore& db) {
  const auto probe =
      db.latest_probe(platform::machine_key(run.environment), /*thorough_only=*/false);
  if (!probe || !std::isfinite(bytes_per_s)) return 0;
  try {
    const auto dram = analysis::level_bandwidths(probe->document, "dram", run.threads);
    return dram.triad > 0 ? bytes_per_s / dram.triad : 0;
  } catch (const UsageError&) {
    return 0;  // the probe measured no DRAM level
  }
}

}  // namespace

std::vector<CharacterizePhase> characterize_phases(const store::StoredProfile& profile,
                                                   const std::vector<store::StoredProbe>& probes) {
  std::vector<CharacterizePhase> out;
  const auto& step = profile.result.profile;
  if (profile.result.status != run::RunStatus::kOk || !analysis::has_phases(step)) return out;
  const auto ceilings = analysis::profile_ceilings(profile, probes);
  for (const auto& t : analysis::phase_times(step))
    out.push_back({t, analysis::bound_finding(analysis::phase_profile(step, t.phase),
                                              ceilings ? &*ceilings : nullptr)});
  return out;
}

std::optional<CharacterizeKvCache> characterize_kv_cache(const store::StoredMemoryProfile& m) {
  const auto& b = m.result.breakdown;
  if (m.result.status != run::RunStatus::kOk || !b.generation) return std::nullopt;
  const auto kv = static_cast<size_t>(profile::MemoryCategory::kKvCache);
  CharacterizeKvCache c;
  c.memory_id = m.id;
  c.bytes = b.peak[kv];
  c.bytes_per_token = profile::kv_cache_bytes_per_token(b);
  c.share_of_peak = b.total_peak > 0 ? static_cast<double>(b.at_total_peak[kv]) /
                                           static_cast<double>(b.total_peak)
                                     : 0;
  return c;
}

std::optional<CharacterizeDecode> characterize_decode(const store::ResultsStore& db,
                                                      const std::vector<store::StoredRun>& runs,
                                                      const std::string& workload,
                                                      const std::string& decode_tag) {
  // The newest run that ran per setting: a sweep resumed after a failure has both.
  std::map<std::string, const store::StoredRun*> newest;
  std::map<std::string, analysis::DecodeTokenCount> counts;
  for (const auto& r : runs) {
    if (r.workload != workload || r.tag != decode_tag || r.batch != 1) continue;
    const auto count = analysis::stored_decode_count(r);
    if (!count || !(r.result.generation->tpot.mean > 0)) continue;
    const std::string key = analysis::stored_key(r);
    if (newest.count(key) == 0 || newest[key]->id < r.id) {
      newest[key] = &r;
      counts[key] = *count;
    }
  }
  if (newest.empty()) return std::nullopt;
  CharacterizeDecode d;
  for (const auto& [key, r] : newest)
    d.points.push_back({characterize_decode_size(*r), r->id, counts[key].bytes(),
                        r->result.generation->tpot.mean,
                        r->result.generation->decode_tokens_per_s});
  std::sort(d.points.begin(), d.points.end(),
            [](const CharacterizeDecodePoint& a, const CharacterizeDecodePoint& b) {
              return a.bytes_per_token < b.bytes_per_token;
            });
  if (d.points.size() >= 3) {
    std::vector<double> bytes, tpot;
    for (const auto& p : d.points) {
      bytes.push_back(p.bytes_per_token);
      tpot.push_back(p.tpot_s);
    }
    d.fit = analysis::fit_decode_roof(bytes, tpot);
    d.triad_fraction = characterize_triad_fraction(*newest.begin()->second, d.fit->bytes_per_s, db);
  }
  return d;
}

}  // namespace plumb::jobs
