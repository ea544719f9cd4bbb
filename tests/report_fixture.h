// A small, fixed results database for the report tests: every kind of record the report draws
// (a probe, runs in both modes incl. a failed one, operator profiles at two thread counts,
// memory passes over three batches, a two-parameter sweep), with made-up but plausible
// numbers, so the generated Vega-Lite specs are deterministic (golden files) and every
// section of the page has data (browser test).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "plumb/run/stats.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/results_store.h"
#include "plumb/store/sweep_records.h"
#include "plumb/store/tune_record.h"

namespace plumb::testing {

inline platform::Environment report_environment() {
  platform::Environment e;
  e.host = "fixture-host";
  e.os = "Linux 6.1.0 x86_64";
  e.cpu_model = "Example CPU 2.0GHz";
  e.isa = {"avx2", "avx512f"};
  e.logical_cores = 2;
  e.threads_used = 2;
  e.load_average_1m = 0.1;
  e.libtorch_version = "1.13.1";
  e.blas = "libopenblas.so.0";
  e.blas_optimized = true;
  e.onednn_version = "2.6.3";
  e.plumb_version = "0.1.0";
  e.git_commit = "fixture";
  e.compiler = "GNU 12.2.0";
  e.device = "cpu";
  return e;
}

inline run::RunOptions report_options(const std::string& workload, Mode mode, int64_t batch,
                                      int threads) {
  run::RunOptions o;
  o.workload = workload;
  o.mode = mode;
  o.config.add_int("batch", batch, "mini-batch size");
  o.threads = threads;
  return o;
}

// Samples around `step_s` with a fixed wobble (no randomness: golden files must not move).
inline run::RunResult report_run(double step_s, double units, const std::string& unit) {
  run::RunResult r;
  r.command = "plumb run (fixture)";
  r.started_at = "2026-01-01T00:00:00Z";
  for (int i = 0; i < 20; ++i) r.samples_s.push_back(step_s * (1.0 + 0.01 * ((i * 7) % 5 - 2)));
  r.warmup_s = {step_s * 2, step_s * 1.2};
  r.steady_detected = true;
  r.target_met = true;
  r.step_time = run::summarize(r.samples_s);
  r.units_per_step = units;
  r.throughput_unit = unit;
  r.throughput = units / r.step_time.mean;
  return r;
}

inline profile::OpStat report_op(const std::string& name, const std::string& category,
                                 const std::string& layer, const std::string& scope, double self_s,
                                 double flops, double bytes) {
  // OpStat's fields in order; three quarters of the bytes read, a quarter written.
  return {name,   scope,  layer, category, profile::kCosted, "fixture",   1,
          self_s, self_s, flops, 0,        bytes * 0.75,     bytes * 0.25};
}

// A profile whose time splits between GEMM-like and elementwise work as `gemm_share` says;
// more threads speed up the GEMM part only (so the scaling chart has two distinct lines).
// `kind`: "mlp" (matrix products), "cnn" (convolutions) or "rnn" (recurrent cells).
inline profile::ProfileResult report_profile(const std::string& kind, Mode mode, int threads,
                                             double gemm_share) {
  profile::ProfileResult r;
  r.command = "plumb profile (fixture)";
  r.threads = threads;
  r.steady_detected = true;
  const double gemm_s = 0.010 * gemm_share / threads;
  const double other_s = 0.010 * (1 - gemm_share);
  auto& p = r.profile;
  const std::string heavy = kind == "cnn"   ? "aten::mkldnn_convolution"
                            : kind == "rnn" ? "aten::_thnn_fused_lstm_cell"
                                            : "aten::addmm";
  const std::string heavy_category = kind == "cnn"   ? "convolution"
                                     : kind == "rnn" ? "recurrent"
                                                     : "matrix multiply";
  p.ops.push_back(report_op(heavy, heavy_category, "layer1", "forward", gemm_s * 0.6, 4e8, 2e6));
  p.ops.push_back(
      report_op("aten::relu", "elementwise", "layer1", "forward", other_s * 0.5, 1e6, 8e6));
  p.ops.push_back(
      report_op("aten::add_", "elementwise", "layer2", "forward", other_s * 0.2, 5e5, 6e6));
  p.ops.push_back(report_op(heavy, heavy_category, "layer2", "forward", gemm_s * 0.4, 2e8, 1e6));
  if (mode == Mode::kTrain) {
    p.ops.push_back(report_op(heavy + "_backward", heavy_category, "layer1", "backward",
                              gemm_s * 0.9, 8e8, 4e6));
    p.ops.push_back(report_op("aten::threshold_backward", "elementwise", "layer1", "backward",
                              other_s * 0.3, 1e6, 1.2e7));
  }
  p.steps = 3;
  for (const auto& op : p.ops) p.op_self_s += op.self_s;
  p.overhead_s = p.op_self_s * 0.05;
  p.step_s = p.op_self_s + p.overhead_s;
  r.profiled_s = {p.step_s, p.step_s, p.step_s};
  r.units_per_step = 8;
  r.throughput_unit = "images/s";
  return r;
}

// The GEMM-like operators of `p` take `factor` times as long (the comparison's explanation).
inline profile::ProfileResult slowed(profile::ProfileResult p, double factor) {
  auto& s = p.profile;
  for (auto& op : s.ops)
    if (op.category != "elementwise") {
      s.op_self_s += op.self_s * (factor - 1);
      op.self_s *= factor;
      op.inclusive_s *= factor;
    }
  s.step_s = s.op_self_s + s.overhead_s;
  return p;
}

inline profile::MemoryProfileResult report_memory(int64_t batch) {
  profile::MemoryProfileResult m;
  m.command = "plumb memory (fixture)";
  m.threads = 2;
  m.step_s = 0.05;
  auto& b = m.breakdown;
  const int64_t mib = 1 << 20;
  b.peak = {40 * mib,    40 * mib, 40 * mib, 12 * mib * batch, 3 * mib * batch + mib,
            mib * batch, mib / 2};
  b.at_total_peak = b.peak;
  b.at_total_peak[4] = 2 * mib * batch;
  b.total_peak = 0;
  for (auto v : b.at_total_peak) b.total_peak += v;
  b.feature_map_layers = {{"layer1.conv", 8 * mib * batch}, {"layer2.conv", 4 * mib * batch}};
  m.tracked_peak = b.total_peak;
  return m;
}

inline store::StoredProbe report_probe() {
  using json = nlohmann::ordered_json;
  store::StoredProbe probe;
  probe.machine = platform::machine_key(report_environment());
  probe.mode = "quick";
  probe.measured_at = "2026-01-01T00:00:00Z";
  probe.seconds = 4.5;
  probe.environment = report_environment();
  auto peak = [](double flops) {
    return json{{"supported", true},
                {"isa", "avx512"},
                {"reason", ""},
                {"instruction_flops", 2 * flops},
                {"theoretical_flops", 2.1 * flops},
                {"gemm_flops", 1.7 * flops},
                {"by_threads", json::array({{{"threads", 1}, {"flops", flops}},
                                            {{"threads", 2}, {"flops", 2 * flops}}})},
                {"gemm", json::array()}};
  };
  json levels = json::array();
  json curve = json::array();
  const std::vector<std::pair<std::string, double>> level_bw = {
      {"l1", 400e9}, {"l2", 200e9}, {"l3", 100e9}, {"dram", 30e9}};
  double capacity = 32 * 1024;
  for (const auto& [level, bw] : level_bw) {
    levels.push_back({{"level", level},
                      {"threads", 2},
                      {"capacity_bytes", level == "dram" ? 0.0 : capacity},
                      {"working_set_bytes", capacity / 2},
                      {"read", bw},
                      {"write", bw / 2},
                      {"copy", bw * 0.8},
                      {"triad", bw * 0.9}});
    for (const char* kernel : {"read", "triad"})
      curve.push_back({{"kernel", kernel},
                       {"threads", 2},
                       {"working_set_bytes", capacity / 2},
                       {"bytes_per_s", std::string(kernel) == "read" ? bw : bw * 0.9}});
    capacity *= 32;
  }
  probe.document = {{"mode", "quick"},
                    {"peaks", {{"fp32", peak(100e9)}, {"int8", peak(400e9)}}},
                    {"bandwidth", {{"levels", levels}, {"curve", curve}}}};
  return probe;
}

// Writes the fixture database at `path` (which must not exist). `tag` labels one extra run,
// e.g. a hostile string for the escaping tests; `slowdown` scales every step time (a second
// database for the comparison section).
inline void write_report_fixture(const std::string& path, const std::string& tag = "fixture-b",
                                 double slowdown = 1.0) {
  auto db = store::ResultsStore::open(path);
  const auto env = report_environment();
  db->save_probe(report_probe());
  db->save_run(report_options("mlp", Mode::kTrain, 64, 2),
               report_run(slowdown * 0.004, 64, "samples/s"), env);
  db->save_run(report_options("mlp", Mode::kInfer, 64, 2),
               report_run(slowdown * 0.0015, 64, "samples/s"), env);
  db->save_run(report_options("cnn", Mode::kTrain, 8, 2),
               report_run(slowdown * 0.080, 8, "images/s"), env);
  db->save_run(report_options("cnn", Mode::kInfer, 8, 2),
               report_run(slowdown * 0.025, 8, "images/s"), env);
  db->save_run(report_options("cnn", Mode::kTrain, 8, 2),
               report_run(slowdown * 0.088, 8, "images/s"), env, tag);
  auto failed = report_run(0.1, 8, "images/s");
  failed.status = run::RunStatus::kOutOfMemory;
  failed.message = "out of memory at batch 4096";
  failed.samples_s.clear();
  failed.step_time = run::summarize({});
  db->save_run(report_options("cnn", Mode::kTrain, 4096, 2), failed, env);
  // plumb precision on cnn inference: bf16 and int8 against the fp32 run above, and fp16
  // unsupported (a run with the reason, no comparison).
  const int64_t fp32_run = 4;
  for (const auto& [dtype, step, error] :
       {std::tuple{Dtype::kBf16, 0.010, 4e-3}, std::tuple{Dtype::kInt8, 0.008, 2e-2}}) {
    auto options = report_options("cnn", Mode::kInfer, 8, 2);
    options.dtype = dtype;
    auto result = report_run(slowdown * step, 8, "images/s");
    result.precision_notes = {std::string(dtype_name(dtype)) + ": fixture"};
    store::PrecisionComparisonRecord p;
    p.run_id = db->save_run(options, result, env);
    p.reference_run_id = fp32_run;
    p.speedup = 0.025 / step;
    p.speedup_low = 0.97 * p.speedup;
    p.speedup_high = 1.03 * p.speedup;
    p.error_measured = true;
    p.error.relative_l2 = error;
    p.error.max_abs = 10 * error;
    p.error.cosine = 1 - error * error / 2;
    p.error.agreement = 1.0;
    p.error.agreement_kind = "top1";
    p.error.elements = 8000;
    p.error.examples = 8;
    db->save_precision_comparison(p);
  }
  auto fp16 = report_options("cnn", Mode::kInfer, 8, 2);
  fp16.dtype = Dtype::kFp16;
  auto unsupported = report_run(0.1, 8, "images/s");
  unsupported.status = run::RunStatus::kUnsupported;
  unsupported.message = "unsupported in fp16: \"slow_conv2d_cpu\" not implemented for 'Half'";
  unsupported.samples_s.clear();
  unsupported.step_time = run::summarize({});
  db->save_run(fp16, unsupported, env);
  for (const std::string w : {"mlp", "cnn"})
    for (Mode mode : {Mode::kTrain, Mode::kInfer})
      for (int threads : {1, 2})
        db->save_profile(report_options(w, mode, w == "cnn" ? 8 : 64, threads),
                         slowed(report_profile(w, mode, threads, w == "cnn" ? 0.8 : 0.5),
                                w == "cnn" ? slowdown : 1.0),
                         env, w + "-profile");
  // A third workload (one thread count) so that the similarity dendrogram has a shape.
  for (Mode mode : {Mode::kTrain, Mode::kInfer})
    db->save_profile(report_options("rnn", mode, 32, 2), report_profile("rnn", mode, 2, 0.3), env,
                     "rnn-profile");
  // plumb dist: resnet-like training on 1 and 2 workers over the loopback, 1 and 2 over a
  // shaped link where communication shows.
  for (const auto& [link, workers, step, exposed] :
       {std::tuple{"none", 1, 1.40, 0.0}, std::tuple{"none", 2, 1.55, 0.06},
        std::tuple{"1gbit", 1, 1.45, 0.0}, std::tuple{"1gbit", 2, 2.40, 0.85}}) {
    store::StoredDistWorld w;
    w.started_at = "2026-01-01T00:00:00Z";
    w.workload = "cnn";
    w.workers = workers;
    w.batch_per_worker = 4;
    w.bucket_bytes = 25 << 20;
    w.link = link;
    w.throughput_unit = "images/s";
    w.step_mean_s = slowdown * step;
    w.throughput = 4.0 * workers / w.step_mean_s;
    w.step_ci_rel = 0.01;
    w.efficiency = workers == 1 ? std::nan("") : (link == std::string("none") ? 1.40 : 1.45) / step;
    w.exposed_s = slowdown * exposed;
    w.compute_s = w.step_mean_s - w.exposed_s;
    w.overlapped_s = workers == 1 ? 0.0 : 0.3;
    w.gradient_bytes = 102228128;
    w.peak_rss_bytes = 1052057600;
    w.environment = env;
    std::vector<double> steps;  // the slowest worker's step times, a fixed wobble
    for (int i = 0; i < 20; ++i) steps.push_back(w.step_mean_s * (1.0 + 0.01 * ((i * 7) % 5 - 2)));
    w.document = {{"step_s", steps}, {"units_per_step", 4.0 * workers}};
    db->save_dist_world(w);
  }
  for (int64_t batch : {1, 2, 4})
    db->save_memory_profile(report_options("cnn", Mode::kTrain, batch, 2), report_memory(batch),
                            env, "cnn-memory");
  // plumb tune: the cnn's inference tuned to bf16 channels_last (2.2x), with the two changes'
  // worth, and a tuning whose latency bound nothing met.
  {
    store::StoredTuneSession t;
    t.started_at = "2026-01-01T00:00:00Z";
    t.workload = "cnn";
    t.mode = "infer";
    t.batch = 8;
    t.threads = 2;
    t.tag = tag;
    t.found = true;
    t.speedup = 2.2 / slowdown;
    t.speedup_low = 2.1 / slowdown;
    t.speedup_high = 2.3 / slowdown;
    t.best_command = "plumb run cnn --mode infer --batch 8 --threads 2 --dtype bf16";
    t.environment = env;
    store::TuneResult& r = t.result;
    r.unit = "images/s";
    r.found = true;
    store::TuneFinal& f = r.final_runs.emplace();
    f.stock.setting = "stock";
    f.stock.throughput = 19.0 / slowdown;
    f.best.setting = "dtype=bf16 memory_format=channels_last";
    f.best.throughput = 42.0;
    f.contributions = {{"dtype", "fp32", "bf16", 1.8, 0.5, std::nullopt, std::nullopt, false},
                       {"memory_format", "contiguous", "channels_last", 1.1, 0.79, std::nullopt,
                        std::nullopt, false}};
    f.most = "dtype";
    r.headroom.emplace();
    r.headroom->best.dtype = "bf16";
    r.headroom->best.roof_fraction = 0.74;
    db->save_tune_session(t);
    store::StoredTuneSession none = t;
    none.workload = "rnn";
    none.found = false;
    none.speedup = none.speedup_low = none.speedup_high = std::nan("");
    none.best_command = "";
    none.result = store::TuneResult{};
    none.result.unit = "tokens/s";
    none.result.message =
        "no configuration meets --latency-bound 1 ms; the closest is threads=1 at a mean step of "
        "3.10 ms";
    db->save_tune_session(none);
  }
  // A 3 x 3 sweep over nodes and batch of an FC model, one point out of memory.
  const int64_t sweep = db->register_sweep("fc-grid", "paradnn_fc", R"({"grid":"fixture"})", 9);
  int64_t index = 0;
  for (int64_t nodes : {64, 256, 1024})
    for (int64_t batch : {16, 64, 256}) {
      store::SweepPointRecord p;
      p.sweep_id = sweep;
      p.index = index++;
      p.key = "mode=train batch=" + std::to_string(batch) + " nodes=" + std::to_string(nodes);
      p.mode = "train";
      p.params = {{"nodes", nodes}, {"batch", batch}};
      const double flops = 6.0 * nodes * nodes * batch;
      const double step =
          slowdown * (flops / (50e9 * std::log2(static_cast<double>(batch)) / 8.0) + 1e-4);
      const bool oom = nodes == 1024 && batch == 256;
      p.status = oom ? "out_of_memory" : "ok";
      if (!oom)
        p.metrics = {{"examples_per_s", batch / step},
                     {"flops_per_s", flops / step},
                     {"flops_util", flops / step / 200e9}};
      auto r = report_run(step, static_cast<double>(batch), "examples/s");
      if (oom) r.status = run::RunStatus::kOutOfMemory;
      auto options = report_options("paradnn_fc", Mode::kTrain, batch, 2);
      options.config.add_int("nodes", nodes, "units per layer");  // as a real sweep point has
      db->save_sweep_point(p, options, r, nullptr, nullptr, env, "");
    }
}

}  // namespace plumb::testing
