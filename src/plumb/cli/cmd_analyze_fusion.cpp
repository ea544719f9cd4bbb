// plumb analyze fusion: fusion opportunities mined from the operator graphs of stored profiles
// (Facebook paper Sec. 3.3), ranked by the saving projected on this machine's roofs, with the
// saving a fused kernel really delivers where LibTorch has one (profile/fused_kernels.h).
// A workload without a stored profile of the mode and precision is profiled first.
#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/fusion_inputs.h"
#include "plumb/analysis/fusion_mining.h"
#include "plumb/analysis/fusion_realized.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/probe_source.h"
#include "plumb/cli/table.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/fused_kernels.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct FusionFlags {
  MeasureFlags measure;
  std::vector<std::string> workloads;
  std::string suites;
  int top = 10;
  int steps = 3;
  analysis::FusionOptions mining;
  // Fused kernels are library kernels: the best library GEMM is the compute roof they can reach.
  std::string peak = "gemm";
  bool profile = false;     // profile now even with a stored profile
  bool no_realize = false;  // skip the fused-kernel checks
  double check_seconds = 1.0;
};

// One workload's mining, with what it was mined from.
struct Mined {
  std::string workload, mode, dtype;
  int64_t profile_id = 0, batch = 0;
  int threads = 1;
  analysis::FusionMining mining;
};

// A pattern's realized check, when one was measured.
struct Realized {
  const store::StoredFusedKernelCheck* stored = nullptr;
  analysis::RealizedFusion comparison;
};

nlohmann::ordered_json realized_json(const Realized& r) {
  const auto& c = r.stored->check;
  const auto& x = r.comparison;
  return {{"check_id", r.stored->id},
          {"kind", c.kind},
          {"unfused", c.unfused},
          {"fused_op", c.fused_op},
          {"repetitions", c.repetitions},
          {"unfused_s", c.unfused_s},
          {"fused_s", c.fused_s},
          {"realized_saving_s", x.realized_saving_s},
          {"realized_fraction", json_number(x.realized_fraction)},
          {"projected_before_s", x.projection.before_s},
          {"projected_after_s", x.projection.after_s},
          {"projected_fraction", json_number(x.projected_fraction)},
          {"error_points", json_number(x.error_points)},
          {"max_abs_diff", json_number(c.max_abs_diff)}};
}

nlohmann::ordered_json pattern_json(const analysis::FusionPattern& p, const Realized* realized) {
  nlohmann::ordered_json edges = nlohmann::ordered_json::array();
  for (const auto& [a, b] : p.edges) edges.push_back({a, b});
  nlohmann::ordered_json j = {
      {"pattern", p.text},
      {"scope", p.backward ? "backward" : "forward"},
      {"labels", p.labels},
      {"classes", p.classes},
      {"edges", edges},
      {"count", p.count},
      {"measured_s", p.measured_s},
      {"measured_share", json_number(p.step_s > 0 ? p.measured_s / p.step_s : NAN)},
      {"roofline_before_s", p.before_s},
      {"roofline_after_s", p.after_s},
      {"projected_saving_s", p.saving_s},
      {"projected_saving_per_occurrence_s", p.saving_s / std::max(1, p.count)},
      {"projected_saving_share", json_number(p.saving_share)},
      {"example_layer", p.example_layer},
      {"example_calls", p.example_signatures}};
  if (!p.workloads.empty()) j["workloads"] = p.workloads;
  j["realized"] = realized != nullptr ? realized_json(*realized) : nlohmann::ordered_json();
  return j;
}

void print_patterns(const std::vector<analysis::FusionPattern>& patterns, size_t top,
                    const std::map<std::string, Realized>& realized, bool suite) {
  std::vector<std::string> header = {
      "#",     "pattern",          "count",   "measured",        "roofline before",
      "after", "projected saving", "of step", "realized (check)"};
  if (suite) header.push_back("workloads");
  Table t(header);
  for (size_t i = 0; i < patterns.size() && i < top; ++i) {
    const auto& p = patterns[i];
    const auto r = realized.find(p.key);
    std::string realized_text = "-";
    if (r != realized.end())
      realized_text = fmt::format(
          "{} vs {} projected ({})", format_percent(r->second.comparison.realized_fraction, 0),
          format_percent(r->second.comparison.projected_fraction, 0), r->second.stored->check.kind);
    std::vector<std::string> row = {fmt::format("{}", i + 1),
                                    (p.backward ? "bwd: " : "") + p.text,
                                    fmt::format("{}", p.count),
                                    format_seconds(p.measured_s),
                                    format_seconds(p.before_s),
                                    format_seconds(p.after_s),
                                    format_seconds(p.saving_s),
                                    format_percent(p.saving_share),
                                    realized_text};
    if (suite) {
      std::string names;
      for (const auto& w : p.workloads) names += (names.empty() ? "" : ",") + w;
      row.push_back(names);
    }
    t.add_row(row);
  }
  t.print(std::cout);
  if (patterns.size() > top)
    std::cout << "(" << patterns.size() - top << " more patterns; --top N)\n";
}

}  // namespace

void add_analyze_fusion_command(CLI::App& analyze, int& exit_code) {
  auto* cmd = analyze.add_subcommand(
      "fusion",
      "Fusion opportunities mined from stored operator graphs: projected and realized savings");
  auto f = std::make_shared<FusionFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  f->measure.mode = "infer";
  cmd->add_option("workloads", f->workloads, "Workload names (see plumb list)");
  cmd->add_option("--suite", f->suites, "Every workload of these suites, e.g. inference");
  cmd->add_option("--mode", f->measure.mode, "infer or train")->capture_default_str();
  cmd->add_option("--top", f->top, "Patterns shown (and realized) per workload and for the suite")
      ->capture_default_str();
  cmd->add_option("--max-nodes", f->mining.max_nodes, "Largest subgraph mined, in operators")
      ->capture_default_str();
  cmd->add_option("--min-count", f->mining.min_count,
                  "Occurrences per step for a pattern to count as frequent")
      ->capture_default_str();
  cmd->add_option("--max-fusible-degree", f->mining.max_fusible_degree,
                  "Nodes with more fusible neighbours than this take part in no pattern")
      ->capture_default_str();
  cmd->add_option("--peak", f->peak, "Compute roof: instruction or gemm")->capture_default_str();
  cmd->add_flag("--profile", f->profile, "Profile the workloads now even when a profile is stored");
  cmd->add_option("--steps", f->steps, "Steps observed when profiling")->capture_default_str();
  cmd->add_flag("--no-realize", f->no_realize, "Skip timing fused kernels against unfused ones");
  cmd->add_option("--check-seconds", f->check_seconds, "Timing budget of one fused-kernel check")
      ->capture_default_str();
  add_config_options(*cmd, *overrides);
  add_measure_options(*cmd, f->measure, 60, 30, SamplingOptions::kWithout);
  restrict_device_to_cpu(*cmd, fmt::format("the projections use the CPU's roofs, the fused kernels "
                                           "are timed on the CPU, and {}",
                                           kOperatorTimesOnTheHost));
  cmd->callback([f, overrides, &exit_code] {
    if (f->top < 1) throw UsageError("--top must be at least 1");
    if (f->mining.max_nodes < 2 || f->mining.max_nodes > 6)
      throw UsageError("--max-nodes must be 2 to 6");
    if (f->mining.min_count < 1) throw UsageError("--min-count must be at least 1");
    if (f->mining.max_fusible_degree < 1)
      throw UsageError("--max-fusible-degree must be at least 1");
    if (f->steps < 1) throw UsageError("--steps must be at least 1");
    if (!(f->check_seconds > 0)) throw UsageError("--check-seconds must be positive");
    const auto peak_kind = analysis::parse_peak_kind(f->peak);
    const Mode mode = parse_mode(f->measure.mode);
    const auto chosen = chosen_workloads(f->workloads, f->suites);
    std::vector<run::RunOptions> plan;
    for (const Workload* w : chosen) {
      const auto options = make_options(*w, resolve_config(*w, *overrides), mode, f->measure);
      if (options.size() != 1) throw UsageError("fusion mining takes one --dtype");
      plan.push_back(options.front());
    }
    auto db = store::ResultsStore::open(f->measure.db);
    const auto stored = db->load_profiles();
    // Stored graphs first: a profile older than graph capture is refused before anything is
    // measured or written.
    std::vector<Mined> mined(plan.size());
    std::vector<std::optional<profile::StepGraph>> graphs(plan.size());
    int max_threads = 1;
    for (size_t i = 0; i < plan.size(); ++i) {
      const auto& o = plan[i];
      Mined& m = mined[i];
      m.workload = o.workload;
      m.mode = mode_name(o.mode);
      m.dtype = dtype_name(o.dtype);
      m.batch = o.config.get_int("batch");
      m.threads = o.threads;
      const store::StoredProfile* p =
          f->profile ? nullptr : analysis::newest_profile(stored, o.workload, m.mode, m.dtype);
      if (p != nullptr) {
        graphs[i] = analysis::stored_graph(*db, *p, f->measure.db);
        m.profile_id = p->id;
        m.batch = p->batch;
        m.threads = p->threads;
      }
      max_threads = std::max(max_threads, m.threads);
    }
    const ProbeChoice probe = current_probe(*db, {false, false, max_threads});
    const auto env = platform::capture_environment(plan.front().threads, plan.front().device);
    const std::string machine = platform::machine_key(env);
    const std::string group = fmt::format("fusion-{}-{}", utc_now_iso8601(), getpid());

    // Workloads without a stored graph are profiled now.
    std::map<std::string, analysis::Ceilings> ceilings_of;  // by workload
    std::vector<Mined> done;
    for (size_t i = 0; i < plan.size(); ++i) {
      const auto& o = plan[i];
      Mined& m = mined[i];
      if (graphs[i]) {
        std::cerr << fmt::format("{} {}: stored profile {} (batch {}, {} thread(s))\n", o.workload,
                                 m.mode, m.profile_id, m.batch, m.threads);
      } else {
        const Workload& w = workloads::default_registry().get(o.workload);
        std::cerr << fmt::format("profiling {} {} batch {} ...\n", o.workload, m.mode, m.batch);
        const auto result = profile::profile_workload(
            w, o, f->steps, [](const std::string& line) { std::cerr << "  " << line << '\n'; });
        m.profile_id = db->save_profile(
            o, result, platform::capture_environment(o.threads, o.device), group, f->measure.tag);
        if (result.status != run::RunStatus::kOk) {
          std::cerr << fmt::format("  {}: {} ({}): no graph to mine\n", o.workload,
                                   run::status_name(result.status), result.message);
          exit_code = 1;
          continue;
        }
        graphs[i] = result.graph;
      }
      const auto ceilings =
          analysis::ceilings_from_probe(probe.probe.document, m.dtype, m.threads, peak_kind);
      m.mining = analysis::mine_fusion(*graphs[i], ceilings, f->mining);
      ceilings_of[o.workload] = ceilings;
      done.push_back(std::move(m));
    }
    mined = std::move(done);

    // Fused-kernel checks for the top patterns that LibTorch can run fused.
    auto checks = db->load_fused_kernel_checks();
    const auto realize = [&](const analysis::FusionPattern& p, int threads) -> bool {
      const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
      if (kind.empty() || f->no_realize) return false;
      const std::string shapes = analysis::check_shapes(p);
      if (analysis::matching_check(checks, kind, shapes, threads, machine) != nullptr) return true;
      try {
        std::cerr << fmt::format("  timing {} fused vs unfused on {} ...\n", kind, p.text);
        const auto check = profile::run_fused_kernel_check(kind, p.labels, p.example_signatures,
                                                           threads, f->check_seconds);
        store::StoredFusedKernelCheck saved;
        saved.id = db->save_fused_kernel_check(check, env);
        saved.machine = machine;
        saved.check = check;
        checks.push_back(std::move(saved));
        return true;
      } catch (const std::invalid_argument& e) {
        std::cerr << fmt::format("  {}: not realized ({})\n", p.text, e.what());
        return false;
      }
    };
    // The top patterns, and for every kind found further down the first pattern of that kind,
    // so each kind a workload shows is realized once.
    for (const auto& m : mined) {
      std::set<std::string> kinds;
      for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
        const auto& p = m.mining.patterns[i];
        const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
        if (i < static_cast<size_t>(f->top) || (!kind.empty() && kinds.count(kind) == 0))
          if (realize(p, m.threads)) kinds.insert(kind);
      }
    }

    const auto realized_for = [&](const Mined& m) {
      std::map<std::string, Realized> out;
      for (const auto& p : m.mining.patterns) {
        const std::string kind = profile::fused_kernel_kind(p.labels, p.edges);
        if (kind.empty()) continue;
        const auto* c =
            analysis::matching_check(checks, kind, analysis::check_shapes(p), m.threads, machine);
        if (c != nullptr)
          out[p.key] = {c, analysis::realized_fusion(c->check, ceilings_of.at(m.workload))};
      }
      return out;
    };

    std::vector<analysis::FusionMining> minings;
    std::vector<std::string> names;
    for (const auto& m : mined) {
      minings.push_back(m.mining);
      names.push_back(m.workload);
    }
    const auto suite = analysis::merge_patterns(minings, names);
    const size_t top = static_cast<size_t>(f->top);

    if (f->measure.json) {
      nlohmann::ordered_json out;
      out["mode"] = f->measure.mode;
      out["probe_id"] = probe.probe.id;
      out["peak"] = f->peak;
      out["max_nodes"] = f->mining.max_nodes;
      out["min_count"] = f->mining.min_count;
      out["workloads"] = nlohmann::ordered_json::array();
      std::map<std::string, Realized> all_realized;
      for (const auto& m : mined) {
        const auto realized = realized_for(m);
        all_realized.insert(realized.begin(), realized.end());
        nlohmann::ordered_json w = {{"workload", m.workload},
                                    {"mode", m.mode},
                                    {"dtype", m.dtype},
                                    {"profile_id", m.profile_id},
                                    {"batch", m.batch},
                                    {"threads", m.threads},
                                    {"step_s", m.mining.step_s},
                                    {"nodes", m.mining.nodes},
                                    {"edges", m.mining.edges},
                                    {"fusible_edges", m.mining.fusible_edges},
                                    {"subgraphs", m.mining.subgraphs},
                                    {"hubs", m.mining.hubs},
                                    {"frequent_patterns", m.mining.patterns.size()}};
        w["patterns"] = nlohmann::ordered_json::array();
        for (size_t i = 0; i < m.mining.patterns.size() && i < top; ++i) {
          const auto& p = m.mining.patterns[i];
          const auto r = realized.find(p.key);
          w["patterns"].push_back(pattern_json(p, r != realized.end() ? &r->second : nullptr));
        }
        // Every pattern with a check, ranked or not: each kind the workload shows.
        w["checks"] = nlohmann::ordered_json::array();
        for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
          const auto r = realized.find(m.mining.patterns[i].key);
          if (r == realized.end()) continue;
          auto c = realized_json(r->second);
          c["rank"] = i + 1;
          c["pattern"] = m.mining.patterns[i].text;
          w["checks"].push_back(c);
        }
        out["workloads"].push_back(w);
      }
      if (mined.size() > 1) {
        out["suite"] = nlohmann::ordered_json::array();
        for (size_t i = 0; i < suite.size() && i < top; ++i) {
          const auto r = all_realized.find(suite[i].key);
          out["suite"].push_back(
              pattern_json(suite[i], r != all_realized.end() ? &r->second : nullptr));
        }
      }
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    std::map<std::string, Realized> all_realized;
    for (const auto& m : mined) {
      const auto realized = realized_for(m);
      all_realized.insert(realized.begin(), realized.end());
      std::cout << fmt::format(
          "\n{} {} ({}, batch {}, {} thread(s), profile {}): {} operators, {} edges ({} fusible), "
          "{} fusible subgraphs, {} frequent patterns; step {}\n",
          m.workload, m.mode, m.dtype, m.batch, m.threads, m.profile_id, m.mining.nodes,
          m.mining.edges, m.mining.fusible_edges, m.mining.subgraphs, m.mining.patterns.size(),
          format_seconds(m.mining.step_s));
      print_patterns(m.mining.patterns, top, realized, false);
      Table check_table({"rank", "pattern", "check", "unfused", "fused", "realized saving",
                         "projected saving", "error"});
      for (size_t i = 0; i < m.mining.patterns.size(); ++i) {
        const auto r = realized.find(m.mining.patterns[i].key);
        if (r == realized.end()) continue;
        const auto& c = r->second.stored->check;
        const auto& x = r->second.comparison;
        check_table.add_row({fmt::format("{}", i + 1), m.mining.patterns[i].text,
                             fmt::format("{}: {} vs {}", c.kind, c.unfused, c.fused_op),
                             format_seconds(c.unfused_s), format_seconds(c.fused_s),
                             format_percent(x.realized_fraction),
                             format_percent(x.projected_fraction),
                             fmt::format("{:+.1f} pp", x.error_points)});
      }
      if (!realized.empty()) {
        std::cout << "fused kernels timed on the patterns' shapes (saving as a share of the "
                     "unfused time):\n";
        check_table.print(std::cout);
      }
    }
    if (mined.size() > 1) {
      std::cout << fmt::format("\nacross {} workloads:\n", mined.size());
      print_patterns(suite, top, all_realized, true);
    }
    std::cout << "\nprojected: roofline time of the operators as they run minus the roofline time "
                 "of one fused kernel (intermediates neither written nor read back); realized: "
                 "the fused kernel's measured saving on the same shapes, against the projection "
                 "for that check (docs/fusion.md)\n";
  });
}

}  // namespace plumb::cli
