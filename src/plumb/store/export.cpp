// plumb export: the whole store as one JSON document, or one table as CSV.
//
// The JSON field names and CSV columns are a public interface (docs/json.md): scripts and
// notebooks read them, so they change only together with plumb_schema_version.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/store/run_record.h"
#include "plumb/store/sweep_records.h"

namespace plumb::store {

namespace {

// Every statistic of a summary (kSummaryStatistics' names) and its sample count.
nlohmann::ordered_json summary_json(const run::Summary& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& statistic : run::kSummaryStatistics)
    j[statistic.name] = json_number(s.*statistic.value);
  j["n"] = s.n;
  return j;
}

// A generative run's phases (docs/json.md, "generation").
nlohmann::ordered_json generation_json(const run::GenerationTimes& g, bool with_samples) {
  nlohmann::ordered_json j = {{"batch", g.batch},
                              {"prompt", g.prompt},
                              {"gen", g.gen},
                              {"kv_cache_bytes", g.kv_cache_bytes},
                              {"prefill_tokens_per_s", json_number(g.prefill_tokens_per_s)},
                              {"decode_tokens_per_s", json_number(g.decode_tokens_per_s)},
                              {"ttft_s", summary_json(g.ttft)},
                              {"tpot_s", summary_json(g.tpot)},
                              {"inter_token_s", summary_json(g.inter_token)}};
  if (with_samples) {
    j["ttft_samples"] = g.ttft_s;
    j["decode_samples"] = g.decode_s;
  }
  return j;
}

}  // namespace

nlohmann::ordered_json run_json(const StoredRun& r, bool with_samples) {
  const run::RunResult& res = r.result;
  const run::Summary& s = res.step_time;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["id"] = r.id;
  detail::add_record_json(j, r);
  j["status"] = run::status_name(res.status);
  j["message"] = res.message;
  j["command"] = res.command;
  j["started_at"] = res.started_at;
  j["throughput"] = json_number(res.throughput);
  j["throughput_unit"] = res.throughput_unit;
  j["step_time"] = nlohmann::ordered_json::object();
  j["latency"] = nlohmann::ordered_json::object();
  for (const auto& statistic : run::kSummaryStatistics)
    j[statistic.latency ? "latency" : "step_time"][statistic.name] =
        json_number(s.*statistic.value);
  j["step_time"]["n"] = s.n;
  j["warmup_iterations"] = r.warmup_iterations;
  j["steady_detected"] = res.steady_detected;
  j["target_met"] = res.target_met;
  j["cpu_utilization"] = json_number(res.cpu_utilization);
  j["config"] = r.config;
  j["environment"] = platform::to_json(r.environment);
  j["warnings"] = res.warnings;
  j["precision_notes"] = res.precision_notes;
  j["injected_delay_ms"] = res.injected_delay_ms;
  if (res.generation) j["generation"] = generation_json(*res.generation, with_samples);
  if (with_samples) {
    j["samples"] = res.samples_s;
    j["warmup_samples"] = res.warmup_s;
  }
  return j;
}

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled inside.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// Shortest text that reads back to the same double; undefined (NaN) is an empty field.
std::string csv_number(double x) {
  return std::isnan(x) ? "" : fmt::format("{}", x);
}

// A spreadsheet runs a cell that starts with =, +, - or @ (or a tab or carriage return) as a
// formula, so a tag or config value could run one when the CSV is opened. Such text gets a
// leading ' (the cell then shows as text); a field that is a plain number ("-1.5") stays one.
// NUL bytes are dropped: spreadsheet and CSV tools stop reading a field at them.
std::string csv_inert(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  if (text.empty() || std::string_view("=+-@\t\r").find(text.front()) == std::string_view::npos)
    return text;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size()) return text;
  return "'" + text;
}

void write_csv_row(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out << ',';
    out << csv_field(csv_inert(fields[i]));
  }
  out << '\n';
}

// A run's statistics as CSV fields, in kSummaryStatistics' order with step_time_n before the
// latency ones: their column names (no summary) or their values.
std::vector<std::string> statistic_fields(const run::Summary* s) {
  std::vector<std::string> out;
  bool n_written = false;
  for (const auto& statistic : run::kSummaryStatistics) {
    if (statistic.latency && !n_written) {
      out.push_back(s != nullptr ? std::to_string(s->n) : "step_time_n");
      n_written = true;
    }
    out.push_back(s != nullptr ? csv_number(s->*statistic.value)
                               : (statistic.latency ? "latency_" : "step_time_") +
                                     std::string(statistic.name));
  }
  return out;
}

// `head`, then the statistics' fields, then `tail`: one row of the runs table.
std::vector<std::string> runs_row(std::vector<std::string> head, const run::Summary* s,
                                  const std::vector<std::string>& tail) {
  const auto statistics = statistic_fields(s);
  head.insert(head.end(), statistics.begin(), statistics.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

void export_runs_csv(const ResultsStore& store, std::ostream& out) {
  // Nested JSON names flattened with '_' (step_time.mean -> step_time_mean).
  write_csv_row(out, runs_row({"id", "workload", "mode", "batch", "threads", "device", "tag",
                               "status", "throughput", "throughput_unit"},
                              nullptr,
                              {"started_at", "host", "cpu_model", "libtorch_version",
                               "plumb_version", "git_commit", "command"}));
  for (const StoredRun& r : store.load_runs(false)) {
    const run::RunResult& res = r.result;
    const platform::Environment& e = r.environment;
    write_csv_row(
        out, runs_row({std::to_string(r.id), r.workload, r.mode, std::to_string(r.batch),
                       std::to_string(r.threads), r.device, r.tag, run::status_name(res.status),
                       csv_number(res.throughput), res.throughput_unit},
                      &res.step_time,
                      {res.started_at, e.host, e.cpu_model, e.libtorch_version, e.plumb_version,
                       e.git_commit, res.command}));
  }
}

void export_samples_csv(const ResultsStore& store, std::ostream& out) {
  write_csv_row(out, {"run_id", "phase", "index", "seconds"});
  for (const StoredRun& r : store.load_runs(true)) {
    const std::string id = std::to_string(r.id);
    for (size_t i = 0; i < r.result.warmup_s.size(); ++i)
      write_csv_row(out, {id, "warmup", std::to_string(i), csv_number(r.result.warmup_s[i])});
    for (size_t i = 0; i < r.result.samples_s.size(); ++i)
      write_csv_row(out, {id, "measure", std::to_string(i), csv_number(r.result.samples_s[i])});
  }
}

}  // namespace

nlohmann::ordered_json probe_json(const StoredProbe& probe) {
  nlohmann::ordered_json j = {{"probe_id", probe.id}, {"machine_key", probe.machine}};
  for (const auto& [key, value] : probe.document.items()) j[key] = value;
  j["environment"] = platform::to_json(probe.environment);
  return j;
}

void export_json(const ResultsStore& store, std::ostream& out) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["plumb_schema_version"] = kSchemaVersion;
  doc["runs"] = nlohmann::ordered_json::array();
  for (const StoredRun& r : store.load_runs(true))
    doc["runs"].push_back(run_json(r, /*with_samples=*/true));
  doc["probes"] = nlohmann::ordered_json::array();
  for (const StoredProbe& p : store.load_probes()) doc["probes"].push_back(probe_json(p));
  doc["sweeps"] = nlohmann::ordered_json::array();
  for (const StoredSweep& s : store.load_sweeps()) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const SweepPointRecord& p : store.load_sweep_points(s.id))
      points.push_back({{"index", p.index},
                        {"key", p.key},
                        {"mode", p.mode},
                        {"params", p.params},
                        {"status", p.status},
                        {"message", p.message},
                        {"run_id", p.run_id},
                        {"memory_id", p.memory_id},
                        {"profile_id", p.profile_id},
                        {"metrics", p.metrics},
                        {"warmup_s", p.warmup_s},
                        {"measure_s", p.measure_s},
                        {"wall_s", p.wall_s},
                        {"shard", p.shard},
                        {"finished_at", p.finished_at}});
    doc["sweeps"].push_back({{"id", s.id},
                             {"name", s.name},
                             {"workload", s.workload},
                             {"spec", nlohmann::ordered_json::parse(s.spec)},
                             {"created_at", s.created_at},
                             {"total_points", s.points},
                             {"points", points}});
  }
  doc["memory_profiles"] = nlohmann::ordered_json::array();
  for (const StoredMemoryProfile& m : store.load_memory_profiles())
    doc["memory_profiles"].push_back(memory_profile_json(m));
  doc["precision_comparisons"] = nlohmann::ordered_json::array();
  for (const auto& p : store.load_precision_comparisons())
    doc["precision_comparisons"].push_back(
        {{"run_id", p.run_id},
         {"reference_run_id", p.reference_run_id},
         {"workload", p.workload},
         {"mode", p.mode},
         {"dtype", p.dtype},
         {"memory_format", p.memory_format},
         {"batch", p.batch},
         {"threads", p.threads},
         {"tag", p.tag},
         {"speedup_vs_fp32", ratio_json({p.speedup, p.speedup_low, p.speedup_high})},
         {"error_measured", p.error_measured},
         {"relative_l2", json_number(p.error.relative_l2)},
         {"max_abs", json_number(p.error.max_abs)},
         {"cosine", json_number(p.error.cosine)},
         {"agreement", json_number(p.error.agreement)},
         {"agreement_kind", p.error.agreement_kind},
         {"note", p.note}});
  doc["untimed_precisions"] = nlohmann::ordered_json::array();
  for (const auto& u : store.load_untimed_precisions())
    doc["untimed_precisions"].push_back({{"tag", u.tag},
                                         {"workload", u.workload},
                                         {"mode", u.mode},
                                         {"dtype", u.dtype},
                                         {"reason", u.reason},
                                         {"command", u.command},
                                         {"decided_at", u.decided_at}});
  out << json_text(doc, 2) << '\n';
}

void export_csv(const ResultsStore& store, const std::string& table, std::ostream& out) {
  if (table == "runs") {
    export_runs_csv(store, out);
  } else if (table == "samples") {
    export_samples_csv(store, out);
  } else {
    throw UsageError(
        fmt::format("unknown table '{}' for CSV export; valid tables: runs, samples", table));
  }
}

}  // namespace plumb::store
