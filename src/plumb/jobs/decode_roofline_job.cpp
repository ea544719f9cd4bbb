// plumb analyze decode's job (see decode_roofline_job.h).
#include "plumb/jobs/decode_roofline_job.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "plumb/analysis/comparison_identity.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"
#include "plumb/core/errors.h"
#include "plumb/core/execution_settings.h"
#include "plumb/core/mode.h"
#include "plumb/core/precision.h"
#include "plumb/core/text.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/jobs/run_job.h"
#include "plumb/run/model_footprint.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {
namespace {

struct PlannedDecodeRun {
  std::string label;
  run::RunOptions options;
};

// The config key that holds the prompt length: gpt2 and llama call it prompt; ParaDnn's
// transformer generator calls it context ("inference: prompt tokens").
std::string prompt_key(const Workload& w, const Config& config) {
  if (config.has("prompt")) return "prompt";
  if (config.has("context")) return "context";
  throw UsageError(
      fmt::format("{} declares no prompt length (config key prompt or context)", w.info.name));
}

void set_value(Config& config, const std::string& key, int64_t value) {
  config.set_from_text(key, std::to_string(value));
}

void require_increasing(const std::vector<int64_t>& values, const char* flag, size_t at_least) {
  if (values.size() < at_least)
    throw UsageError(
        fmt::format("{} needs at least {} values, got {}", flag, at_least, values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 1) throw UsageError(fmt::format("{} values must be at least 1", flag));
    if (i > 0 && values[i] <= values[i - 1])
      throw UsageError(fmt::format("{} must be strictly increasing", flag));
  }
}

// The settings of every point, each validated and checked against the model's context and
// this machine's memory: bad input fails here, before the probe or any run is stored.
std::vector<PlannedDecodeRun> plan_decode_runs(const DecodeRooflineOptions& o) {
  const Workload& w = *o.workload;
  if (!generates_tokens(w, o.base.config))
    throw UsageError(fmt::format(
        "{} has no decode phase: analyze decode takes a generative transformer (gpt2, llama, "
        "paradnn_transformer)",
        w.info.name));
  const std::string prompt = prompt_key(w, o.base.config);
  std::vector<PlannedDecodeRun> plan;
  auto add = [&](std::string label, const std::vector<std::string>& size, int64_t batch,
                 int64_t prompt_tokens) {
    run::RunOptions options = o.base;
    options.config.apply_settings(size);
    set_value(options.config, "batch", batch);
    set_value(options.config, prompt, prompt_tokens);
    set_value(options.config, "gen", o.gen);
    plan.push_back({std::move(label), std::move(options)});
  };
  const std::vector<std::string> one_size =
      o.sizes.empty() ? std::vector<std::string>{} : o.sizes.front();
  switch (o.sweep) {
    case DecodeSweep::kSizes:
      if (o.sizes.size() < 3)
        throw UsageError(fmt::format(
            "the decode fit needs at least three sizes of one family, got {} (e.g. --sizes "
            "preset=small,medium,large)",
            o.sizes.size()));
      for (const auto& size : o.sizes) add(join(size, ","), size, 1, o.prompt);
      break;
    case DecodeSweep::kBatches:
      require_increasing(o.batches, "--batches", 2);
      for (int64_t b : o.batches) add(fmt::format("batch {}", b), one_size, b, o.prompt);
      break;
    case DecodeSweep::kContexts:
      require_increasing(o.contexts, "--contexts", 2);
      for (int64_t c : o.contexts) add(fmt::format("context {}", c), one_size, 1, c);
      break;
  }
  if (o.sweep != DecodeSweep::kSizes && o.sizes.size() > 1)
    throw UsageError("the batch and context sweeps take one size (--size), not several");
  if (o.gen < 2)
    throw UsageError(fmt::format(
        "--gen {} leaves no decode call (the first token is the prefill's): give at least 2",
        o.gen));
  for (const auto& p : plan) {
    run::validate_options(p.options);
    const TransformerShape shape = w.transformer_shape(p.options.config);
    const int64_t positions = p.options.config.get_int(prompt) + o.gen;
    if (shape.max_positions > 0 && positions > shape.max_positions)
      throw UsageError(fmt::format(
          "{} at {}: a prompt of {} and gen {} need {} positions, beyond the model's context {}",
          w.info.name, p.label, positions - o.gen, o.gen, positions, shape.max_positions));
    run::refuse_if_it_cannot_fit(w, p.options);
  }
  return plan;
}

DecodeCeilings decode_ceilings(const store::StoredProbe& probe, bool reused, Dtype dtype,
                               int threads) {
  DecodeCeilings c;
  c.probe_id = probe.id;
  c.reused = reused;
  const analysis::Ceilings ceilings = analysis::ceilings_from_probe(
      probe.document, dtype_name(dtype), threads, analysis::PeakKind::kInstruction);
  const analysis::LevelBandwidths dram =
      analysis::level_bandwidths(probe.document, "dram", threads);
  c.threads = dram.threads;
  c.dram_read_bytes_per_s = dram.read;
  c.dram_triad_bytes_per_s = dram.triad;
  c.peak_flops = ceilings.peak_flops;
  c.peak_source = ceilings.peak_source;
  c.ridge = analysis::ridge_intensity(ceilings, "dram");
  return c;
}

// The canonical key `options` will be stored under: printed from the record they make, so that
// config values read the way the store gives them back (an fp 0 is "0.0" there).
std::string stored_form_key(const Workload& w, const run::RunOptions& options) {
  store::StoredRecord record;
  record.workload = w.info.name;
  record.mode = mode_name(options.mode);
  record.batch = options.config.get_int("batch");
  record.threads = options.threads;
  record.device = options.device;
  record.dtype = options.dtype;
  record.memory_format = memory_format_name(options.memory_format);
  record.engine = engine_name(options.engine);
  record.heap = heap_policy_name(options.heap);
  record.config = options.config.to_json();
  return analysis::stored_key(record);
}

// The newest stored run of exactly this setting (its canonical key) under `tag` that ran.
std::optional<store::StoredRun> stored_decode_run(const std::vector<store::StoredRun>& stored,
                                                  const Workload& w, const run::RunOptions& options,
                                                  const std::string& tag) {
  const std::string key = stored_form_key(w, options);
  for (auto it = stored.rbegin(); it != stored.rend(); ++it)
    if (it->workload == w.info.name && it->tag == tag && it->result.status == run::RunStatus::kOk &&
        it->result.generation && analysis::stored_key(*it) == key)
      return *it;
  return std::nullopt;
}

DecodePoint decode_point(const std::string& label, const store::StoredRun& r, bool reused,
                         const Workload& w, const run::RunOptions& options,
                         double weight_element_bytes) {
  DecodePoint p;
  p.label = label;
  p.run_id = r.id;
  p.reused = reused;
  p.status = run::status_name(r.result.status);
  p.message = r.result.message;
  p.command = r.result.command;
  const TransformerShape shape = w.transformer_shape(options.config);
  p.parameters = static_cast<double>(parameter_count(shape));
  p.batch = r.batch;
  p.gen = options.config.get_int("gen");
  p.prompt = options.config.get_int(prompt_key(w, options.config));
  const auto& g = r.result.generation;
  if (p.ok() && !g) {
    p.status = "error";
    p.message = "the run recorded no generation phases";
  }
  if (g) p.kv_cache_bytes = g->kv_cache_bytes;
  const double kv_bytes = analysis::kv_element_bytes_of(shape, p.batch, p.prompt + p.gen,
                                                        p.kv_cache_bytes, weight_element_bytes);
  p.count =
      analysis::decode_token_count(shape, p.batch, p.prompt, p.gen, weight_element_bytes, kv_bytes);
  if (!p.ok()) return p;
  p.tpot_s = g->tpot.mean;
  p.tpot_ci_half_width_s = g->tpot.ci_half_width;
  p.decode_tokens_per_s = g->decode_tokens_per_s;
  p.bytes_per_s = p.count.bytes() * p.decode_tokens_per_s;
  return p;
}

void analyse_sizes(DecodeRooflineResult& r) {
  std::vector<double> bytes, tpot;
  for (const auto& p : r.points)
    if (p.ok()) {
      bytes.push_back(p.count.bytes());
      tpot.push_back(p.tpot_s);
    }
  if (bytes.size() < 3) {
    r.notes.push_back(fmt::format("{} of the sizes ran: the fit needs three", bytes.size()));
    return;
  }
  r.fit = analysis::fit_decode_roof(bytes, tpot);
  r.fit_read_fraction = r.fit->bytes_per_s / r.ceilings.dram_read_bytes_per_s;
  r.fit_triad_fraction = r.fit->bytes_per_s / r.ceilings.dram_triad_bytes_per_s;
  if (!std::isfinite(r.fit->bytes_per_s))
    r.notes.push_back(
        "the time per token does not grow with the bytes per token over these sizes: no "
        "bandwidth fits (sizes too small or too close for this machine's noise)");
}

void analyse_batches(DecodeRooflineResult& r, const Workload& w, const run::RunOptions& first,
                     const DecodeRooflineOptions& o) {
  const DecodePoint& head = r.points.front();
  const TransformerShape shape = w.transformer_shape(first.config);
  const double kv_bytes = analysis::kv_element_bytes_of(
      shape, head.batch, head.prompt + head.gen, head.kv_cache_bytes, r.weight_element_bytes);
  // The mean over the decode calls (call j attends prompt + j positions), as the points count.
  analysis::DecodeBatchLine line;
  const double calls = static_cast<double>(o.gen - 1);
  for (int64_t j = 1; j < o.gen; ++j) {
    const auto at =
        analysis::decode_batch_line(shape, o.prompt + j, r.weight_element_bytes, kv_bytes);
    line.fixed_bytes += at.fixed_bytes / calls;
    line.bytes_per_request += at.bytes_per_request / calls;
    line.flops_per_request += at.flops_per_request / calls;
  }
  r.ridge_batch = analysis::ridge_batch(line, r.ceilings.ridge);
  for (const auto& p : r.points)
    if (r.first_batch_past_ridge == 0 && static_cast<double>(p.batch) >= r.ridge_batch)
      r.first_batch_past_ridge = p.batch;
  std::vector<int64_t> batches;
  std::vector<double> rates;
  for (const auto& p : r.points)
    if (p.ok()) {
      batches.push_back(p.batch);
      rates.push_back(p.decode_tokens_per_s);
    }
  if (batches.size() < 2) {
    r.notes.push_back("fewer than two batches ran: no knee");
    return;
  }
  r.knee = analysis::batch_knee(batches, rates);
}

}  // namespace

const char* decode_sweep_name(DecodeSweep sweep) {
  switch (sweep) {
    case DecodeSweep::kSizes:
      return "sizes";
    case DecodeSweep::kBatches:
      return "batches";
    case DecodeSweep::kContexts:
      return "contexts";
  }
  return "?";
}

std::vector<std::vector<std::string>> parse_decode_sizes(const std::string& sizes,
                                                         const std::vector<std::string>& size) {
  std::vector<std::vector<std::string>> out;
  auto bad = [](const std::string& text) {
    return UsageError(fmt::format(
        "a size is key=value (--sizes preset=small,medium,large or --size layers=2,d_model=32), "
        "got '{}'",
        text));
  };
  if (!sizes.empty()) {
    const size_t eq = sizes.find('=');
    if (eq == std::string::npos || eq == 0) throw bad(sizes);
    const std::string key = sizes.substr(0, eq);
    for (const auto& value : split(sizes.substr(eq + 1), ',')) {
      if (value.empty()) throw bad(sizes);
      out.push_back({key + "=" + value});
    }
  }
  for (const auto& one : size) {
    std::vector<std::string> settings;
    for (const auto& kv : split(one, ',')) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) throw bad(one);
      settings.push_back(kv);
    }
    out.push_back(settings);
  }
  return out;
}

std::vector<std::vector<std::string>> default_decode_sizes(const Workload& workload) {
  std::vector<std::vector<std::string>> out;
  const Config defaults = workload.default_config();  // kept: entries() refers into it
  for (const auto& e : defaults.entries())
    if (e.key == "preset")
      for (size_t i = 0; i < e.choices.size() && i < 3; ++i)
        out.push_back({"preset=" + e.choices[i]});
  return out;
}

void check_decode_roofline(const DecodeRooflineOptions& options) {
  plan_decode_runs(options);
}

DecodeRooflineResult run_decode_roofline(const DecodeRooflineOptions& o,
                                         const run::ProgressFn& progress) {
  PLUMB_ASSERT(o.workload != nullptr, "analyze decode needs a workload");
  const Workload& w = *o.workload;
  DecodeRooflineResult r;
  r.workload = w.info.name;
  r.sweep = o.sweep;
  r.dtype = dtype_name(o.base.dtype);
  r.threads = o.base.threads;
  r.weight_element_bytes = analysis::decode_weight_element_bytes(o.base.dtype);
  const auto plan = plan_decode_runs(o);

  auto db = store::ResultsStore::open(o.db);
  r.db_path = db->path();
  const auto stored =
      o.reuse_stored ? db->load_runs(/*with_samples=*/false) : std::vector<store::StoredRun>{};
  for (const auto& planned : plan) {
    auto found = stored_decode_run(stored, w, planned.options, o.tag);
    if (found && progress)
      progress(fmt::format("{} {}: the stored run {} of the same setting", w.info.name,
                           planned.label, found->id));
    const store::StoredRun run =
        found ? *found : run_and_store(w, planned.options, *db, o.tag, progress);
    r.points.push_back(decode_point(planned.label, run, found.has_value(), w, planned.options,
                                    r.weight_element_bytes));
    if (!r.points.back().ok()) r.all_ok = false;
  }
  // After the runs: a setting the workload refuses only when it builds (a UsageError from the
  // first run) then leaves nothing stored.
  ProbeRequest probe_request = o.probe;
  probe_request.max_threads = std::max(probe_request.max_threads, o.base.threads);
  const ProbeChoice probe = current_probe(*db, probe_request);
  r.ceilings = decode_ceilings(probe.probe, probe.reused, o.base.dtype, o.base.threads);
  switch (o.sweep) {
    case DecodeSweep::kSizes:
      analyse_sizes(r);
      break;
    case DecodeSweep::kBatches:
      analyse_batches(r, w, plan.front().options, o);
      break;
    case DecodeSweep::kContexts:
      break;
  }
  return r;
}

}  // namespace plumb::jobs
