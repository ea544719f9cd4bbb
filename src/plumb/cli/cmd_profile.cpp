// plumb profile: operator-level profile of a workload (Fathom Sec. V): where the step's time
// goes by operator, category or layer, with FLOPs, bytes, rates and intensity per row; the
// cumulative "few ops dominate" count; training vs inference when both modes are asked for;
// and per-category thread scaling with Amdahl fits when several thread counts are.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/breakdown.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/atomic_file.h"
#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/profile/profiler.h"
#include "plumb/profile/trace_file.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct ProfileFlags {
  MeasureFlags measure;
  std::string threads;  // default: every CPU this process may use
  std::string by = "category";
  size_t top = 0;  // 0: all rows (JSON) / 15 rows (table)
  int steps = 3;
  std::string trace;  // Chrome trace-event file of the last observed step ("" = none)
};

// One file per pass: the path as given for a single pass, else "-<mode>-<threads>t" before
// the extension.
std::string trace_path(const std::string& path, const run::RunOptions& o, bool several) {
  if (!several) return path;
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string suffix = fmt::format("-{}-{}t", mode_name(o.mode), o.threads);
  return has_ext ? path.substr(0, dot) + suffix + path.substr(dot) : path + suffix;
}

nlohmann::ordered_json pass_json(const store::StoredProfile& p, analysis::GroupBy by, size_t top) {
  const auto& r = p.result;
  nlohmann::ordered_json j;
  j["profile_id"] = p.id;
  j["threads"] = p.threads;
  j["mode"] = p.mode;
  j["status"] = run::status_name(r.status);
  j["message"] = r.message;
  j["command"] = r.command;
  j["steps"] = r.profile.steps;
  j["step_s"] = json_number(r.profile.step_s);
  j["learning_step_s"] = json_number(r.learning_step_s);
  j["replayed_steps"] =
      r.replayed_steps >= 0 ? nlohmann::ordered_json(r.replayed_steps) : nlohmann::ordered_json();
  if (r.status != run::RunStatus::kOk && r.profile.ops.empty()) return j;
  const auto b = analysis::breakdown(r.profile, by);
  const auto curve = analysis::cumulative_curve(r.profile);
  double flops = 0, bytes = 0;
  for (const auto& row : b.rows) {
    flops += row.flops;
    bytes += row.bytes;
  }
  j["op_time_s"] = json_number(b.op_time_s);
  j["overhead_s"] = json_number(b.overhead_s);
  j["cpu_utilization"] = json_number(r.profile.cpu_utilization);
  j["flops"] = flops;
  j["bytes"] = bytes;
  j["uncosted_time_s"] = b.uncosted_time_s;
  j["uncosted_share"] = json_number(b.uncosted_share);
  j["uncosted_ops"] = b.uncosted_ops;
  j["ops_for_90_percent"] = curve.count_for_90;
  j["rows"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < b.rows.size() && (top == 0 || i < top); ++i) {
    const auto& row = b.rows[i];
    j["rows"].push_back({{"name", row.name},
                         {"time_s", row.time_s},
                         {"time_share", json_number(row.time_share)},
                         {"calls", row.calls},
                         {"flops", row.flops},
                         {"bytes", row.bytes},
                         {"gflops_per_s", row.gflops_per_s},
                         {"gbytes_per_s", row.gbytes_per_s},
                         {"intensity", row.intensity},
                         {"uncosted_time_s", row.uncosted_time_s}});
  }
  nlohmann::ordered_json cum = nlohmann::ordered_json::array();
  for (size_t i = 0; i < curve.names.size(); ++i)
    cum.push_back(
        {{"name", curve.names[i]}, {"share", curve.share[i]}, {"cumulative", curve.cumulative[i]}});
  j["cumulative"] = cum;
  return j;
}

void print_pass(const store::StoredProfile& p, analysis::GroupBy by, size_t top) {
  const auto& r = p.result;
  std::cout << fmt::format("\n{} {} batch {}, {} thread(s): {} step(s) observed, {} per step\n",
                           p.workload, p.mode, p.batch, p.threads, r.profile.steps,
                           format_seconds(r.profile.step_s));
  if (r.status != run::RunStatus::kOk)
    std::cout << "profile incomplete (" << run::status_name(r.status) << "): " << r.message << '\n';
  if (r.profile.ops.empty()) return;
  const auto b = analysis::breakdown(r.profile, by);
  Table t({"name", "time", "share", "calls", "GFLOP", "MB", "GFLOP/s", "GB/s", "FLOP/B"});
  const size_t limit = top == 0 ? 15 : top;
  for (size_t i = 0; i < b.rows.size() && i < limit; ++i) {
    const auto& row = b.rows[i];
    t.add_row({row.name, format_seconds(row.time_s), format_percent(row.time_share),
               format_number(row.calls, 0), format_number(row.flops / 1e9, 3),
               format_number(row.bytes / 1e6, 1), format_number(row.gflops_per_s, 2),
               format_number(row.gbytes_per_s, 2), format_number(row.intensity, 2)});
  }
  t.add_row({"(framework overhead)", format_seconds(b.overhead_s),
             format_percent(b.overhead_s / r.profile.step_s), "", "", "", "", "", ""});
  t.print(std::cout);
  if (b.rows.size() > limit) std::cout << "(" << b.rows.size() - limit << " more rows; --top N)\n";
  const auto curve = analysis::cumulative_curve(r.profile);
  std::cout << fmt::format(
      "{} operator types cover 90% of operator time (of {}); uncosted operators: {} of the step"
      "{}; CPU utilisation {}\n",
      curve.count_for_90, curve.names.size(), format_percent(b.uncosted_share),
      b.uncosted_ops.empty()
          ? ""
          : " (" + b.uncosted_ops.front() + (b.uncosted_ops.size() > 1 ? ", ..." : "") + ")",
      format_percent(r.profile.cpu_utilization));
}

nlohmann::ordered_json scaling_json(const std::vector<analysis::ScalingFit>& fits) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : fits)
    out.push_back({{"name", f.name},
                   {"threads", f.threads},
                   {"time_s", f.time_s},
                   {"speedup", f.speedup},
                   {"serial_fraction", f.serial_fraction},
                   {"r_squared", json_number(f.r_squared)}});
  return out;
}

void print_scaling(const std::vector<analysis::ScalingFit>& fits) {
  if (fits.empty()) return;
  std::vector<std::string> header = {"category"};
  for (int t : fits.front().threads) header.push_back(fmt::format("{} thr", t));
  header.insert(header.end(), {"speedup", "serial fraction (Amdahl)"});
  Table t(header);
  for (const auto& f : fits) {
    std::vector<std::string> row = {f.name};
    for (double s : f.time_s) row.push_back(format_seconds(s));
    row.push_back(format_number(f.speedup.back(), 2) + "x");
    row.push_back(format_number(f.serial_fraction, 2));
    t.add_row(row);
  }
  std::cout << "\nthread scaling (time per step; speedup at the largest thread count):\n";
  t.print(std::cout);
}

void print_modes(const analysis::ModeComparison& c) {
  std::cout << fmt::format("\ntraining vs inference: step {} vs {} ({:.2f}x)\n",
                           format_seconds(c.train_step_s), format_seconds(c.infer_step_s),
                           c.step_ratio);
  Table t({"category", "train share", "infer share"});
  for (const auto& [name, shares] : c.category_share)
    t.add_row({name, format_percent(shares.first), format_percent(shares.second)});
  t.print(std::cout);
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("profile", "Operator-level profile: where a step's time goes");
  auto name = std::make_shared<std::string>();
  auto flags = std::make_shared<ProfileFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", flags->measure.mode, "train, infer, or train,infer to compare")
      ->capture_default_str();
  flags->threads = std::to_string(default_threads());
  cmd->add_option("--threads", flags->threads,
                  "Thread counts, e.g. 1,2 (scaling fits; default: every CPU this process may use)")
      ->capture_default_str();
  cmd->add_option("--by", flags->by, "Rows by op, category or layer")->capture_default_str();
  cmd->add_option("--top", flags->top, "Show only the K most expensive rows");
  cmd->add_option("--steps", flags->steps, "Steps observed after warm-up")->capture_default_str();
  cmd->add_option("--trace", flags->trace,
                  "Write the last observed step as a Chrome trace-event file (Perfetto, "
                  "chrome://tracing); one file per mode and thread count");
  add_config_options(*cmd, *overrides);
  cmd->add_flag("--suite-size", overrides->suite_size,
                "Profile the batch and sizes plumb suite measures (then --batch/--set on top)");
  add_measure_options(*cmd, flags->measure, 60, 30, SamplingOptions::kWithout,
                      ThreadsOption::kNone);
  restrict_device_to_cpu(*cmd, kOperatorTimesOnTheHost);
  cmd->callback([name, flags, overrides, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const auto by = analysis::parse_group_by(flags->by);
    const auto thread_list = parse_positive_int_list("--threads", flags->threads);
    std::vector<Mode> modes;
    for (const auto& m : parse_name_list("--mode", flags->measure.mode))
      modes.push_back(parse_mode(m));
    if (flags->steps < 1) throw UsageError("--steps must be at least 1");
    const Config config = resolve_config(w, *overrides);
    std::vector<run::RunOptions> plan;
    for (Mode m : modes) {
      for (int t : thread_list) {
        for (auto& o : make_options(w, config, m, flags->measure)) {
          o.threads = t;
          run::validate_options(o);
          plan.push_back(std::move(o));
        }
      }
    }
    if (!flags->trace.empty()) {
      // Refused before the passes run, not after: the directory must exist and be writable.
      const auto dir = std::filesystem::path(flags->trace).parent_path();
      const std::string d = dir.empty() ? "." : dir.string();
      if (::access(d.c_str(), W_OK) != 0)
        throw UsageError(
            fmt::format("--trace: cannot write into '{}': check that the directory "
                        "exists and is writable",
                        d));
    }
    auto db = store::ResultsStore::open(flags->measure.db);
    const std::string group = fmt::format("{}-{}-{}", w.info.name, utc_now_iso8601(), getpid());
    const jobs::ProfileSourcing sourcing{false, flags->steps, !flags->trace.empty(), group,
                                         flags->measure.tag};
    for (const auto& o : plan) {
      const auto pass = jobs::fresh_profile(
          *db, o, sourcing, [](const std::string& line) { std::cerr << line << '\n'; });
      const auto& result = pass.result;
      if (!flags->trace.empty() && !result.trace.empty()) {
        const std::string path = trace_path(flags->trace, o, plan.size() > 1);
        const std::string title =
            fmt::format("{} {} batch {}, {} thread(s)", w.info.name, mode_name(o.mode),
                        o.config.get_int("batch"), o.threads);
        write_file_atomically(path, json_text(profile::chrome_trace(result, title)));
        std::cerr << fmt::format("  trace of the last step ({} events): {}\n", result.trace.size(),
                                 path);
      }
      if (result.status != run::RunStatus::kOk) exit_code = 1;
    }
    const auto stored = db->load_profiles(group);
    // Per mode: scaling over threads; across modes: train vs infer at the first thread count.
    nlohmann::ordered_json out;
    out["workload"] = w.info.name;
    out["batch"] = config.get_int("batch");
    out["by"] = flags->by;
    out["group"] = group;
    out["passes"] = nlohmann::ordered_json::array();
    for (const auto& p : stored) out["passes"].push_back(pass_json(p, by, flags->top));
    std::vector<std::pair<std::string, std::vector<analysis::ScalingFit>>> scaling;
    const store::StoredProfile* first_of_mode[2] = {nullptr, nullptr};
    for (Mode m : modes) {
      std::vector<int> threads;
      std::vector<profile::StepProfile> profiles;
      for (const auto& p : stored) {
        if (p.mode != mode_name(m) || p.result.status != run::RunStatus::kOk) continue;
        if (first_of_mode[static_cast<int>(m)] == nullptr) first_of_mode[static_cast<int>(m)] = &p;
        threads.push_back(p.threads);
        profiles.push_back(p.result.profile);
      }
      if (threads.size() >= 2)
        scaling.emplace_back(mode_name(m), analysis::thread_scaling(threads, profiles));
    }
    out["scaling"] = nlohmann::ordered_json::object();
    for (const auto& [mode, fits] : scaling) out["scaling"][mode] = scaling_json(fits);
    const auto* train = first_of_mode[static_cast<int>(Mode::kTrain)];
    const auto* infer = first_of_mode[static_cast<int>(Mode::kInfer)];
    std::optional<analysis::ModeComparison> modes_cmp;
    if (train != nullptr && infer != nullptr) {
      modes_cmp = analysis::compare_modes(train->result.profile, infer->result.profile);
      nlohmann::ordered_json shares = nlohmann::ordered_json::object();
      for (const auto& [cat, s] : modes_cmp->category_share)
        shares[cat] = {{"train", s.first}, {"infer", s.second}};
      out["train_vs_infer"] = {{"train_step_s", modes_cmp->train_step_s},
                               {"infer_step_s", modes_cmp->infer_step_s},
                               {"step_ratio", json_number(modes_cmp->step_ratio)},
                               {"category_share", shares}};
    }
    if (flags->measure.json) {
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    for (const auto& p : stored) print_pass(p, by, flags->top);
    for (const auto& [mode, fits] : scaling) {
      std::cout << "\n[" << mode << "]";
      print_scaling(fits);
    }
    if (modes_cmp) print_modes(*modes_cmp);
    std::cout << "\nstored as profile group " << group << " in " << db->path() << '\n';
  });
}

}  // namespace plumb::cli
