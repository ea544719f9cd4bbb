// plumb tune: how much faster a workload runs on this machine than its stock configuration, with
// settings that keep what it computes (threads, precision within an error budget, memory
// format, engine, heap, batch within a latency bound), and which change bought what.
// Sequence: the output error of each allowed precision against fp32 -> the space ->
// successive halving within --budget (analysis/tune_search.h) -> stock and best measured to
// steady state, alternately, --replicates times each (stored runs) -> the speedup with
// plumb compare's interval -> contribution trials (each differing factor alone from stock,
// and removed from best) -> the best's place under the roof of its precision. Exit 1 when no
// configuration meets the error budget or latency bound (the closest is reported), 2 for bad
// input. Method and figures: docs/tuning.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/run_comparison.h"
#include "plumb/analysis/tune_search.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/duration_text.h"
#include "plumb/jobs/emulated_precisions.h"
#include "plumb/cli/measure_options.h"
#include "plumb/jobs/precision_measure.h"
#include "plumb/cli/table.h"
#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/run/runner.h"
#include "plumb/run/stats.h"
#include "plumb/run/tune_trials.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

using json = nlohmann::ordered_json;

struct TuneFlags {
  MeasureFlags measure;
  ConfigOverrides overrides;
  std::string budget = "10m";
  double max_error = 0.02;
  std::string dtypes;  // "": every precision the mode can run
  std::string latency_bound;
  size_t replicates = 3;
};

struct PrecisionCheck {
  Dtype dtype = Dtype::kFp32;
  bool measured = false;
  // Against fp32 (run/error_against_fp32.h): relative L2 of floating outputs, the share of
  // tokens that differ for token outputs.
  double error = std::numeric_limits<double>::quiet_NaN();
  std::string measure = run::kRelativeL2Metric;
  bool allowed = false;
  std::string note;
};

void progress_line(const std::string& line) {
  std::cerr << "  " << line << '\n';
}

// The output error of every candidate precision against fp32, on the same inputs and weights
// (run/error_against_fp32.h). fp32 itself is exact. A training run is judged by its forward
// pass's error: bf16 training autocasts the same operators.
std::vector<PrecisionCheck> check_precisions(const Workload& w, const run::RunOptions& stock,
                                             const std::vector<Dtype>& candidates,
                                             double max_error) {
  std::vector<PrecisionCheck> out;
  std::cerr << "output error of each precision against fp32 ...\n";
  const run::Fp32Reference reference(w, stock);
  for (Dtype d : candidates) {
    PrecisionCheck c;
    c.dtype = d;
    c.measure = reference.metric();
    if (d == Dtype::kFp32) {
      c.measured = true;
      c.error = 0;
    } else if (stock.mode == Mode::kTrain && d == Dtype::kInt8) {
      c.note = "int8 is post-training quantization: inference only";
    } else {
      run::RunOptions o = reference.setting();
      o.dtype = d;
      const auto e = reference.error_of(o);
      c.measured = e.measured;
      c.error = e.value;
      c.note = e.note;
    }
    c.allowed = c.measured && c.error <= max_error;
    if (c.measured && !c.allowed)
      c.note = fmt::format("{} {:.2e} exceeds --max-error {:g}", c.measure, c.error, max_error);
    progress_line(fmt::format("{:<5} {}", dtype_name(d),
                              c.measured ? fmt::format("{} {:.2e}{}", c.measure, c.error,
                                                       c.allowed ? "" : " (over budget)")
                                         : c.note));
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Dtype> candidate_dtypes(const TuneFlags& f, Mode mode) {
  if (!f.dtypes.empty()) return parse_dtype_list(f.dtypes);
  if (mode == Mode::kTrain) return {Dtype::kFp32, Dtype::kBf16};  // autocast: bf16 only
  return all_dtypes();
}

// Powers of two from 1 to 4x the stock batch: the batches a latency bound chooses among.
std::vector<int64_t> candidate_batches(int64_t stock) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b <= 4 * stock; b *= 2) out.push_back(b);
  return out;
}

json options_json(const run::RunOptions& o) {
  json j;
  j["threads"] = o.threads;
  j["dtype"] = dtype_name(o.dtype);
  j["memory_format"] = memory_format_name(o.memory_format);
  j["engine"] = engine_name(o.engine);
  j["heap"] = heap_policy_name(o.heap);
  j["batch"] = o.config.get_int("batch");
  return j;
}

// Stock and best measured to steady state, alternately, so drift on the machine falls on both.
struct FinalRuns {
  std::vector<store::StoredRun> stock, best;
};

FinalRuns measure_final(const Workload& w, const run::RunOptions& stock,
                        const run::RunOptions& best, size_t replicates, store::ResultsStore& db,
                        const std::string& tag) {
  FinalRuns out;
  for (size_t i = 0; i < replicates; ++i) {
    out.stock.push_back(jobs::time_and_store(w, stock, db, tag));
    out.best.push_back(jobs::time_and_store(w, best, db, tag));
  }
  return out;
}

analysis::SideSamples side_of(const std::vector<store::StoredRun>& runs) {
  analysis::SideSamples side;
  std::vector<double> throughputs;
  for (const auto& r : runs) {
    if (r.result.status != run::RunStatus::kOk) continue;
    side.runs_step_s.push_back(r.result.samples_s);
    side.units_per_step.push_back(r.result.units_per_step);
    throughputs.push_back(r.result.throughput);
  }
  side.replicate_groups = {throughputs};
  return side;
}

double mean_throughput(const std::vector<store::StoredRun>& runs) {
  double sum = 0;
  size_t n = 0;
  for (const auto& r : runs)
    if (r.result.status == run::RunStatus::kOk) {
      sum += r.result.throughput;
      ++n;
    }
  return n > 0 ? sum / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

// Where one more run of the best configuration is expected to land (95%): its runs' mean
// throughput times exp(+-t * s * sqrt(1 + 1/k)), s the between-run spread of log throughput.
json prediction_interval(double mean, const analysis::BetweenRunSpread& spread, size_t runs) {
  json j;
  if (spread.dof == 0 || !std::isfinite(spread.sd) || runs == 0) {
    j["low"] = nullptr;
    j["high"] = nullptr;
    j["note"] = "between-run spread unknown: measure with --replicates 2 or more";
    return j;
  }
  const double half = run::t_critical(0.95, static_cast<double>(spread.dof)) * spread.sd *
                      std::sqrt(1 + 1.0 / static_cast<double>(runs));
  j["low"] = json_number(mean * std::exp(-half));
  j["high"] = json_number(mean * std::exp(half));
  return j;
}

std::vector<int64_t> run_ids(const std::vector<store::StoredRun>& runs) {
  std::vector<int64_t> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  return ids;
}

// A factor whose removal from the best costs less than this fraction of throughput in the
// contribution trials made no difference beyond trial noise: the best reverts it to stock, so
// the configuration reported changes only what matters.
constexpr double kNoDifference = 0.02;
// Seconds each contribution trial aims at (steps = this over the best's trial step time).
constexpr double kContributionTrialS = 2;

struct Contributions {
  json rows = json::array();
  std::string most;              // the factor the best loses the most without
  std::vector<size_t> unneeded;  // factors whose removal costs under kNoDifference
};

// Each factor where best differs from stock, alone from stock and taken back from best, timed
// in one batch of trials with stock and best themselves (same steps, same conditions).
Contributions contributions(const Workload& w, const run::TuneSpace& space,
                            const analysis::TunePoint& best, size_t steps) {
  Contributions out;
  const analysis::TunePoint stock(space.factors.size(), 0);
  const auto points = analysis::contribution_points(stock, best);
  if (points.empty()) return out;
  // Each distinct point once (with one differing factor, "alone" is the best itself and
  // "removed" is stock).
  std::vector<analysis::TunePoint> batch = {stock, best};
  const auto index_of = [&](const analysis::TunePoint& p) {
    const auto found = std::find(batch.begin(), batch.end(), p);
    if (found != batch.end()) return static_cast<size_t>(found - batch.begin());
    batch.push_back(p);
    return batch.size() - 1;
  };
  std::vector<size_t> measured_as;
  for (const auto& p : points) measured_as.push_back(index_of(p.point));
  std::cerr << fmt::format("contributions: {} trials of {} steps ...\n", batch.size(), steps);
  run::TrialRunner trials(w, space, progress_line);
  const auto outcomes = trials(batch, steps);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double stock_thr = outcomes[0].ok ? outcomes[0].throughput : nan;
  const double best_thr = outcomes[1].ok ? outcomes[1].throughput : nan;
  double largest_loss = 0;
  for (size_t f = 0; f < space.factors.size(); ++f) {
    if (best[f] == 0) continue;
    json c;
    c["factor"] = space.factors[f].name;
    c["stock"] = space.factors[f].values[0];
    c["best"] = space.factors[f].values[best[f]];
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].factor != f) continue;
      const auto& o = outcomes[measured_as[i]];
      const double ratio =
          o.ok ? o.throughput / (points[i].from_stock ? stock_thr : best_thr) : nan;
      c[points[i].from_stock ? "alone_from_stock" : "removed_from_best"] = json_number(ratio);
      if (!o.ok) c[points[i].from_stock ? "alone_note" : "removed_note"] = o.message;
      if (points[i].from_stock || !std::isfinite(ratio)) continue;
      if (1 - ratio > largest_loss) {
        largest_loss = 1 - ratio;
        out.most = space.factors[f].name;
      }
      if (ratio >= 1 - kNoDifference) out.unneeded.push_back(f);
    }
    c["reverted"] = std::find(out.unneeded.begin(), out.unneeded.end(), f) != out.unneeded.end();
    out.rows.push_back(std::move(c));
  }
  return out;
}

// Where stock and best sit under the compute roof of their precisions: the step's FLOPs from
// one profiled step of the best (cost model), per unit, times each one's throughput.
json headroom(const Workload& w, const run::RunOptions& stock, double stock_thr,
              const run::RunOptions& best, double best_thr, store::ResultsStore& db) {
  json j;
  std::cerr << "headroom: one profiled step of the best configuration ...\n";
  const auto profiled = profile::profile_workload(w, best, 1, {}, false, false);
  if (profiled.status != run::RunStatus::kOk) {
    j["note"] = "the best configuration could not be profiled: " + profiled.message;
    return j;
  }
  const double flops = analysis::step_item(profiled.profile, "step").flops;
  if (!(flops > 0) || !(profiled.units_per_step > 0)) {
    j["note"] = "the cost model counted no FLOPs in the step";
    return j;
  }
  const double per_unit = flops / profiled.units_per_step;
  j["flops_per_unit"] = json_number(per_unit);
  const jobs::ProbeChoice probe = jobs::current_probe(db, {false, false, 0});
  j["probe_id"] = probe.probe.id;
  for (const auto& [name, o, thr] :
       {std::tuple{"stock", &stock, stock_thr}, std::tuple{"best", &best, best_thr}}) {
    json side;
    side["dtype"] = dtype_name(o->dtype);
    side["achieved_flops"] = json_number(per_unit * thr);
    try {
      const auto ceilings = analysis::ceilings_from_probe(
          probe.probe.document, dtype_name(o->dtype), o->threads, analysis::PeakKind::kInstruction);
      side["roof_flops"] = json_number(ceilings.peak_flops);
      side["roof_source"] = ceilings.peak_source;
      side["roof_fraction"] = json_number(per_unit * thr / ceilings.peak_flops);
    } catch (const UsageError& e) {
      side["roof_flops"] = nullptr;
      side["roof_note"] = e.what();
    }
    j[name] = std::move(side);
  }
  return j;
}

std::string ratio_text(const json& v) {
  return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-";
}

void print_session(const store::StoredTuneSession& s) {
  const json& d = s.document;
  std::cout << fmt::format(
      "\n{} {} batch {} threads {}: {} points, {} trials in {:.1f} s ({})\n", s.workload, s.mode,
      s.batch, s.threads, d["space"]["points"].get<size_t>(), d["search"]["trials"].get<size_t>(),
      d["search"]["seconds"].get<double>(), d["search"]["stop_reason"].get<std::string>());
  Table precisions({"precision", "error vs fp32", "searched"});
  for (const auto& p : d["precision_errors"])
    precisions.add_row(
        {p["dtype"].get<std::string>(),
         p["error"].is_number()
             ? fmt::format("{:.2e} ({})", p["error"].get<double>(), p["measure"].get<std::string>())
             : "-",
         p["allowed"].get<bool>() ? "yes" : p.value("note", std::string("no"))});
  precisions.print(std::cout);
  if (!s.found) {
    std::cout << d["message"].get<std::string>() << '\n';
    return;
  }
  const std::string unit = d["unit"].get<std::string>();
  Table table({"configuration", "setting", unit, "runs"});
  for (const char* side : {"stock", "best"})
    table.add_row(
        {side, d[side]["setting"].get<std::string>(),
         format_number(
             d[side]["throughput"].is_number() ? d[side]["throughput"].get<double>() : NAN, 2),
         std::to_string(d[side]["run_ids"].size())});
  table.print(std::cout);
  if (d["best"]["setting"] == "stock")
    std::cout << "the search found nothing faster than stock beyond trial noise; the two rows "
                 "are the same configuration, measured apart\n";
  const json& sp = d["speedup"];
  std::cout << fmt::format("speedup: {} [{}, {}] ({})\n", ratio_text(sp["ratio"]),
                           ratio_text(sp["ci_low"]), ratio_text(sp["ci_high"]),
                           sp["verdict"].get<std::string>());
  if (!d["contributions"].empty()) {
    std::cout << fmt::format("search's best: {}\n", d["search"]["best"].get<std::string>());
    Table c({"factor", "stock", "searched", "alone from stock", "removed from best", "kept"});
    for (const auto& row : d["contributions"])
      c.add_row({row["factor"].get<std::string>(), row["stock"].get<std::string>(),
                 row["best"].get<std::string>(), ratio_text(row.value("alone_from_stock", json())),
                 ratio_text(row.value("removed_from_best", json())),
                 row["reverted"].get<bool>()
                     ? fmt::format("no: within {:.0f}% of the best without it", 100 * kNoDifference)
                     : "yes"});
    c.print(std::cout);
    if (d["most"].is_string())
      std::cout << "contributed most: " << d["most"].get<std::string>()
                << " (the best loses the most without it)\n";
  }
  const json& h = d["headroom"];
  if (h.contains("best") && h["best"]["roof_fraction"].is_number())
    std::cout << fmt::format(
        "headroom: the best runs at {} of the {} roof ({}); stock at {} of the {} roof\n",
        format_percent(h["best"]["roof_fraction"].get<double>()),
        h["best"]["dtype"].get<std::string>(), h["best"]["roof_source"].get<std::string>(),
        h["stock"]["roof_fraction"].is_number()
            ? format_percent(h["stock"]["roof_fraction"].get<double>())
            : "-",
        h["stock"]["dtype"].get<std::string>());
  else if (h.contains("note"))
    std::cout << "headroom: " << h["note"].get<std::string>() << '\n';
  std::cout << "reproduce the best: " << d["best"]["command"].get<std::string>() << '\n';
}

}  // namespace

void add_tune_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "tune",
      "How much faster a workload runs than its stock configuration, and what gets it there");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<TuneFlags>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", f->measure.mode, "train or infer")->capture_default_str();
  cmd->add_option("--budget", f->budget, "Time the search may take, e.g. 5m or 300s")
      ->capture_default_str();
  cmd->add_option("--max-error", f->max_error,
                  "Largest output error against fp32 a precision may add: relative L2 (the share "
                  "of tokens that differ for token outputs)")
      ->capture_default_str();
  cmd->add_option("--dtypes", f->dtypes,
                  "Precisions the search may use (default: fp32,bf16,fp16,int8 in inference, "
                  "fp32,bf16 in training)");
  cmd->add_option("--latency-bound", f->latency_bound,
                  "Largest mean step time, e.g. 50ms: the batch is searched within it");
  cmd->add_option("--replicates", f->replicates,
                  "Steady-state runs each of stock and best (alternately)")
      ->capture_default_str();
  add_config_options(*cmd, f->overrides);
  add_measure_options(*cmd, f->measure, 20, 30);
  cmd->callback([name, f, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const Mode mode = parse_mode(f->measure.mode);
    const double budget_s = parse_duration_s("--budget", f->budget);
    const double bound_s =
        f->latency_bound.empty() ? 0 : parse_duration_s("--latency-bound", f->latency_bound);
    if (!(f->max_error >= 0) || !std::isfinite(f->max_error))
      throw UsageError(fmt::format("--max-error is an output error, 0 or more (0.02 = 2%), got {}",
                                   f->max_error));
    if (f->replicates < 1) throw UsageError("--replicates must be at least 1");
    const Config config = resolve_config(w, f->overrides);
    const auto plan = make_options(w, config, mode, f->measure);
    if (plan.size() != 1)
      throw UsageError(
          "--dtype sets the stock precision, one of them; --dtypes lists what the "
          "search may use");
    const run::RunOptions& stock = plan.front();
    const auto candidates = candidate_dtypes(*f, mode);
    auto db = store::ResultsStore::open(f->measure.db);
    jobs::warn_emulated_precisions(*db, candidates, stock.threads);
    const std::string started_at = utc_now_iso8601();

    json doc;
    doc["workload"] = w.info.name;
    doc["mode"] = mode_name(mode);
    doc["batch"] = config.get_int("batch");
    doc["threads"] = stock.threads;
    doc["unit"] = w.info.throughput_unit;
    doc["budget_s"] = budget_s;
    doc["max_error"] = f->max_error;
    doc["latency_bound_s"] = bound_s > 0 ? json(bound_s) : json();

    // Precisions: the stock's own must meet the budget too, or nothing does.
    std::vector<Dtype> checked = {stock.dtype};
    for (Dtype d : candidates)
      if (d != stock.dtype) checked.push_back(d);
    const auto checks = check_precisions(w, stock, checked, f->max_error);
    std::vector<Dtype> allowed;
    doc["precision_errors"] = json::array();
    for (const auto& c : checks) {
      json p;
      p["dtype"] = dtype_name(c.dtype);
      p["error"] = c.measured ? json_number(c.error) : json();
      p["measure"] = c.measure;
      p["allowed"] = c.allowed;
      if (!c.note.empty()) p["note"] = c.note;
      doc["precision_errors"].push_back(std::move(p));
      if (c.allowed && c.dtype != stock.dtype) allowed.push_back(c.dtype);
    }

    store::StoredTuneSession session;
    session.started_at = started_at;
    session.workload = w.info.name;
    session.mode = mode_name(mode);
    session.batch = config.get_int("batch");
    session.threads = stock.threads;
    session.tag = f->measure.tag;
    session.environment = platform::capture_environment(stock.threads, stock.device);
    session.speedup = session.speedup_low = session.speedup_high =
        std::numeric_limits<double>::quiet_NaN();
    const auto finish = [&](bool found, const std::string& message) {
      session.found = found;
      doc["found"] = found;
      if (!message.empty()) doc["message"] = message;
      session.document = doc;
      db->save_tune_session(session);
      if (f->measure.json) {
        json out = doc;
        out["id"] = session.id;
        std::cout << json_text(out, 2) << '\n';
      } else {
        print_session(session);
        std::cout << "stored in " << f->measure.db << '\n';
      }
      if (!found) exit_code = 1;
    };

    if (!checks.front().allowed) {
      const auto closest = std::min_element(checks.begin(), checks.end(), [](auto& a, auto& b) {
        return (a.measured ? a.error : INFINITY) < (b.measured ? b.error : INFINITY);
      });
      doc["search"] = {{"trials", 0}, {"seconds", 0}, {"stop_reason", "not started"}};
      doc["space"] = {{"points", 0}};
      finish(
          false,
          fmt::format("no precision meets --max-error {:g}: the stock's {} is over it; the "
                      "closest is {} ({}); raise --max-error or allow fp32 (--dtypes)",
                      f->max_error, dtype_name(stock.dtype), dtype_name(closest->dtype),
                      closest->measured ? fmt::format("{} {:.2e}", closest->measure, closest->error)
                                        : closest->note));
      return;
    }

    run::TuneSpaceRequest request;
    request.dtypes = allowed;
    request.has_convolutions = run::has_convolution_weights(w, stock);
    if (bound_s > 0) request.batches = candidate_batches(config.get_int("batch"));
    const run::TuneSpace space = run::make_tune_space(stock, request);
    const auto points = analysis::all_points(space.factors);
    json factors = json::array();
    for (const auto& factor : space.factors)
      factors.push_back({{"name", factor.name}, {"values", factor.values}});
    doc["space"] = {
        {"factors", factors}, {"points", points.size()}, {"not_searched", space.not_searched}};

    analysis::HalvingOptions halving;
    halving.budget_s = budget_s;
    halving.latency_bound_s = bound_s;
    std::cerr << fmt::format("searching {} configurations (successive halving, budget {:.0f} s)\n",
                             points.size(), budget_s);
    run::TrialRunner trials(w, space, progress_line);
    trials.set_deadline(std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(budget_s)));
    const analysis::HalvingResult search = analysis::successive_halving(points, trials, halving);
    size_t not_reached = 0;
    for (const auto& outcome : search.rungs.front().outcomes)
      not_reached += outcome.message == run::kNotReached ? 1 : 0;
    json rungs = json::array();
    for (const auto& rung : search.rungs)
      rungs.push_back(
          {{"steps", rung.steps}, {"points", rung.points.size()}, {"seconds", rung.seconds}});
    doc["search"] = {
        {"method", "successive halving"},
        {"eta", halving.eta},
        {"first_steps", halving.first_steps},
        {"rungs", rungs},
        {"trials", search.trials},
        {"seconds", search.seconds},
        {"stop_reason", not_reached > 0 ? fmt::format("budget: spent in rung 0, {} of {} "
                                                      "configurations not measured",
                                                      not_reached, points.size())
                                        : search.stop_reason},
        {"not_measured", not_reached}};

    if (search.ranking.empty()) {
      const size_t closest = analysis::quickest_point(search, points.size());
      std::string message = "no configuration ran";
      if (closest < points.size()) {
        const auto* o = analysis::latest_outcome(search, closest);
        message = bound_s > 0
                      ? fmt::format(
                            "no configuration meets --latency-bound {:g} ms; the closest "
                            "is {} at a mean step of {:.2f} ms",
                            1e3 * bound_s, analysis::point_text(space.factors, points[closest]),
                            1e3 * o->step_s)
                      : "no configuration ran";
        doc["closest"] = {
            {"setting", analysis::point_text(space.factors, points[closest])},
            {"step_s", o->step_s},
            {"command", run::reproducer_command(w, run::options_at(space, points[closest]))}};
      } else {
        // Every trial failed: say why with the stock's reason.
        message += ": " + search.rungs.front().outcomes.front().message;
      }
      finish(false, message);
      return;
    }

    const analysis::TunePoint& searched_best = points[search.ranking.front()];
    const auto* lead = analysis::latest_outcome(search, search.ranking.front());
    // About kContributionTrialS per trial, no more steps than the search's longest trials,
    // and no fewer than its second rung's.
    const size_t contribution_steps = std::max<size_t>(
        halving.first_steps * halving.eta,
        std::min<size_t>(static_cast<size_t>(std::lround(kContributionTrialS / lead->step_s)),
                         search.rungs.back().steps));
    const Contributions parts = contributions(w, space, searched_best, contribution_steps);
    analysis::TunePoint best_point = searched_best;
    for (size_t factor : parts.unneeded) best_point[factor] = 0;
    doc["search"]["best"] = analysis::point_text(space.factors, searched_best);
    doc["contributions"] = parts.rows;
    doc["most"] = parts.most.empty() ? json() : json(parts.most);
    const run::RunOptions best = run::options_at(space, best_point);
    std::cerr << fmt::format("best: {}; stock and best to steady state, {} runs each ...\n",
                             analysis::point_text(space.factors, best_point), f->replicates);
    const FinalRuns final_runs = measure_final(w, stock, best, f->replicates, *db, f->measure.tag);
    const auto speed = analysis::compare_throughput(
        side_of(final_runs.stock), side_of(final_runs.best), analysis::ComparisonOptions{});
    const double stock_thr = mean_throughput(final_runs.stock);
    const double best_thr = mean_throughput(final_runs.best);
    doc["stock"] = {{"setting", "stock"},
                    {"options", options_json(stock)},
                    {"command", run::reproducer_command(w, stock)},
                    {"run_ids", run_ids(final_runs.stock)},
                    {"throughput", json_number(stock_thr)}};
    doc["best"] = {{"setting", analysis::point_text(space.factors, best_point)},
                   {"options", options_json(best)},
                   {"command", run::reproducer_command(w, best)},
                   {"run_ids", run_ids(final_runs.best)},
                   {"throughput", json_number(best_thr)},
                   {"interval_of_one_run",
                    prediction_interval(best_thr, speed.between_runs, final_runs.best.size())}};
    doc["speedup"] = {{"ratio", json_number(speed.ratio)},
                      {"ci_low", json_number(speed.ci_low)},
                      {"ci_high", json_number(speed.ci_high)},
                      {"verdict", analysis::verdict_name(speed.verdict)},
                      {"reason", speed.reason},
                      {"between_run_sd", json_number(speed.between_runs.sd)}};
    if (speed.verdict == analysis::Verdict::kNotComparable) {
      finish(false, "the final runs could not be compared: " + speed.reason);
      return;
    }
    doc["headroom"] = headroom(w, stock, stock_thr, best, best_thr, *db);
    session.speedup = speed.ratio;
    session.speedup_low = speed.ci_low;
    session.speedup_high = speed.ci_high;
    session.best_command = doc["best"]["command"].get<std::string>();
    finish(true, "");
  });
}

}  // namespace plumb::cli
