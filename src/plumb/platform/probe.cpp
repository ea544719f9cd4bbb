// Runs every ceiling measurement and assembles the probe document (see probe.h).
#include "plumb/platform/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/platform/bandwidth_kernels.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/gemm_peaks.h"
#include "plumb/platform/gpu_probe.h"
#include "plumb/platform/indistinct_levels.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/platform/peak_theory.h"
#include "plumb/run/step_loop.h"

namespace plumb::platform {
namespace {

using Json = nlohmann::ordered_json;

Json machine_json(const CpuFeatures& cpu, const FrequencyInfo& freq,
                  const CacheInventory& inventory) {
  const std::vector<CacheLevel>& caches = inventory.levels;
  Json isa;
  for (const auto& [name, has] :
       std::initializer_list<std::pair<const char*, bool>>{{"sse2", cpu.sse2},
                                                           {"avx", cpu.avx},
                                                           {"avx2", cpu.avx2},
                                                           {"fma", cpu.fma},
                                                           {"avx512f", cpu.avx512f},
                                                           {"avx512bw", cpu.avx512bw},
                                                           {"avx512vl", cpu.avx512vl},
                                                           {"avx512_vnni", cpu.avx512_vnni},
                                                           {"avx512_bf16", cpu.avx512_bf16},
                                                           {"avx512_fp16", cpu.avx512_fp16},
                                                           {"avx_vnni", cpu.avx_vnni},
                                                           {"amx_tile", cpu.amx_tile},
                                                           {"amx_bf16", cpu.amx_bf16},
                                                           {"amx_int8", cpu.amx_int8}})
    isa[name] = has;
  Json cache_rows = Json::array();
  for (const auto& c : caches)
    cache_rows.push_back({{"level", c.level},
                          {"type", c.type},
                          {"size_bytes", c.size_bytes},
                          {"shared_by_cpus", c.shared_by_cpus}});
  return {{"vendor", cpu.vendor},
          {"model_name", cpu.model_name},
          {"family", cpu.family},
          {"model", cpu.model},
          {"microarchitecture", microarchitecture_name(cpu)},
          {"logical_cpus", cpu.logical_cpus},
          {"widest_fp32_isa", cpu.widest_fp32_isa},
          {"isa", isa},
          // Features PLUMB_CPU_FEATURES_OFF hid from this probe (the path of an older CPU).
          {"hidden_features", hidden_cpu_features()},
          {"fma_units_per_core", fma_units_per_core(cpu)},
          {"fma_width_bits", fma_width_bits(cpu)},
          {"frequency",
           {{"nominal_hz", freq.nominal_hz},
            {"nominal_source", freq.nominal_source},
            {"measured_hz", freq.measured_hz}}},
          {"caches", cache_rows},
          {"cache_source", inventory.source}};
}

// The theory of one engine, inferred from its one-thread point (peak_theory.h).
InferredTheory engine_theory(const InstructionPeak& peak, const CpuFeatures& cpu,
                             const FrequencyInfo& freq) {
  if (!peak.outcome.ok() || peak.by_threads.empty()) return {};
  TheoryInput in = theory_input(peak, freq.measured_hz);
  const bool matrix = peak.engine == EngineKind::kMatrix;
  in.table_instructions_per_cycle =
      matrix ? table_matrix_rate(cpu) : table_vector_rate(cpu, peak.instruction_bits);
  in.table_description = matrix ? table_matrix_description(cpu) : table_vector_description(cpu);
  in.cpu_model_text = fmt::format("0x{:X}", cpu.model);
  return infer_theory(in);
}

Json theory_json(const InferredTheory& t, const InstructionPeak& peak) {
  if (!t.inferred) return nullptr;
  return {{"ops_per_instruction", peak.ops_per_instruction},
          {"instruction_bits", peak.instruction_bits},
          {"measured_instructions_per_cycle", t.measured_instructions_per_cycle},
          {"instructions_per_cycle", t.instructions_per_cycle},
          {"ops_per_core_cycle", t.ops_per_core_cycle},
          {"inferred", t.description},
          {"table", t.table},
          {"agrees_with_table", t.agrees_with_table},
          {"note", t.note}};
}

// One engine's peak per thread count beside its inferred theory. Theory uses the clock measured
// while that many threads kept the engine busy and the physical cores they occupy (SMT
// siblings share the units).
Json engine_json(const InstructionPeak& peak, const InferredTheory& theory,
                 const FrequencyInfo& freq) {
  Json j;
  j["engine"] = engine_kind_name(peak.engine);
  j["supported"] = peak.outcome.ok();
  j["isa"] = peak.isa;
  j["reason"] = peak.outcome.reason;
  j["instruction_flops"] = peak.best_ops_per_s;
  j["instruction_threads"] = peak.best_threads;
  // Every sequence timed for the engine; `isa` is the fastest (peak_kernels.h).
  j["sequences"] = Json::array();
  for (const SequencePeak& s : peak.sequences)
    j["sequences"].push_back(
        {{"isa", s.isa}, {"instruction_flops", s.ops_per_s}, {"instruction_threads", s.threads}});
  const double idle_hz = freq.measured_hz > 0 ? freq.measured_hz : freq.nominal_hz;
  auto theoretical = [&](const PeakPoint& p) {
    const double hz = p.clock_hz > 0 ? p.clock_hz : idle_hz;
    return theory.inferred ? theory.ops_per_core_cycle * hz * cores_used_by(p.threads) : 0.0;
  };
  const PeakPoint* best_point = nullptr;
  for (const auto& p : peak.by_threads)
    if (p.threads == peak.best_threads) best_point = &p;
  j["theoretical_flops"] = json_number(
      best_point != nullptr && theory.inferred ? theoretical(*best_point) : std::nan(""));
  j["theoretical_clock_hz"] =
      best_point != nullptr && best_point->clock_hz > 0 ? best_point->clock_hz : idle_hz;
  j["theory"] = theory_json(theory, peak);
  Json rows = Json::array();
  for (const auto& p : peak.by_threads) {
    const double theory_flops = theoretical(p);
    rows.push_back({{"threads", p.threads},
                    {"flops", p.ops_per_s},
                    {"clock_hz", p.clock_hz},
                    {"cores", cores_used_by(p.threads)},
                    {"theoretical_flops", theory_flops},
                    {"fraction_of_theoretical",
                     json_number(theory_flops > 0 ? p.ops_per_s / theory_flops : std::nan(""))},
                    {"disturbed", p.disturbed}});
  }
  j["by_threads"] = rows;
  // One thread's excess is in the theory's note already; more threads can exceed it on their
  // own (their clock is measured separately), and a printed excess is never left unexplained.
  // Nor is a point far below one thread's efficiency: a core shared with something unseen.
  if (theory.inferred) {
    std::string note = theory.note;
    const double one_thread_fraction =
        peak.by_threads.empty() || theoretical(peak.by_threads.front()) <= 0
            ? 0
            : peak.by_threads.front().ops_per_s / theoretical(peak.by_threads.front());
    for (const auto& p : peak.by_threads) {
      const double theory_flops = theoretical(p);
      if (p.threads == 1 || theory_flops <= 0) continue;
      const std::string shared =
          shared_core_line(p.ops_per_s / theory_flops, one_thread_fraction, p.threads);
      if (!shared.empty()) note += (note.empty() ? "" : "; ") + shared;
      const double hz = p.clock_hz > 0 ? p.clock_hz : idle_hz;
      const double per_cycle =
          p.ops_per_s / cores_used_by(p.threads) / hz / peak.ops_per_instruction;
      const std::string line =
          above_theory_line(p.ops_per_s / theory_flops, p.threads,
                            faster_than_any_engine(peak.engine, peak.instruction_bits, per_cycle));
      if (!line.empty()) note += (note.empty() ? "" : "; ") + line;
    }
    j["theory"]["note"] = note;
  }
  return j;
}

// One dtype: every engine that can run it, the fastest one as the dtype's roof (its figures
// repeated at the top level, where readers of the first probe version find them), and the
// library GEMMs beside it, flagged when one runs above the roof.
Json dtype_json(Dtype dtype, const std::vector<InstructionPeak>& engines,
                const std::vector<GemmPeak>& gemms, const CpuFeatures& cpu,
                const FrequencyInfo& freq) {
  Json engine_rows = Json::array();
  const Json* roof = nullptr;
  std::string reasons;
  for (const InstructionPeak& peak : engines) {
    engine_rows.push_back(engine_json(peak, engine_theory(peak, cpu, freq), freq));
    if (!peak.outcome.ok()) reasons += (reasons.empty() ? "" : "; ") + peak.outcome.reason;
  }
  for (const Json& e : engine_rows)
    if (e["supported"].get<bool>() &&
        (roof == nullptr ||
         e["instruction_flops"].get<double>() > (*roof)["instruction_flops"].get<double>()))
      roof = &e;
  Json j;
  j["supported"] = roof != nullptr;
  j["engine"] = roof != nullptr ? (*roof)["engine"] : Json("");
  j["isa"] = roof != nullptr ? (*roof)["isa"] : Json("");
  j["reason"] = roof != nullptr ? "" : reasons;
  for (const char* key : {"instruction_flops", "instruction_threads", "theoretical_flops",
                          "theoretical_clock_hz", "theory", "by_threads"})
    j[key] = roof != nullptr ? (*roof)[key] : Json(engine_rows.front()[key]);
  j["engines"] = engine_rows;
  // The best supported GEMM of any library is the dtype's practical ceiling.
  const GemmPeak* best = nullptr;
  Json gemm_rows = Json::array();
  for (const auto& g : gemms) {
    if (g.dtype != dtype_name(dtype)) continue;
    gemm_rows.push_back({{"library", g.library},
                         {"implementation", g.implementation},
                         {"supported", g.outcome.ok()},
                         {"reason", g.outcome.reason},
                         {"threads", g.threads},
                         {"size", g.shape.m},
                         {"flops", g.ops_per_s}});
    if (g.outcome.ok() && (best == nullptr || g.ops_per_s > best->ops_per_s)) best = &g;
  }
  j["gemm_flops"] = best != nullptr ? best->ops_per_s : 0.0;
  j["gemm_threads"] = best != nullptr ? best->threads : 0;
  j["gemm_library"] = best != nullptr ? best->library : "";
  j["gemm"] = gemm_rows;
  // A kernel that runs faster than the roof means the roof is wrong (peak_theory.h).
  const GemmAgainstRoof check =
      best == nullptr
          ? GemmAgainstRoof{}
          : gemm_against_roof(dtype_name(dtype),
                              roof != nullptr ? (*roof)["instruction_flops"].get<double>() : 0.0,
                              roof != nullptr ? (*roof)["isa"].get<std::string>() : "",
                              best->ops_per_s, best->library, best->implementation);
  j["gemm_above_roof"] = check.above;
  j["gemm_note"] = check.note;
  return j;
}

Json bandwidth_json(const std::vector<BwPoint>& points, const std::vector<CacheLevel>& caches,
                    const std::vector<int>& threads) {
  Json j;
  j["isa"] = bandwidth_isa();
  j["threads"] = threads;
  Json levels = Json::array();
  const auto summary = summarize_levels(points, caches);
  const auto merges = indistinct_levels(summary);
  auto merged_into = [&](const LevelBandwidth& l) {
    for (const LevelMerge& m : merges)
      if (m.level == l.level && m.threads == l.threads) return m.into;
    return std::string();
  };
  for (const auto& l : summary)
    levels.push_back({{"level", l.level},
                      {"merged_into", merged_into(l)},
                      {"threads", l.threads},
                      {"capacity_bytes", l.capacity_bytes},
                      {"working_set_bytes", l.working_set_bytes},
                      {"read", l.read},
                      {"write", l.write},
                      {"copy", l.copy},
                      {"triad", l.triad},
                      {"plateau_break_bytes", l.plateau_break_bytes}});
  j["levels"] = levels;
  Json merged = Json::array();
  for (const LevelMerge& m : merges)
    merged.push_back({{"level", m.level},
                      {"into", m.into},
                      {"threads", m.threads},
                      {"triad", m.triad},
                      {"into_triad", m.into_triad},
                      {"note", m.note}});
  j["merged"] = merged;
  // Per level, the thread count with the highest triad: the roof a full-machine step meets.
  for (const auto& l : summary) {
    if (j.contains(l.level) && j[l.level]["triad"].get<double>() >= l.triad) continue;
    j[l.level] = {{"threads", l.threads},
                  {"read", l.read},
                  {"write", l.write},
                  {"copy", l.copy},
                  {"triad", l.triad},
                  {"capacity_bytes", l.capacity_bytes},
                  {"working_set_bytes", l.working_set_bytes}};
  }
  Json curve = Json::array();
  for (const auto& p : points)
    curve.push_back({{"kernel", bw_kernel_name(p.kernel)},
                     {"threads", p.threads},
                     {"working_set_bytes", p.working_set_bytes},
                     {"bytes_per_s", p.bytes_per_s},
                     {"disturbed", p.disturbed}});
  j["curve"] = curve;
  return j;
}

}  // namespace

std::vector<int> probe_thread_counts(int max_threads, bool all) {
  std::vector<int> out = {1};
  if (all)
    for (int t = 2; t < max_threads; t *= 2) out.push_back(t);
  if (max_threads > 1) out.push_back(max_threads);
  return out;
}

nlohmann::ordered_json run_probe(const ProbeOptions& options, const ProbeProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  auto note = [&](const std::string& stage) {
    if (progress) progress(stage);
  };
  const CpuFeatures cpu = detect_cpu_features();
  const int max_threads = options.max_threads > 0
                              ? options.max_threads
                              : std::max(1, static_cast<int>(allowed_cpus().size()));
  const ProbeBudget budget = options.thorough ? thorough_budget() : quick_budget();
  const std::vector<int> threads = probe_thread_counts(max_threads, options.thorough);

  Json doc;
  doc["plumb_probe_version"] = kProbeDocumentVersion;
  doc["mode"] = options.thorough ? "thorough" : "quick";
  doc["measured_at"] = utc_now_iso8601();
  doc["max_threads"] = max_threads;

  note("core clock");
  const FrequencyInfo freq = detect_frequency();
  const CacheInventory inventory = detect_cache_levels();
  const std::vector<CacheLevel>& caches = inventory.levels;
  doc["machine"] = machine_json(cpu, freq, inventory);

  note("GEMM peaks");
  const auto gemms =
      measure_gemm_peaks(options.thorough ? 2048 : 1024, threads, options.thorough ? 1.0 : 0.1);
  note("instruction peaks");
  std::vector<Dtype> dtypes;  // every row of the dtype table has peaks, in its order
  for (const DtypeInfo& row : dtype_table()) dtypes.push_back(row.dtype);
  const std::vector<InstructionPeak> measured =
      measure_engine_peaks(dtypes, max_threads, budget.peak_seconds_per_point);
  Json peaks;
  for (Dtype dtype : dtypes) {
    std::vector<InstructionPeak> engines;
    for (const InstructionPeak& peak : measured)
      if (peak.dtype == dtype_name(dtype)) engines.push_back(peak);
    peaks[dtype_name(dtype)] = dtype_json(dtype, engines, gemms, cpu, freq);
  }
  doc["peaks"] = peaks;

  note("memory bandwidth");
  BwSweepOptions sweep;
  sweep.working_sets = default_working_sets(caches, options.thorough, max_threads);
  sweep.threads = threads;
  sweep.seconds_per_point = budget.bw_seconds_per_point;
  doc["bandwidth"] = bandwidth_json(sweep_bandwidth(sweep), caches, threads);
  note("GPU");
  doc["gpu"] = probe_gpu(options.thorough);
  doc["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return doc;
}

}  // namespace plumb::platform
