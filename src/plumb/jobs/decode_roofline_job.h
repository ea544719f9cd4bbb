// plumb analyze decode as a job: a generative workload's decode measured on the memory roof
// (docs/llm.md "Decode on the memory roof"). Each setting is an ordinary plumb run in
// inference (run_and_store, under the job's tag; a stored run of exactly the same setting and
// tag is taken instead when asked), and the probe's ceilings come from stored_or_fresh_probe.
// Three sweeps:
//   sizes:    batch 1 over at least three model sizes: decode tokens/s and bytes per token,
//             TPOT = a + bytes / BW fitted, BW against the probe's DRAM read and triad.
//   batches:  one size over batches: tokens/s, intensity by the counts, the batch where the
//             intensity crosses the probe's ridge, and the measured knee.
//   contexts: one size at batch 1 over prompt lengths: tokens/s as the KV cache grows, and the
//             share of a token's bytes that is KV cache.
// Reporters: decode_roofline_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/decode_roofline.h"
#include "plumb/core/workload.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/run/runner.h"

namespace plumb::jobs {

enum class DecodeSweep { kSizes, kBatches, kContexts };
const char* decode_sweep_name(DecodeSweep sweep);  // "sizes", "batches", "contexts"

struct DecodeRooflineOptions {
  const Workload* workload = nullptr;
  // The setting every point starts from: inference, one dtype, the --set overrides resolved
  // (sizes and contexts run it at batch 1). Validated again per point.
  run::RunOptions base;
  DecodeSweep sweep = DecodeSweep::kSizes;
  // Each size: key=value settings applied over the base config ({"preset=medium"}). Sizes: at
  // least three; batches and contexts: at most one (applied to every point).
  std::vector<std::vector<std::string>> sizes;
  std::vector<int64_t> batches;   // the batch sweep's batches, increasing
  std::vector<int64_t> contexts;  // the context sweep's prompt lengths, increasing
  int64_t prompt = 32;            // prompt tokens per request (sizes, batches)
  int64_t gen = 16;               // output tokens per request (all sweeps)
  bool reuse_stored = false;      // take a stored run of the same setting and tag
  std::string db;
  std::string tag = "decode";
  ProbeRequest probe;
};

// The sizes a sweep takes when none are given: the first three of the workload's presets
// (gpt2: small, medium, large); empty when its config has no preset key.
std::vector<std::vector<std::string>> default_decode_sizes(const Workload& workload);

// The sizes the command line names: `sizes` "KEY=V1,V2,V3" (one key over several values:
// preset=small,medium,large) and each `size` "K=V,K=V" (one size that sets several keys:
// layers=2,d_model=32), in that order. Throws UsageError for an item without key=value or an
// empty value.
std::vector<std::vector<std::string>> parse_decode_sizes(const std::string& sizes,
                                                         const std::vector<std::string>& size);

// One setting measured (or taken from the store) and counted.
struct DecodePoint {
  std::string label;  // "preset=medium", "batch 8", "context 1024"
  int64_t run_id = 0;
  bool reused = false;
  std::string status = "ok";  // the run's status name; a failed point has no rate
  std::string message;
  std::string command;  // the run's reproducer
  int64_t batch = 0, prompt = 0, gen = 0;
  double parameters = 0;
  analysis::DecodeTokenCount count;
  double tpot_s = 0;                // mean time per output token (per decode call)
  double tpot_ci_half_width_s = 0;  // its 95% CI half-width
  double decode_tokens_per_s = 0;   // batch / mean TPOT
  // bytes per token x tokens/s: the bandwidth this point alone would imply with no overhead.
  double bytes_per_s = 0;
  double kv_cache_bytes = 0;  // the cache the run allocated
  bool ok() const { return status == "ok"; }
};

// The probe's ceilings the figures are set against, at the run's threads and dtype.
struct DecodeCeilings {
  int64_t probe_id = 0;
  bool reused = false;  // the probe was stored before
  int threads = 0;      // of the bandwidth row used
  double dram_read_bytes_per_s = 0;
  double dram_triad_bytes_per_s = 0;
  double peak_flops = 0;  // the dtype's instruction peak
  std::string peak_source;
  double ridge = 0;  // peak_flops / DRAM triad: FLOP per byte
};

struct DecodeRooflineResult {
  std::string workload;
  DecodeSweep sweep = DecodeSweep::kSizes;
  std::string dtype;
  double weight_element_bytes = 0;
  int threads = 0;
  std::string db_path;
  std::vector<DecodePoint> points;  // in sweep order
  DecodeCeilings ceilings;
  // Sizes: the fit over the points that ran (absent with fewer than three), and its BW as a
  // fraction of the DRAM read and triad ceilings.
  std::optional<analysis::DecodeRoofFit> fit;
  double fit_read_fraction = 0, fit_triad_fraction = 0;
  // Batches: where the counts cross the ridge (real-valued; +inf: never), the first swept batch
  // at or past it (0: none), and the measured knee (absent when none or too few points ran).
  double ridge_batch = 0;
  int64_t first_batch_past_ridge = 0;
  std::optional<analysis::BatchKnee> knee;
  std::vector<std::string> notes;
  bool all_ok = true;
};

// Validates everything before anything is measured or stored: fewer than three sizes, a
// workload without a decode (no transformer dimensions or an encoder), an int8 or fp64 dtype,
// a prompt plus gen beyond the model's context, or a setting that cannot fit in memory (the
// runner's refusal with the bytes) throw UsageError. `progress` gets each run's lines.
DecodeRooflineResult run_decode_roofline(const DecodeRooflineOptions& options,
                                         const run::ProgressFn& progress);

// The same checks alone, measuring and storing nothing (plumb characterize checks its decode
// item with every other item before the first one runs).
void check_decode_roofline(const DecodeRooflineOptions& options);

}  // namespace plumb::jobs
