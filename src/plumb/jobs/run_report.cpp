// plumb run's and plumb suite's reporters (see run_report.h).
#include "plumb/jobs/run_report.h"

#include <string>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/report/text_table.h"
#include "plumb/store/record_json.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;
using report::format_seconds;

std::vector<std::string> run_summary_row(const store::StoredRun& r) {
  const auto& s = r.result.step_time;
  const bool ok = r.result.status == run::RunStatus::kOk;
  return {r.workload,
          r.mode,
          dtype_name(r.dtype),
          std::to_string(r.batch),
          std::to_string(r.threads),
          run::status_name(r.result.status),
          ok ? format_number(r.result.throughput, 2) : "-",
          r.result.throughput_unit,
          format_seconds(s.mean),
          format_seconds(s.p95),
          format_percent(s.ci_rel),
          std::to_string(s.n),
          std::to_string(r.id)};
}

const std::vector<std::string> kRunSummaryHeader = {
    "workload", "mode",      "dtype",    "batch",  "threads", "status", "throughput",
    "unit",     "mean step", "p95 step", "ci +/-", "n",       "run id"};

// A generative run's two phases: the prefill's time to first token and rate, the decode's time
// per output token, its spread over single tokens, its rate, and the cache it read.
void print_generation(std::ostream& out, const run::GenerationTimes& g) {
  out << fmt::format("generation: batch {} x (prompt {} + gen {} tokens), KV cache {}\n", g.batch,
                     g.prompt, g.gen, report::format_bytes(g.kv_cache_bytes));
  out << fmt::format("prefill: TTFT mean {}  p50 {}  p99 {}  ci +/- {}; {} prompt tokens/s\n",
                     format_seconds(g.ttft.mean), format_seconds(g.ttft.p50),
                     format_seconds(g.ttft.p99), format_percent(g.ttft.ci_rel),
                     format_number(g.prefill_tokens_per_s, 1));
  if (g.gen < 2) {
    out << "decode: none (gen 1: the prefill makes the only token)\n";
    return;
  }
  out << fmt::format(
      "decode: TPOT mean {}  p50 {}  p99 {}  ci +/- {}; {} tokens/s; inter-token p50 {}  p99 {}\n",
      format_seconds(g.tpot.mean), format_seconds(g.tpot.p50), format_seconds(g.tpot.p99),
      format_percent(g.tpot.ci_rel), format_number(g.decode_tokens_per_s, 1),
      format_seconds(g.inter_token.p50), format_seconds(g.inter_token.p99));
}

void print_run(std::ostream& out, const store::StoredRun& r, const std::string& db_path) {
  report::TextTable table(kRunSummaryHeader);
  table.add_row(run_summary_row(r));
  table.print(out);
  const auto& s = r.result.step_time;
  for (const auto& note : r.result.precision_notes) out << note << '\n';
  if (r.result.status == run::RunStatus::kUnsupported) {
    out << r.result.message << '\n';
  } else if (r.result.status != run::RunStatus::kOk) {
    out << "run failed: " << r.result.message << '\n';
  } else {
    out << fmt::format(
        "step time: median {}  min {}  p5 {}  max {}  cv {}; warm-up {} iterations ({})\n",
        format_seconds(s.median), format_seconds(s.min), format_seconds(s.p5),
        format_seconds(s.max), format_percent(s.cv), r.result.warmup_s.size(),
        r.result.steady_detected ? "steady state detected" : "cap reached, not steady");
    if (r.mode == "infer")
      out << fmt::format("latency per batch: p50 {}  p90 {}  p99 {}\n", format_seconds(s.p50),
                         format_seconds(s.p90), format_seconds(s.p99));
    if (r.result.generation) print_generation(out, *r.result.generation);
    out << fmt::format("cpu utilisation: {} of {} thread(s)\n",
                       format_percent(r.result.cpu_utilization), r.threads);
  }
  out << "stored as run " << r.id << " in " << db_path << "\nreproduce: " << r.result.command
      << '\n';
}

}  // namespace

nlohmann::ordered_json run_job_json(const RunJobResult& result, RunJson shape) {
  const bool samples = shape == RunJson::kRun;
  if (shape == RunJson::kRun && result.runs.size() == 1)
    return store::run_json(result.runs.front(), samples);
  nlohmann::ordered_json out;
  out["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : result.runs) out["runs"].push_back(store::run_json(r, samples));
  return out;
}

void print_runs(std::ostream& out, const RunJobResult& result) {
  for (const auto& r : result.runs) print_run(out, r, result.db_path);
}

void print_suite(std::ostream& out, const RunJobResult& result,
                 const std::vector<const Workload*>& workloads) {
  report::TextTable table(kRunSummaryHeader);
  for (const auto& r : result.runs) table.add_row(run_summary_row(r));
  out << '\n';
  table.print(out);
  for (const auto* w : workloads) {
    if (!w->info.suite_settings.empty())
      out << "reduced for the CPU suite: " << w->info.name << " "
          << join(w->info.suite_settings, " ") << " (published size: plumb run " << w->info.name
          << ")\n";
  }
  out << "\n" << result.runs.size() << " runs stored in " << result.db_path << '\n';
}

}  // namespace plumb::jobs
