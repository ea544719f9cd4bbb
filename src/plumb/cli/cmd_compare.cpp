// plumb compare: two runs, two databases or two tagged groups side by side — environment
// differences first, then per workload setting the throughput ratio B/A with its
// interval (within and between runs) and a verdict, then per-category deltas where both sides were
// profiled. Exit status 1 when some setting is significantly slower beyond the tolerance (for CI),
// 2 for bad usage. Method: docs/compare.md.
#include <cmath>
#include <iostream>
#include <memory>
#include <regex>

#include <fmt/format.h>

#include "plumb/analysis/comparison_inputs.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"

namespace plumb::cli {
namespace {

struct CompareFlags {
  std::vector<std::string> sources;  // two run-id lists or two database paths
  std::string db = "plumb.db";
  std::vector<std::string> tags, where_a, where_b, ignore;
  bool all_runs = false, json = false;
  analysis::ComparisonOptions statistics;
};

bool is_run_id_list(const std::string& text) {
  static const std::regex ids("[0-9]+(,[0-9]+)*");
  return std::regex_match(text, ids);
}

std::vector<int64_t> parse_run_ids(const std::string& text) {
  std::vector<int64_t> ids;
  for (const auto& part : split(text, ',')) ids.push_back(std::stoll(part));
  return ids;
}

void add_filters(const std::vector<std::string>& where, const char* flag,
                 std::map<std::string, std::string>& filters) {
  for (const auto& kv : where) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(
          fmt::format("{} takes FIELD=VALUE (e.g. threads=4 or tag=new), got '{}'", flag, kv));
    filters[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

analysis::ComparisonRequest make_request(const CompareFlags& f) {
  analysis::ComparisonRequest q;
  q.statistics = f.statistics;
  q.all_runs = f.all_runs;
  for (const auto& item : f.ignore)
    for (const auto& field : split(item, ',')) q.ignore.push_back(field);
  if (f.sources.size() == 1 || f.sources.size() > 2)
    throw UsageError(
        fmt::format("plumb compare takes two run ids, two databases, or none with --tag A --tag "
                    "B; got {} argument(s)",
                    f.sources.size()));
  if (f.tags.size() > 2)
    throw UsageError("--tag is given once (both sides) or twice (side A, then side B)");
  q.a.db = q.b.db = f.db;
  if (f.sources.size() == 2) {
    const bool ids_a = is_run_id_list(f.sources[0]), ids_b = is_run_id_list(f.sources[1]);
    if (ids_a != ids_b)
      throw UsageError(fmt::format(
          "'{}' and '{}': give two run ids (with --db) or two database paths, not one of each",
          f.sources[0], f.sources[1]));
    if (ids_a) {
      if (!f.tags.empty() || !f.where_a.empty() || !f.where_b.empty())
        throw UsageError("run ids pick the runs already; drop --tag and --where-a/--where-b");
      q.a.run_ids = parse_run_ids(f.sources[0]);
      q.b.run_ids = parse_run_ids(f.sources[1]);
    } else {
      q.a.db = f.sources[0];
      q.b.db = f.sources[1];
    }
  } else if (f.tags.size() < 2 && f.where_a.empty() && f.where_b.empty()) {
    throw UsageError(
        "nothing to compare: give two run ids (plumb compare --db F 3 5), two databases "
        "(plumb compare a.db b.db), or two groups (--tag A --tag B, --where-a/--where-b)");
  }
  if (!f.tags.empty()) {
    q.a.filters["tag"] = f.tags.front();
    q.b.filters["tag"] = f.tags.back();
  }
  add_filters(f.where_a, "--where-a", q.a.filters);
  add_filters(f.where_b, "--where-b", q.b.filters);
  return q;
}

std::string ratio_text(double ratio) {
  return std::isfinite(ratio) ? fmt::format("{:.3f}", ratio) : "-";
}

std::string interval_text(const analysis::ThroughputComparison& t) {
  if (!std::isfinite(t.ci_low)) return "-";
  return fmt::format("[{:.3f}, {:.3f}]", t.ci_low, t.ci_high);
}

std::string ids_text(const std::vector<int64_t>& ids) {
  std::vector<std::string> parts;
  for (int64_t id : ids) parts.push_back(std::to_string(id));
  return join(parts, ",");
}

void print_environment(const analysis::Comparison& c) {
  Table table({"environment", "A", "B"});
  size_t same = 0;
  for (const auto& f : c.environment) {
    if (f.differs) {
      table.add_row({f.field, f.a, f.b});
    } else {
      ++same;
      // The same noisy condition on both sides is no difference, but it must be seen first.
      if (f.field == "warnings" && f.a != "none") std::cout << "both sides: " << f.a << '\n';
    }
  }
  if (same == c.environment.size()) {
    std::cout << "environment: no differences (" << same << " fields compared)\n\n";
    return;
  }
  std::cout << "environment differences (listed first: a different machine state can explain "
               "a difference below):\n";
  table.print(std::cout);
  std::cout << same << " other fields are the same\n\n";
}

void print_categories(const analysis::ComparisonRow& row) {
  std::cout << fmt::format(
      "\n{} {} {}: where the step time moved (profiles {} -> {}; observer "
      "overhead included)\n",
      row.workload, row.mode, row.setting, row.profile_a, row.profile_b);
  Table table({"category", "A per step", "B per step", "delta", "share of delta"});
  for (const auto& d : row.categories)
    table.add_row({d.category, format_seconds(d.a_s), format_seconds(d.b_s),
                   (d.delta_s < 0 ? "-" : "+") + format_seconds(std::fabs(d.delta_s)),
                   format_percent(d.share_of_delta)});
  table.print(std::cout);
}

// Per row: the smallest change these runs would call 19 times in 20, and the runs per side a
// change of --detect needs, so "no significant difference" is read for what it is. Rows whose
// run-to-run variation is unknown are left out: a note already says so for them.
void print_resolution(const analysis::Comparison& c) {
  bool header = false;
  for (const auto& row : c.rows) {
    const auto& t = row.throughput;
    if (std::isnan(t.resolution.detectable_change)) continue;
    if (!header) {
      std::cout << fmt::format("\nresolution (changes called {:.0f} times in 100):\n",
                               100 * analysis::kDetectionPower);
      header = true;
    }
    std::cout << fmt::format("{} {} {}: ", row.workload, row.mode, row.setting);
    std::cout << fmt::format(
        "with {} + {} runs varying {} from run to run, changes of {} or more are called; ",
        t.runs_a, t.runs_b, format_percent(t.between_runs.sd),
        format_percent(t.resolution.detectable_change));
    const double detect = c.statistics.detect;
    if (t.resolution.runs_per_side_to_detect == 0)
      std::cout << fmt::format("a {} change would need more than {} runs per side\n",
                               format_percent(detect), analysis::kMaxRunsPerSide);
    else
      std::cout << fmt::format("a {} change needs {} runs per side\n", format_percent(detect),
                               t.resolution.runs_per_side_to_detect);
  }
}

void print_human(const analysis::Comparison& c) {
  std::cout << fmt::format(
      "A = {}\nB = {}\nratio = throughput B / A; {:.0f}% interval: block bootstrap ({} "
      "resamples) joined with the between-run t interval when replicates exist; tolerance "
      "{:.1f}%\n\n",
      c.label_a, c.label_b, 100 * c.statistics.confidence, c.statistics.resamples,
      100 * c.statistics.tolerance);
  print_environment(c);
  Table table({"workload", "mode", "setting", "throughput A", "throughput B", "unit", "B/A",
               "interval", "verdict", "runs A", "runs B", "run-to-run SD"});
  for (const auto& row : c.rows) {
    const auto& t = row.throughput;
    const std::string spread =
        t.between_runs.dof == 0
            ? "unknown"
            : fmt::format("{} ({} dof)", format_percent(t.between_runs.sd), t.between_runs.dof);
    table.add_row({row.workload, row.mode, row.setting, format_number(t.throughput_a, 2),
                   format_number(t.throughput_b, 2), row.throughput_unit, ratio_text(t.ratio),
                   interval_text(t), analysis::verdict_name(t.verdict), ids_text(row.runs_a),
                   ids_text(row.runs_b), spread});
  }
  table.print(std::cout);
  std::cout << '\n';
  for (const auto& row : c.rows) {
    std::cout << fmt::format("{} {} {}: {}", row.workload, row.mode, row.setting,
                             row.throughput.reason);
    if (!row.key_differences.empty())
      std::cout << " (differs: " << join(row.key_differences, ", ") << ")";
    std::cout << '\n';
    for (const auto& [name, t] : {std::pair{"prefill prompt tokens/s", &row.prefill},
                                  std::pair{"decode output tokens/s", &row.decode}})
      if (*t)
        std::cout << fmt::format("  {}: A {}, B {}, B/A {} {} {}\n", name,
                                 format_number((*t)->throughput_a, 2),
                                 format_number((*t)->throughput_b, 2), ratio_text((*t)->ratio),
                                 interval_text(**t), analysis::verdict_name((*t)->verdict));
  }
  print_resolution(c);
  for (const auto& row : c.rows)
    if (!row.categories.empty()) print_categories(row);
  if (!c.only_in_a.empty()) std::cout << "\nonly in A: " << join(c.only_in_a, "; ") << '\n';
  if (!c.only_in_b.empty()) std::cout << "only in B: " << join(c.only_in_b, "; ") << '\n';
  for (const auto& note : c.notes) std::cout << "note: " << note << '\n';
  using analysis::Verdict;
  std::cout << fmt::format(
      "\n{} slower, {} faster, {} no significant difference, {} not comparable{}\n",
      c.count(Verdict::kSlower), c.count(Verdict::kFaster),
      c.count(Verdict::kNoSignificantDifference), c.count(Verdict::kNotComparable),
      c.slowdown_found() ? " -> exit 1 (significant slowdown beyond the tolerance)" : "");
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare two runs, two databases or two tagged groups: throughput ratio with an "
      "interval and a verdict per workload (exit 1 on a significant slowdown)");
  auto f = std::make_shared<CompareFlags>();
  cmd->add_option("sources", f->sources,
                  "Two run ids (A B, each may be a comma list) in --db, or two database files")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--db", f->db, "Database holding the runs (run ids, --tag, --where-*)")
      ->capture_default_str();
  cmd->add_option("--tag", f->tags, "Tag of side A, then of side B (once: both sides)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--where-a", f->where_a,
                  "Side A only has runs with FIELD=VALUE (tag, threads, batch, device, a config "
                  "key; repeatable). A field filtered differently on both sides may differ "
                  "between matched runs")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--where-b", f->where_b, "Side B only has runs with FIELD=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--ignore", f->ignore,
                  "Key fields that may differ between matched runs (e.g. threads; repeatable "
                  "or comma-separated)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--all-runs", f->all_runs,
                "Use every matching run as a replicate (default: the newest per setting)");
  cmd->add_option("--tolerance", f->statistics.tolerance,
                  "Differences within this fraction are never called (0.02 = 2%)")
      ->capture_default_str();
  cmd->add_option("--confidence", f->statistics.confidence, "Of the interval")
      ->capture_default_str();
  cmd->add_option("--resamples", f->statistics.resamples, "Bootstrap replicates")
      ->capture_default_str();
  cmd->add_option("--seed", f->statistics.seed, "Bootstrap seed (fixed: results repeat)")
      ->capture_default_str();
  cmd->add_option("--detect", f->statistics.detect,
                  "Throughput change to size the runs for: each row says how many runs per "
                  "side would call it 19 times in 20 (0.10 = 10%)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print one JSON document (docs/json.md)");
  cmd->callback([f, &exit_code] {
    const analysis::Comparison c = analysis::compare_sources(make_request(*f));
    if (f->json) {
      std::cout << json_text(analysis::comparison_json(c), 2) << '\n';
    } else {
      print_human(c);
    }
    if (c.slowdown_found()) exit_code = 1;
  });
}

}  // namespace plumb::cli
