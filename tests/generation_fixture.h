// A made-up generation, stored: a probe whose roofs are round numbers (fp32 100 GFLOP/s, int8 400
// GOP/s, DRAM triad 30 GB/s, L2 200 GB/s, one thread) and a generative workload's inference
// profile with a prefill and a decode phase whose operators sit at known places on those roofs,
// plus a timed run of the same generation (TTFT, TPOT). For plumb profile's bound column
// (test_profile_bounds.cpp) and the report's phase sentences (test_report_generation.cpp).
#pragma once

#include <string>
#include <vector>

#include "plumb/platform/probe.h"
#include "plumb/run/generation_timing.h"
#include "plumb/run/runner.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "report_fixture.h"

namespace plumb::testing {

inline constexpr double kGenFp32Peak = 100e9, kGenInt8Peak = 400e9;
inline constexpr double kGenDramTriad = 30e9, kGenL2Triad = 200e9;
inline constexpr int64_t kGenBatch = 2, kGenPrompt = 8, kGenGen = 4;  // 3 decode calls

// The probe document ceilings_from_probe reads, on report_environment()'s machine.
inline store::StoredProbe generation_probe() {
  using json = nlohmann::ordered_json;
  auto peak = [](double flops) {
    return json{{"supported", true},
                {"isa", "avx512"},
                {"reason", ""},
                {"by_threads", json::array({{{"threads", 1}, {"flops", flops}}})},
                {"gemm", json::array()}};
  };
  auto level = [](const char* name, double triad, double capacity) {
    return json{{"level", name}, {"threads", 1},   {"capacity_bytes", capacity},
                {"read", triad}, {"write", triad}, {"copy", triad},
                {"triad", triad}};
  };
  store::StoredProbe probe;
  probe.machine = platform::machine_key(report_environment());
  probe.mode = "quick";
  probe.measured_at = "2026-01-01T00:00:00Z";
  probe.environment = report_environment();
  probe.document = {{"plumb_probe_version", platform::kProbeDocumentVersion},
                    {"mode", "quick"},
                    {"max_threads", 1},
                    {"peaks", {{"fp32", peak(kGenFp32Peak)}, {"int8", peak(kGenInt8Peak)}}},
                    {"bandwidth",
                     {{"levels", json::array({level("l2", kGenL2Triad, 1 << 20),
                                              level("dram", kGenDramTriad, 0)})},
                      {"curve", json::array()}}}};
  return probe;
}

inline profile::OpStat generation_op(const std::string& phase, const std::string& name,
                                     const std::string& category, const std::string& signature,
                                     double flops, double bytes, double self_s) {
  return {name,   phase,  "block0", category, profile::kCosted, signature,   1,
          self_s, self_s, flops,    0,        bytes * 0.75,     bytes * 0.25};
}

inline profile::OpStat generation_phase_row(Phase phase, double calls, double seconds) {
  profile::OpStat row;
  row.name = phase_scope(phase);
  row.scope = phase_name(phase);
  row.kind = profile::kPhaseRow;
  row.calls = calls;
  row.inclusive_s = seconds;
  return row;
}

// Per step. Decode: a [2, 1000] x [1000, 500] GEMV-like mm (0.5 FLOP/byte) at 15 GB/s, half the
// DRAM roof, and a view without work. Prefill: an fp32 addmm at 100 FLOP/byte and 50 GFLOP/s,
// half the fp32 roof; an int8 linear at 5 FLOP/byte and 10 GB/s: right of fp32's ridge (3.3) but
// left of int8's (13.3), so memory-bound on its own dtype's roof.
inline profile::ProfileResult generation_profile() {
  profile::ProfileResult r;
  r.command = "plumb profile (fixture)";
  r.threads = 1;
  r.steady_detected = true;
  auto& p = r.profile;
  p.ops = {
      generation_op("decode", "aten::mm", "MatMul", "aten::mm|Float[2,1000]|Float[1000,500]", 2e6,
                    4e6, 4e6 / 15e9),
      generation_op("decode", "aten::view", "Data movement", "aten::view|Float[2,500]", 0, 0, 1e-6),
      generation_op("prefill", "aten::addmm", "Linear", "aten::addmm|Float[16,1000]", 4e8, 4e6,
                    8e-3),
      generation_op("prefill", "quantized::linear", "Quantized",
                    "quantized::linear|QUInt8[16,1000]", 5e6, 1e6, 1e-4)};
  p.steps = 3;
  for (const auto& op : p.ops) p.op_self_s += op.self_s;
  const double decode_s = 4e6 / 15e9 + 1e-6 + 1e-5, prefill_s = 8e-3 + 1e-4 + 1e-4;
  p.phases = {generation_phase_row(Phase::kPrefill, 1, prefill_s),
              generation_phase_row(Phase::kDecode, kGenGen - 1, decode_s)};
  p.step_s = prefill_s + decode_s;
  p.overhead_s = p.step_s - p.op_self_s;
  r.profiled_s = {p.step_s, p.step_s, p.step_s};
  r.units_per_step = kGenBatch * kGenGen;
  r.throughput_unit = "tokens/s";
  return r;
}

inline run::RunOptions generation_options() {
  run::RunOptions o = report_options("synth_lm", Mode::kInfer, kGenBatch, 1);
  o.config.add_int("prompt", kGenPrompt, "prompt tokens");
  o.config.add_int("gen", kGenGen, "output tokens");
  return o;
}

// A timed run of the generation: TTFT 10, 12 ms; decode calls 2, 3, 4 ms per step.
inline run::RunResult generation_run() {
  run::RunResult r = report_run(0.02, kGenBatch * kGenGen, "tokens/s");
  run::GenerationTimes g;
  g.batch = kGenBatch;
  g.prompt = kGenPrompt;
  g.gen = kGenGen;
  g.ttft_s = {0.010, 0.012};
  g.decode_s = {0.002, 0.003, 0.004, 0.002, 0.003, 0.004};
  run::summarize_generation(g);
  r.generation = g;
  return r;
}

// Stores the profile (group "generation"), and with `with_probe` the probe, and the run.
inline void write_generation_fixture(const std::string& path, bool with_probe) {
  auto db = store::ResultsStore::open(path);
  if (with_probe) db->save_probe(generation_probe());
  db->save_run(generation_options(), generation_run(), report_environment());
  db->save_profile(generation_options(), generation_profile(), report_environment(), "generation");
}

}  // namespace plumb::testing
