// plumb characterize's JSON and text (see characterize_report.h).
#include "plumb/jobs/characterize_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/core/generation.h"
#include "plumb/core/json_number.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/core/text.h"
#include "plumb/jobs/dendrogram_text.h"
#include "plumb/report/text_table.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {
namespace {

using json = nlohmann::ordered_json;

// "infer 1.62x (dtype=bf16)": the headroom plumb tune found over the stock configuration.
std::string characterize_tuning_text(const std::map<std::string, store::StoredTuneSession>& tuned) {
  std::vector<std::string> parts;
  for (const auto& [mode, t] : tuned)
    parts.push_back(fmt::format("{} {} ({})", mode,
                                ratio_text({t.speedup, t.speedup_low, t.speedup_high}),
                                t.result.best_setting()));
  return parts.empty() ? "-" : join(parts, ", ");
}

std::string characterize_top_categories(const store::StoredProfile* p, size_t n) {
  if (p == nullptr || p->result.profile.ops.empty()) return "-";
  const auto b = analysis::breakdown(p->result.profile, analysis::GroupBy::kCategory);
  std::vector<std::string> parts;
  for (size_t i = 0; i < b.rows.size() && i < n; ++i)
    parts.push_back(
        fmt::format("{} {}", b.rows[i].name, report::format_percent(b.rows[i].time_share, 0)));
  return join(parts, ", ");
}

std::string characterize_memory_text(const std::optional<store::StoredMemoryProfile>& m) {
  if (!m || m->result.status != run::RunStatus::kOk) return "-";
  return fmt::format("{}: {:.0f} MB, {}", m->mode,
                     static_cast<double>(m->result.breakdown.total_peak) / 1e6,
                     analysis::shares_text(analysis::memory_mix(m->result.breakdown), 1));
}

json characterize_bound_json(const analysis::BoundFinding& finding) {
  return {{"category", finding.category},
          {"category_share", json_number(finding.category_share)},
          {"bound", finding.bound},
          {"roof", finding.roof},
          {"roof_fraction", json_number(finding.roof_fraction)},
          {"memory_bound_share", json_number(finding.memory_bound_share)},
          {"overhead_share", json_number(finding.overhead_share)},
          {"step_utilisation",
           finding.step_utilisation >= 0 ? json_number(finding.step_utilisation) : nullptr},
          {"sentence", finding.sentence}};
}

// A generative run's two phases: time to first token, time per output token, both rates.
json characterize_generation_json(const run::GenerationTimes& g) {
  return {{"batch", g.batch},
          {"prompt", g.prompt},
          {"gen", g.gen},
          {"ttft_s", json_number(g.ttft.mean)},
          {"tpot_s", json_number(g.tpot.mean)},
          {"prefill_tokens_per_s", json_number(g.prefill_tokens_per_s)},
          {"decode_tokens_per_s", json_number(g.decode_tokens_per_s)},
          {"kv_cache_bytes", json_number(g.kv_cache_bytes)}};
}

json characterize_phases_json(const std::vector<CharacterizePhase>& phases) {
  json out = json::array();
  for (const auto& p : phases)
    out.push_back({{"phase", phase_name(p.time.phase)},
                   {"calls", json_number(p.time.calls)},
                   {"seconds", json_number(p.time.seconds)},
                   {"per_call_s", json_number(p.time.per_call_s())},
                   {"bound", characterize_bound_json(p.bound)}});
  return out;
}

json characterize_decode_json(const CharacterizeDecode& d) {
  json points = json::array();
  for (const auto& p : d.points)
    points.push_back({{"size", p.size},
                      {"run_id", p.run_id},
                      {"bytes_per_token", json_number(p.bytes_per_token)},
                      {"tpot_s", json_number(p.tpot_s)},
                      {"tokens_per_s", json_number(p.tokens_per_s)}});
  json fit = nullptr;
  if (d.fit)
    fit = {{"bytes_per_s", json_number(d.fit->bytes_per_s)},
           {"overhead_s", json_number(d.fit->overhead_s)},
           {"r_squared", json_number(d.fit->r_squared)},
           {"triad_fraction", d.triad_fraction > 0 ? json_number(d.triad_fraction) : nullptr}};
  return {{"points", points}, {"fit", fit}};
}

void add_runs_and_profiles_json(const CharacterizeWorkload& s, json& j) {
  for (const char* mode : {"train", "infer"}) {
    const auto it = s.runs.find(mode);
    if (it == s.runs.end()) continue;
    const auto& r = it->second.result;
    j["runs"][mode] = {{"run_id", it->second.id},
                       {"status", run::status_name(r.status)},
                       {"throughput", json_number(r.throughput)},
                       {"unit", r.throughput_unit}};
    if (r.generation) j["runs"][mode]["generation"] = characterize_generation_json(*r.generation);
  }
  for (const auto& [mode, p] : s.profiles) {
    j["profiles"][mode] = {{"profile_id", p.id},
                           {"status", run::status_name(p.result.status)},
                           {"top_categories", characterize_top_categories(&p, 3)}};
    const auto bound = s.bounds.find(mode);
    if (bound != s.bounds.end())
      j["profiles"][mode]["bound"] = characterize_bound_json(bound->second);
    const auto phases = s.phases.find(mode);
    if (phases != s.phases.end())
      j["profiles"][mode]["phases"] = characterize_phases_json(phases->second);
  }
  if (s.memory)
    j["memory"] = {{"memory_id", s.memory->id},
                   {"mode", s.memory->mode},
                   {"status", run::status_name(s.memory->result.status)},
                   {"total_peak_bytes", s.memory->result.breakdown.total_peak}};
  if (s.kv_cache)
    j["kv_cache"] = {{"memory_id", s.kv_cache->memory_id},
                     {"bytes", s.kv_cache->bytes},
                     {"bytes_per_token", json_number(s.kv_cache->bytes_per_token)},
                     {"share_of_peak", json_number(s.kv_cache->share_of_peak)}};
  if (s.decode) j["decode"] = characterize_decode_json(*s.decode);
}

void add_precisions_and_tuning_json(const CharacterizeWorkload& s, json& j) {
  j["precisions"] = json::array();
  for (const auto& c : s.precisions) {
    const auto speed = ratio_json({c.speedup, c.speedup_low, c.speedup_high});
    j["precisions"].push_back({{"dtype", c.dtype},
                               {"run_id", c.run_id},
                               {"speedup", speed["ratio"]},
                               {"ci_low", speed["ci_low"]},
                               {"ci_high", speed["ci_high"]},
                               {"speedup_reason", speed["reason"]},
                               {"relative_l2", json_number(c.error.relative_l2)},
                               {"agreement", json_number(c.error.agreement)},
                               {"agreement_kind", c.error.agreement_kind}});
  }
  j["untimed_precisions"] = json::array();
  for (const auto& u : s.untimed)
    j["untimed_precisions"].push_back(
        {{"dtype", u.dtype}, {"reason", u.reason}, {"command", u.command}});
  j["tuning"] = json::array();
  for (const auto& [mode, t] : s.tuned)
    j["tuning"].push_back({{"mode", mode},
                           {"tune_id", t.id},
                           {"batch", t.batch},
                           {"threads", t.threads},
                           {"speedup", json_number(t.speedup)},
                           {"ci_low", json_number(t.speedup_low)},
                           {"ci_high", json_number(t.speedup_high)},
                           {"best", t.result.best_setting()},
                           {"command", t.best_command}});
}

json characterize_workload_json(const CharacterizeWorkload& s) {
  json j;
  j["workload"] = s.workload;
  add_runs_and_profiles_json(s, j);
  add_precisions_and_tuning_json(s, j);
  return j;
}

std::vector<std::string> characterize_workload_cells(const CharacterizeWorkload& s,
                                                     bool any_tuned) {
  std::vector<std::string> cells = {s.workload};
  for (const char* mode : {"train", "infer"}) {
    const auto it = s.runs.find(mode);
    if (it == s.runs.end()) {
      cells.push_back("-");
      continue;
    }
    const auto& r = it->second.result;
    cells.push_back(
        r.status == run::RunStatus::kOk
            ? fmt::format("{} {}", report::format_number(r.throughput, 1), r.throughput_unit)
            : run::status_name(r.status));
  }
  const auto infer_profile = s.profiles.find("infer");
  cells.push_back(characterize_top_categories(
      infer_profile == s.profiles.end() ? nullptr : &infer_profile->second, 2));
  cells.push_back(characterize_memory_text(s.memory));
  std::vector<std::string> prec;
  for (const auto& c : s.precisions) prec.push_back(analysis::precision_gain_text(c));
  for (const auto& r : s.unsupported)
    prec.push_back(std::string(dtype_name(r.dtype)) + " unsupported");
  for (const auto& u : s.untimed) prec.push_back(u.dtype + " not timed (no units)");
  cells.push_back(prec.empty() ? "-" : join(prec, ", "));
  if (any_tuned) cells.push_back(characterize_tuning_text(s.tuned));
  return cells;
}

void print_characterize_table(const CharacterizeResult& r, std::ostream& out) {
  std::vector<std::string> header = {"workload",    "train",
                                     "infer",       "where time goes (infer)",
                                     "memory peak", "precisions (infer x fp32, error)"};
  if (r.any_tuned) header.push_back("tuning headroom (plumb tune)");
  report::TextTable table(header);
  for (const auto& s : r.workloads) table.add_row(characterize_workload_cells(s, r.any_tuned));
  table.print(out);
}

// Why a precision was not timed, once per reason, with how to time it anyway.
void print_characterize_untimed(const CharacterizeResult& r, std::ostream& out) {
  std::map<std::string, std::vector<std::string>> untimed_by_reason;
  for (const auto& s : r.workloads)
    for (const auto& u : s.untimed) untimed_by_reason[u.reason].push_back(u.command);
  for (const auto& [reason, commands] : untimed_by_reason)
    out << fmt::format(
        "\nnot timed: {}. Time it anyway: {}{}\n", reason, commands.front(),
        commands.size() > 1 ? fmt::format(" (and {} more workloads)", commands.size() - 1) : "");
}

// The generative workloads' inference runs: each phase's time and rate, and the KV cache.
void print_characterize_generation(const CharacterizeResult& r, std::ostream& out) {
  report::TextTable t({"generation (infer)", "prompt+gen", "TTFT", "TPOT", "prefill tokens/s",
                       "decode tokens/s", "KV cache"});
  bool any = false;
  for (const auto& s : r.workloads) {
    const auto it = s.runs.find("infer");
    if (it == s.runs.end() || !it->second.result.generation ||
        it->second.result.status != run::RunStatus::kOk)
      continue;
    const auto& g = *it->second.result.generation;
    any = true;
    t.add_row({s.workload, fmt::format("{}+{} x{}", g.prompt, g.gen, g.batch),
               report::format_seconds(g.ttft.mean),
               g.gen > 1 ? report::format_seconds(g.tpot.mean) : "-",
               report::format_number(g.prefill_tokens_per_s, 1),
               g.gen > 1 ? report::format_number(g.decode_tokens_per_s, 1) : "-",
               s.kv_cache ? fmt::format("{} ({}/token)", report::format_bytes(s.kv_cache->bytes),
                                        report::format_bytes(s.kv_cache->bytes_per_token))
                          : report::format_bytes(g.kv_cache_bytes)});
  }
  if (!any) return;
  out << '\n';
  t.print(out);
}

// Decode on the memory roof: each size's rate against the bytes a token reads, and the fit.
void print_characterize_decode(const CharacterizeResult& r, std::ostream& out) {
  for (const auto& s : r.workloads) {
    if (!s.decode) continue;
    std::vector<std::string> points;
    for (const auto& p : s.decode->points)
      points.push_back(fmt::format("{} {} tokens/s at {}/token", p.size,
                                   report::format_number(p.tokens_per_s, 1),
                                   report::format_bytes(p.bytes_per_token)));
    out << fmt::format("\n{} decode at batch 1: {}", s.workload, join(points, "; "));
    const auto& fit = s.decode->fit;
    if (fit && std::isfinite(fit->bytes_per_s))
      out << fmt::format(".\n  fitted roof: TPOT = {} + bytes / {:.2f} GB/s (R^2 {:.3f}){}",
                         report::format_seconds(fit->overhead_s), fit->bytes_per_s / 1e9,
                         fit->r_squared,
                         s.decode->triad_fraction > 0
                             ? fmt::format(", {} of the probe's DRAM triad ceiling",
                                           report::format_percent(s.decode->triad_fraction, 0))
                             : std::string());
    else if (fit)
      out << ".\n  no roof fits: the time per token does not grow with the bytes over these sizes";
    out << '\n';
  }
}

void print_characterize_cross_set(const CharacterizeCrossSet& c, std::ostream& out) {
  const size_t shown = std::min<size_t>(c.vectors.features.size(), 7);
  std::vector<std::string> header = {c.mode + ": share of operator time"};
  for (size_t f = 0; f < shown; ++f) header.push_back(c.vectors.features[f]);
  report::TextTable t(header);
  for (size_t i = 0; i < c.vectors.labels.size(); ++i) {
    std::vector<std::string> row = {c.vectors.labels[i]};
    for (size_t f = 0; f < shown; ++f)
      row.push_back(report::format_percent(c.vectors.values[i][f], 0));
    t.add_row(row);
  }
  out << '\n';
  t.print(out);
  out << fmt::format(
      "\n{}: workloads clustered by those shares (cosine distance, centroid "
      "linkage)\n{}",
      c.mode, dendrogram_text(c.tree));
}

}  // namespace

json characterize_json(const CharacterizeResult& r) {
  json out;
  out["name"] = r.name;
  out["tag"] = r.tag;
  out["threads"] = r.threads;
  out["items"] = r.items;
  out["measured"] = r.measured;
  out["already_stored"] = r.already_stored;
  out["failed"] = r.failed;
  out["workloads"] = json::array();
  for (const auto& s : r.workloads) out["workloads"].push_back(characterize_workload_json(s));
  out["cross_set"] = json::array();
  for (const auto& c : r.cross_set) {
    json rows = json::array();
    for (size_t i = 0; i < c.vectors.labels.size(); ++i)
      rows.push_back({{"label", c.vectors.labels[i]}, {"shares", c.vectors.values[i]}});
    out["cross_set"].push_back({{"mode", c.mode},
                                {"features", c.vectors.features},
                                {"items", rows},
                                {"dendrogram", analysis::dendrogram_json(c.tree)}});
  }
  return out;
}

void print_characterize(const CharacterizeResult& r, std::ostream& out) {
  print_characterize_table(r, out);
  print_characterize_untimed(r, out);
  bool any_bound = false;
  for (const auto& s : r.workloads) any_bound = any_bound || !s.bounds.empty();
  if (any_bound) out << "\nwhat bounds each profiled step:\n";
  for (const auto& s : r.workloads)
    for (const auto& [mode, finding] : s.bounds) {
      out << "  " << fmt::format("{} {}: {}", s.workload, mode, finding.sentence) << '\n';
      const auto phases = s.phases.find(mode);
      if (phases == s.phases.end()) continue;
      for (const auto& p : phases->second)
        out << "    "
            << fmt::format("{} ({} per call): {}", phase_name(p.time.phase),
                           report::format_seconds(p.time.per_call_s()), p.bound.sentence)
            << '\n';
    }
  print_characterize_generation(r, out);
  print_characterize_decode(r, out);
  for (const auto& c : r.cross_set) print_characterize_cross_set(c, out);
  out << fmt::format(
      "\nstored under '{}' in {}: plumb report --db {} draws every workload's profile, "
      "roofline, memory and precision views and the cross-workload similarity\n",
      r.tag, r.db_path, r.db_path);
}

}  // namespace plumb::jobs
