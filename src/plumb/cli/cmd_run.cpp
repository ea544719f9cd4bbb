// plumb run (one workload, one mode) and plumb suite (every workload of a suite, both modes):
// measure with the steady-state runner, store every sample, print a table or JSON.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/precision.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/run/runner.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

// Measurement options shared by run and suite.
// Runs, stores and returns the stored record (what --json prints is what export prints).
store::StoredRun run_and_store(const Workload& w, const run::RunOptions& options,
                               store::ResultsStore& db, const MeasureFlags& f) {
  auto progress = [&](const std::string& line) {
    std::cerr << "  " << w.info.name << " " << mode_name(options.mode) << ": " << line << '\n';
  };
  std::cerr << fmt::format("running {} {} batch {} threads {} {} on {} ...\n", w.info.name,
                           mode_name(options.mode), options.config.get_int("batch"),
                           options.threads, dtype_name(options.dtype), options.device);
  // Before the run: the load and competition it records describe the machine, not this run.
  auto env = platform::capture_environment(options.threads, options.device);
  run::RunResult result = run::run_workload(w, options, progress);
  for (const auto& warning : result.warnings) std::cerr << "  warning: " << warning << '\n';
  const int64_t id = db.save_run(options, result, env, f.tag);
  auto stored = db.load_run(id, /*with_samples=*/true);
  PLUMB_ASSERT(stored.has_value(), "run vanished right after it was stored");
  return *stored;
}

std::vector<std::string> summary_row(const store::StoredRun& r) {
  const auto& s = r.result.step_time;
  const bool ok = r.result.status == run::RunStatus::kOk;
  return {r.workload,
          r.mode,
          r.dtype,
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

const std::vector<std::string> kSummaryHeader = {
    "workload", "mode",      "dtype",    "batch",  "threads", "status", "throughput",
    "unit",     "mean step", "p95 step", "ci +/-", "n",       "run id"};

void print_run_human(const store::StoredRun& r, const std::string& db_path) {
  Table table(kSummaryHeader);
  table.add_row(summary_row(r));
  table.print(std::cout);
  const auto& s = r.result.step_time;
  for (const auto& note : r.result.precision_notes) std::cout << note << '\n';
  if (r.result.status == run::RunStatus::kUnsupported) {
    std::cout << r.result.message << '\n';
  } else if (r.result.status != run::RunStatus::kOk) {
    std::cout << "run failed: " << r.result.message << '\n';
  } else {
    std::cout << fmt::format(
        "step time: median {}  min {}  p5 {}  max {}  cv {}; warm-up {} iterations ({})\n",
        format_seconds(s.median), format_seconds(s.min), format_seconds(s.p5),
        format_seconds(s.max), format_percent(s.cv), r.result.warmup_s.size(),
        r.result.steady_detected ? "steady state detected" : "cap reached, not steady");
    if (r.mode == "infer")
      std::cout << fmt::format("latency per batch: p50 {}  p90 {}  p99 {}\n", format_seconds(s.p50),
                               format_seconds(s.p90), format_seconds(s.p99));
    std::cout << fmt::format("cpu utilisation: {} of {} thread(s)\n",
                             format_percent(r.result.cpu_utilization), r.threads);
  }
  std::cout << "stored as run " << r.id << " in " << db_path << "\nreproduce: " << r.result.command
            << '\n';
}

}  // namespace

void add_run_commands(CLI::App& app, int& exit_code) {
  // plumb run
  {
    auto* cmd = app.add_subcommand("run", "Measure one workload in one mode");
    auto name = std::make_shared<std::string>();
    auto flags = std::make_shared<MeasureFlags>();
    auto overrides = std::make_shared<ConfigOverrides>();
    cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
    cmd->add_option("--mode", flags->mode, "train or infer")->capture_default_str();
    add_config_options(*cmd, *overrides);
    add_measure_options(*cmd, *flags, 60, 60);
    cmd->callback([name, flags, overrides, &exit_code] {
      const Workload& w = workloads::default_registry().get(*name);
      const Mode mode = parse_mode(flags->mode);
      const auto plan = make_options(w, resolve_config(w, *overrides), mode, *flags);
      auto db = store::ResultsStore::open(flags->db);  // fail before minutes of measuring
      std::vector<store::StoredRun> done;
      for (const auto& options : plan) {
        done.push_back(run_and_store(w, options, *db, *flags));
        if (done.back().result.status != run::RunStatus::kOk) exit_code = 1;
      }
      if (flags->json && done.size() == 1) {
        std::cout << json_text(store::run_json(done.front(), /*with_samples=*/true), 2) << '\n';
      } else if (flags->json) {
        nlohmann::ordered_json out;
        out["runs"] = nlohmann::ordered_json::array();
        for (const auto& r : done) out["runs"].push_back(store::run_json(r, true));
        std::cout << json_text(out, 2) << '\n';
      } else {
        for (const auto& r : done) print_run_human(r, db->path());
      }
    });
  }
  // plumb suite
  {
    auto* cmd = app.add_subcommand(
        "suite",
        "Measure every workload (or one suite) in train and infer at CPU-friendly batches");
    auto suite = std::make_shared<std::string>();
    auto modes = std::make_shared<std::string>("train,infer");
    auto flags = std::make_shared<MeasureFlags>();
    cmd->add_option("--suite", *suite,
                    "Only these suites, comma-separated: fathom,tbd (default: every workload)");
    cmd->add_option("--modes", *modes, "Comma-separated modes")->capture_default_str();
    add_measure_options(*cmd, *flags, 20, 30);
    cmd->callback([suite, modes, flags, &exit_code] {
      const auto list = workloads::default_registry().list(*suite);
      std::vector<Mode> mode_list;
      for (const auto& m : split(*modes, ',')) mode_list.push_back(parse_mode(m));
      // Validate everything up front so a typo fails before the first minute of measuring.
      std::vector<run::RunOptions> plan;
      std::vector<const Workload*> plan_workloads;
      for (const auto* w : list) {
        for (Mode m : mode_list) {
          if (m == Mode::kTrain && !w->info.train_by_default) continue;  // e.g. 32x48d
          for (auto& o : make_options(*w, suite_config(*w), m, *flags)) {
            plan.push_back(std::move(o));
            plan_workloads.push_back(w);
          }
        }
      }
      auto db = store::ResultsStore::open(flags->db);
      std::vector<store::StoredRun> done;
      for (size_t i = 0; i < plan.size(); ++i) {
        done.push_back(run_and_store(*plan_workloads[i], plan[i], *db, *flags));
        if (done.back().result.status != run::RunStatus::kOk) exit_code = 1;
      }
      if (flags->json) {
        nlohmann::ordered_json out;
        out["runs"] = nlohmann::ordered_json::array();
        for (const auto& r : done) out["runs"].push_back(store::run_json(r, false));
        std::cout << json_text(out, 2) << '\n';
        return;
      }
      Table table(kSummaryHeader);
      for (const auto& r : done) table.add_row(summary_row(r));
      std::cout << '\n';
      table.print(std::cout);
      for (const auto* w : list) {
        if (!w->info.suite_settings.empty())
          std::cout << "reduced for the CPU suite: " << w->info.name << " "
                    << join(w->info.suite_settings, " ") << " (published size: plumb run "
                    << w->info.name << ")\n";
      }
      std::cout << "\n" << done.size() << " runs stored in " << db->path() << '\n';
    });
  }
}

}  // namespace plumb::cli
