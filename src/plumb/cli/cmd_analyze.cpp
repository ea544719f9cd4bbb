// plumb analyze: ParaDnn's analyses (Sec. 2.3) over stored sweep points — a metric's heat map
// over two hyperparameters, linear-regression sensitivity to each hyperparameter, box-plot
// statistics per model type, the speedup of one platform or configuration over another, and
// the roofline of every point measured with an operator profile. `analyze similarity` lives in
// cmd_analyze_similarity.cpp.
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"
#include "plumb/analysis/stored_sweep_points.h"
#include "plumb/analysis/sweep_analysis.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/results_store.h"
#include "plumb/store/sweep_records.h"

namespace plumb::cli {
namespace {

struct AnalyzeFlags {
  std::string db = "plumb.db", db_b, sweep, metric = "examples_per_s", tag_a, tag_b;
  std::string x, y, keys;
  std::vector<std::string> fix;
  bool log = false, json = false;
};

std::vector<analysis::SweepPoint> load_points(const std::string& path, const std::string& sweep,
                                              const std::string& tag) {
  auto db = store::ResultsStore::open(path, /*read_only=*/true);
  return analysis::stored_sweep_points(*db, sweep, tag);
}

// --fix values: numbers fix numeric hyperparameters; anything else selects the points with
// that non-numeric value (block=bottleneck, cell=lstm).
struct FixedValues {
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> texts;
};

FixedValues parse_fixed(const std::vector<std::string>& fix) {
  FixedValues out;
  for (const auto& kv : fix) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      throw UsageError(
          fmt::format("--fix must be key=value (nodes=512, block=bottleneck), got '{}'", kv));
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (*end == '\0')
      out.numbers[key] = v;
    else
      out.texts[key] = value;
  }
  return out;
}

std::vector<std::string> key_list(const std::string& keys) {
  return keys.empty() ? std::vector<std::string>{} : parse_name_list("--keys", keys);
}

std::string value_text(double v) {
  return std::isnan(v) ? "-" : fmt::format("{:.4g}", v);
}

nlohmann::ordered_json sensitivity_json(const analysis::Sensitivity& s) {
  nlohmann::ordered_json w = nlohmann::ordered_json::array();
  for (const auto& k : s.weights)
    w.push_back({{"key", k.key},
                 {"weight", json_number(k.weight)},
                 {"standardized", json_number(k.weight / s.metric_stddev)}});
  return {{"metric", s.metric},
          {"log_inputs", s.log_inputs},
          {"weights", w},
          {"intercept", json_number(s.intercept)},
          {"r_squared", json_number(s.r_squared)},
          {"n", s.n},
          {"n_failed", s.n_failed}};
}

void print_sensitivity(const analysis::Sensitivity& s) {
  Table t({"hyperparameter", "weight", "standardized", "effect"});
  for (const auto& k : s.weights)
    t.add_row({k.key, value_text(k.weight), value_text(k.weight / s.metric_stddev),
               k.weight > 0 ? "raises " + s.metric : "lowers " + s.metric});
  t.print(std::cout);
  std::cout << fmt::format(
      "linear regression of {} on the standardized hyperparameters{}: R^2 {:.3f} over {} points "
      "({} without a value left out); a weight is the change of {} per standard deviation of "
      "the hyperparameter\n",
      s.metric, s.log_inputs ? " (log2 first)" : "", s.r_squared, s.n, s.n_failed, s.metric);
}

nlohmann::ordered_json heat_map_json(const analysis::HeatMap& h) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : h.values) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (double v : row) r.push_back(json_number(v));
    rows.push_back(r);
  }
  return {{"group", h.group},
          {"metric", h.metric},
          {"x", h.x_key},
          {"y", h.y_key},
          {"fixed", h.fixed},
          {"xs", h.xs},
          {"ys", h.ys},
          {"values", rows},
          {"n_points", h.n_points},
          {"n_failed", h.n_failed}};
}

void print_heat_map(const analysis::HeatMap& h) {
  std::vector<std::string> header = {h.y_key + " \\ " + h.x_key};
  for (double x : h.xs) header.push_back(value_text(x));
  Table t(header);
  for (size_t i = h.ys.size(); i-- > 0;) {  // largest y on top, as a plot reads
    std::vector<std::string> row = {value_text(h.ys[i])};
    for (double v : h.values[i]) row.push_back(value_text(v));
    t.add_row(row);
  }
  std::cout << fmt::format("{} of {} over {} (x) and {} (y)", h.metric, h.group, h.x_key, h.y_key);
  for (const auto& [k, v] : h.fixed) std::cout << fmt::format(", {}={}", k, value_text(v));
  std::cout << ":\n";
  t.print(std::cout);
  std::cout << fmt::format("{} points; {} without a value ('-': not run or failed)\n", h.n_points,
                           h.n_failed);
}

// Without --fix for every other varying hyperparameter, one map per model type and value
// combination (small multiples), as the report draws them.
void heatmap(const AnalyzeFlags& f) {
  if (f.x.empty() || f.y.empty()) throw UsageError("analyze heatmap needs --x KEY and --y KEY");
  const FixedValues fixed = parse_fixed(f.fix);
  const auto maps = analysis::heat_maps(
      analysis::with_text_params(load_points(f.db, f.sweep, f.tag_a), fixed.texts), f.x, f.y,
      f.metric, fixed.numbers);
  if (f.json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& h : maps) all.push_back(heat_map_json(h));
    // One map: the object alone (the documented shape); several: an array of such objects.
    std::cout << json_text(maps.size() == 1 ? all.front() : all, 2) << '\n';
    return;
  }
  for (size_t i = 0; i < maps.size(); ++i) {
    if (i > 0) std::cout << '\n';
    print_heat_map(maps[i]);
  }
}

void sensitivity(const AnalyzeFlags& f) {
  const auto s =
      analysis::sensitivity(load_points(f.db, f.sweep, f.tag_a), key_list(f.keys), f.metric, f.log);
  if (f.json) {
    std::cout << json_text(sensitivity_json(s), 2) << '\n';
    return;
  }
  print_sensitivity(s);
}

void boxplot(const AnalyzeFlags& f) {
  const auto boxes = analysis::box_plots(load_points(f.db, f.sweep, f.tag_a), f.metric);
  if (f.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& b : boxes)
      out.push_back({{"group", b.group},
                     {"n", b.n},
                     {"n_failed", b.n_failed},
                     {"min", json_number(b.min)},
                     {"p2", json_number(b.p2)},
                     {"p9", json_number(b.p9)},
                     {"p50", json_number(b.p50)},
                     {"p91", json_number(b.p91)},
                     {"p98", json_number(b.p98)},
                     {"max", json_number(b.max)},
                     {"mean", json_number(b.mean)},
                     {"outliers", b.outliers}});
    std::cout << json_text(nlohmann::ordered_json{{"metric", f.metric}, {"groups", out}}, 2)
              << '\n';
    return;
  }
  Table t({"group", "n", "min", "p2", "p9", "median", "p91", "p98", "max"});
  for (const auto& b : boxes)
    t.add_row({b.group, std::to_string(b.n), value_text(b.min), value_text(b.p2), value_text(b.p9),
               value_text(b.p50), value_text(b.p91), value_text(b.p98), value_text(b.max)});
  std::cout << f.metric << " per model type (ParaDnn's box plots: 2/9/50/91/98th percentiles):\n";
  t.print(std::cout);
}

void speedup(const AnalyzeFlags& f) {
  const std::string db_b = f.db_b.empty() ? f.db : f.db_b;
  if (db_b == f.db && f.tag_a == f.tag_b)
    throw UsageError(
        "analyze speedup compares two sources: give --db-b B.db, or --tag-a X --tag-b Y");
  const auto s =
      analysis::speedup(load_points(f.db, f.sweep, f.tag_a), load_points(db_b, f.sweep, f.tag_b),
                        f.metric, key_list(f.keys), f.log);
  if (f.json) {
    nlohmann::ordered_json pts = nlohmann::ordered_json::array();
    for (const auto& p : s.points)
      pts.push_back(
          {{"group", p.group}, {"params", p.params}, {"a", p.a}, {"b", p.b}, {"ratio", p.ratio}});
    std::cout << json_text(nlohmann::ordered_json{{"metric", s.metric},
                                                  {"geomean", json_number(s.geomean)},
                                                  {"matched", s.points.size()},
                                                  {"unmatched_a", s.unmatched_a},
                                                  {"unmatched_b", s.unmatched_b},
                                                  {"points", pts},
                                                  {"sensitivity",
                                                   s.sensitivity ? sensitivity_json(*s.sensitivity)
                                                                 : nlohmann::ordered_json()},
                                                  {"notes", s.notes}},
                           2)
              << '\n';
    return;
  }
  std::cout << fmt::format(
      "speedup of B over A in {}: geometric mean {} over {} matched points ({} in A and {} in B "
      "without a partner)\n",
      s.metric, value_text(s.geomean), s.points.size(), s.unmatched_a, s.unmatched_b);
  if (s.sensitivity) print_sensitivity(*s.sensitivity);
  for (const auto& n : s.notes) std::cout << "note: " << n << '\n';
}

// Every point measured with `measure: profile` placed on the roofs of the newest probe stored
// in the database (the machine the sweep ran on), at the sweep's thread count.
void roofline(const AnalyzeFlags& f) {
  auto db = store::ResultsStore::open(f.db, /*read_only=*/true);
  const auto probes = db->load_probes();
  if (probes.empty())
    throw UsageError(fmt::format(
        "'{}' holds no machine probe, so there are no roofs to place the points on; run plumb "
        "probe --db {} on the machine the sweep ran on",
        f.db, f.db));
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  Table t({"point", "FLOP/B", "GFLOP/s", "roof GFLOP/s", "bound", "of roof", "of peak"});
  size_t placed = 0, without = 0;
  for (const auto& s : db->load_sweeps()) {
    if (!f.sweep.empty() && s.name != f.sweep) continue;
    const int threads = nlohmann::json::parse(s.spec).at("threads").get<int>();
    const auto ceilings = analysis::ceilings_from_probe(probes.back().document, "fp32", threads,
                                                        analysis::PeakKind::kInstruction);
    for (const auto& p : db->load_sweep_points(s.id)) {
      const auto& m = p.metrics;
      if (!m.contains("bytes_per_step") || !m.contains("step_s")) {
        ++without;
        continue;
      }
      analysis::WorkItem item;
      item.name = s.name + ": " + p.key;
      item.flops = m.at("profile_flops_per_step").get<double>();
      item.bytes = m.at("bytes_per_step").get<double>();
      item.seconds = m.at("step_s").get<double>();
      const auto at = analysis::place(item, ceilings);
      ++placed;
      rows.push_back({{"sweep", s.name},
                      {"point", p.key},
                      {"intensity", json_number(at.intensity)},
                      {"achieved_flops", at.achieved_flops},
                      {"roof_flops", at.roof},
                      {"level", at.level},
                      {"bound", at.bound},
                      {"roof_fraction", json_number(at.roof_fraction)},
                      {"utilisation", json_number(at.utilisation)}});
      t.add_row({item.name, value_text(at.intensity), value_text(at.achieved_flops / 1e9),
                 value_text(at.roof / 1e9), at.bound, format_percent(at.roof_fraction),
                 format_percent(at.utilisation)});
    }
  }
  if (placed == 0)
    throw UsageError(fmt::format(
        "no sweep point in '{}' has an operator profile to place; run the sweep with measure: "
        "[throughput, profile] (or --measure throughput,profile)",
        f.db));
  if (f.json) {
    std::cout << json_text(nlohmann::ordered_json{{"points", rows}, {"without_profile", without}},
                           2)
              << '\n';
    return;
  }
  std::cout << "sweep points on the roofline (fp32 instruction peak and triad bandwidths of the "
               "stored probe; work from the cost model, time = median step):\n";
  t.print(std::cout);
  if (without > 0) std::cout << without << " point(s) without an operator profile left out\n";
}

}  // namespace

void add_analyze_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "analyze",
      "ParaDnn's analyses of stored sweeps; Fathom's similarity of stored profiles; fusion "
      "opportunities in stored operator graphs; decode on the memory roof");
  cmd->require_subcommand(1);
  auto f = std::make_shared<AnalyzeFlags>();
  auto common = [f](CLI::App* sub) {
    sub->add_option("--db", f->db, "Database holding the sweep")->capture_default_str();
    sub->add_option("--sweep", f->sweep, "Sweep name (default: every sweep in the database)");
    sub->add_option("--metric", f->metric,
                    "examples_per_s, throughput, flops_per_s, flops_util, step_s, "
                    "total_peak_bytes ...")
        ->capture_default_str();
    sub->add_flag("--json", f->json, "Print one JSON document on stdout");
  };
  auto* heat = cmd->add_subcommand("heatmap", "A metric over two hyperparameters");
  common(heat);
  heat->add_option("--x", f->x, "Hyperparameter on the x axis")->required();
  heat->add_option("--y", f->y, "Hyperparameter on the y axis")->required();
  heat->add_option("--fix", f->fix,
                   "key=value for the other hyperparameters, numeric (nodes=512) or not "
                   "(block=bottleneck) (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  heat->callback([f] { heatmap(*f); });
  auto* sens = cmd->add_subcommand("sensitivity", "Linear-regression weights per hyperparameter");
  common(sens);
  sens->add_option("--keys", f->keys, "Hyperparameters to regress on (default: all that vary)");
  sens->add_flag("--log", f->log, "log2 the hyperparameters first (for doubling grids)");
  sens->callback([f] { sensitivity(*f); });
  auto* box = cmd->add_subcommand("boxplot", "2/9/50/91/98th percentiles per model type");
  common(box);
  box->callback([f] { boxplot(*f); });
  auto* sp = cmd->add_subcommand("speedup", "B over A for matching points, with sensitivity");
  common(sp);
  sp->add_option("--db-b", f->db_b, "Database of B (default: --db, split by tags)");
  sp->add_option("--tag-a", f->tag_a, "Only A's runs with this tag");
  sp->add_option("--tag-b", f->tag_b, "Only B's runs with this tag");
  sp->add_option("--keys", f->keys, "Match on these hyperparameters (default: all)");
  sp->add_flag("--log", f->log, "log2 the hyperparameters in the speedup's regression");
  sp->callback([f] { speedup(*f); });
  auto* roof = cmd->add_subcommand("roofline", "Sweep points (measured with profile) on the roofs");
  common(roof);
  roof->callback([f] { roofline(*f); });
  add_analyze_similarity_command(*cmd);
  add_analyze_fusion_command(*cmd, exit_code);
  add_analyze_decode_command(*cmd, exit_code);
}

}  // namespace plumb::cli
