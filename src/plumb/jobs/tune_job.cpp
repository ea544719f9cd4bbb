// The tuning session (see tune_job.h): each phase fills its part of the typed result, and the
// session is stored once, whether or not a best configuration was found.
#include "plumb/jobs/tune_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/run_comparison.h"
#include "plumb/analysis/tune_search.h"
#include "plumb/core/clock.h"
#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "plumb/core/execution_settings.h"
#include "plumb/core/mode.h"
#include "plumb/core/outcome.h"
#include "plumb/core/precision.h"
#include "plumb/jobs/precision_measure.h"
#include "plumb/jobs/stored_or_fresh_probe.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/run/statistic_registry.h"
#include "plumb/run/tune_trials.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/run_record.h"
#include "plumb/store/tune_record.h"

namespace plumb::jobs {
namespace {

constexpr double kTuneNaN = std::numeric_limits<double>::quiet_NaN();
// Seconds each contribution trial aims at (steps = this over the best's trial step time).
constexpr double kContributionTrialS = 2;

void tune_progress_line(const std::string& line) {
  std::cerr << "  " << line << '\n';
}

struct TunePrecisionCheck {
  Dtype dtype = Dtype::kFp32;
  bool measured = false;
  // Against fp32 (run/error_against_fp32.h): relative L2 of floating outputs, the share of
  // tokens that differ for token outputs.
  double error = kTuneNaN;
  std::string measure = run::kRelativeL2Metric;
  bool allowed = false;
  std::string note;
  double logits_relative_l2 = kTuneNaN;  // generative models (see TunePrecisionError)
};

// The output error of every candidate precision against fp32, on the same inputs and weights
// (run/error_against_fp32.h). fp32 itself is exact. A training run is judged by its forward
// pass's error: bf16 training autocasts the same operators.
std::vector<TunePrecisionCheck> check_precisions(const Workload& w, const run::RunOptions& stock,
                                                 const std::vector<Dtype>& candidates,
                                                 double max_error) {
  std::vector<TunePrecisionCheck> out;
  std::cerr << "output error of each precision against fp32 ...\n";
  const run::Fp32Reference reference(w, stock);
  for (Dtype d : candidates) {
    TunePrecisionCheck c;
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
      c.measured = e.outcome.ok();
      c.error = e.value;
      c.note = e.outcome.reason;
      if (e.error.measured_on == "logits") c.logits_relative_l2 = e.error.relative_l2;
    }
    c.allowed = c.measured && c.error <= max_error;
    if (c.measured && !c.allowed)
      c.note = fmt::format("{} {:.2e} exceeds --max-error {:g}", c.measure, c.error, max_error);
    tune_progress_line(fmt::format("{:<5} {}", dtype_name(d),
                                   c.measured ? fmt::format("{} {:.2e}{}", c.measure, c.error,
                                                            c.allowed ? "" : " (over budget)")
                                              : c.note));
    out.push_back(std::move(c));
  }
  return out;
}

// Powers of two from 1 to 4x the stock batch: the batches a latency bound chooses among.
std::vector<int64_t> candidate_batches(int64_t stock) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b <= 4 * stock; b *= 2) out.push_back(b);
  return out;
}

store::TuneRunOptions tune_run_options(const run::RunOptions& o) {
  return {o.threads,
          dtype_name(o.dtype),
          memory_format_name(o.memory_format),
          engine_name(o.engine),
          heap_policy_name(o.heap),
          o.config.get_int("batch")};
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
    out.stock.push_back(time_and_store(w, stock, db, tag));
    out.best.push_back(time_and_store(w, best, db, tag));
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
  return n > 0 ? sum / static_cast<double>(n) : kTuneNaN;
}

// Where one more run of the best configuration is expected to land (95%): the registered
// prediction interval around its runs' mean throughput, with the between-run spread of log
// throughput that plumb compare pooled over stock and best.
store::TuneInterval prediction_interval(double mean, const analysis::BetweenRunSpread& spread,
                                        size_t runs) {
  if (spread.dof == 0 || !std::isfinite(spread.sd) || runs == 0)
    return {kTuneNaN, kTuneNaN, "between-run spread unknown: measure with --replicates 2 or more"};
  const std::vector<double> none;  // the spread is known; no samples of its own
  const run::Estimate e = run::statistic::kPredictionInterval.compute(
      run::Samples(none), {0.5, 0.95,
                           run::KnownSpread{mean, spread.sd, static_cast<double>(spread.dof),
                                            static_cast<double>(runs)}});
  return {e.low, e.high, ""};
}

std::vector<int64_t> run_ids(const std::vector<store::StoredRun>& runs) {
  std::vector<int64_t> ids;
  for (const auto& r : runs) ids.push_back(r.id);
  return ids;
}

struct Contributions {
  std::vector<store::TuneContribution> rows;
  std::string most;              // the factor the best loses the most without
  std::vector<size_t> unneeded;  // factors whose removal costs under kTuneNoDifference
};

// Each factor where best differs from stock, alone from stock and taken back from best, timed
// in one batch of trials with stock and best themselves (same steps, same conditions).
Contributions contributions(const Workload& w, const run::TuneSpace& space,
                            const run::TunePoint& best, size_t steps) {
  Contributions out;
  const run::TunePoint stock(space.factors.size(), 0);
  const auto points = analysis::contribution_points(stock, best);
  if (points.empty()) return out;
  // Each distinct point once (with one differing factor, "alone" is the best itself and
  // "removed" is stock).
  std::vector<run::TunePoint> batch = {stock, best};
  const auto index_of = [&](const run::TunePoint& p) {
    const auto found = std::find(batch.begin(), batch.end(), p);
    if (found != batch.end()) return static_cast<size_t>(found - batch.begin());
    batch.push_back(p);
    return batch.size() - 1;
  };
  std::vector<size_t> measured_as;
  for (const auto& p : points) measured_as.push_back(index_of(p.point));
  std::cerr << fmt::format("contributions: {} trials of {} steps ...\n", batch.size(), steps);
  run::TrialRunner trials(w, space, tune_progress_line);
  const auto outcomes = trials(batch, steps);
  const double stock_thr = outcomes[0].outcome.ok() ? outcomes[0].throughput : kTuneNaN;
  const double best_thr = outcomes[1].outcome.ok() ? outcomes[1].throughput : kTuneNaN;
  double largest_loss = 0;
  for (size_t f = 0; f < space.factors.size(); ++f) {
    if (best[f] == 0) continue;
    store::TuneContribution c;
    c.factor = space.factors[f].name;
    c.stock = space.factors[f].values[0];
    c.best = space.factors[f].values[best[f]];
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].factor != f) continue;
      const auto& o = outcomes[measured_as[i]];
      const double ratio =
          o.outcome.ok() ? o.throughput / (points[i].from_stock ? stock_thr : best_thr) : kTuneNaN;
      (points[i].from_stock ? c.alone_from_stock : c.removed_from_best) = ratio;
      if (!o.outcome.ok())
        (points[i].from_stock ? c.alone_note : c.removed_note) = o.outcome.reason;
      if (points[i].from_stock || !std::isfinite(ratio)) continue;
      if (1 - ratio > largest_loss) {
        largest_loss = 1 - ratio;
        out.most = space.factors[f].name;
      }
      if (ratio >= 1 - kTuneNoDifference) out.unneeded.push_back(f);
    }
    c.reverted = std::find(out.unneeded.begin(), out.unneeded.end(), f) != out.unneeded.end();
    out.rows.push_back(std::move(c));
  }
  return out;
}

// Where stock and best sit under the compute roof of their precisions: the step's FLOPs from
// one profiled step of the best (cost model), per unit, times each one's throughput.
store::TuneHeadroom headroom(const TuneOptions& options, store::ResultsStore& db, double stock_thr,
                             const run::RunOptions& best, double best_thr) {
  store::TuneHeadroom h;
  std::cerr << "headroom: one profiled step of the best configuration ...\n";
  const auto profiled = profile::profile_workload(*options.workload, best, 1, {}, false, false);
  if (profiled.status != run::RunStatus::kOk) {
    h.note = "the best configuration could not be profiled: " + profiled.message;
    return h;
  }
  const double flops = analysis::step_item(profiled.profile, "step").flops;
  if (!(flops > 0) || !(profiled.units_per_step > 0)) {
    h.note = "the cost model counted no FLOPs in the step";
    return h;
  }
  const double per_unit = flops / profiled.units_per_step;
  h.flops_per_unit = per_unit;
  const store::StoredProbe probe = current_probe(db, {false, false, 0}).probe;
  h.probe_id = probe.id;
  for (const auto& [roof, o, thr] :
       {std::tuple{&h.stock, &options.stock, stock_thr}, std::tuple{&h.best, &best, best_thr}}) {
    roof->dtype = dtype_name(o->dtype);
    roof->achieved_flops = per_unit * thr;
    try {
      const auto ceilings = analysis::ceilings_from_probe(
          probe.document, dtype_name(o->dtype), o->threads, analysis::PeakKind::kInstruction);
      roof->roof_flops = ceilings.peak_flops;
      roof->roof_source = ceilings.peak_source;
      roof->roof_fraction = per_unit * thr / ceilings.peak_flops;
    } catch (const UsageError& e) {
      roof->roof_note = e.what();
    }
  }
  return h;
}

// The session under way: its options, the result so far, and the record it is stored as.
struct TuneSession {
  const TuneOptions& options;
  store::ResultsStore& db;
  store::StoredTuneSession record;

  store::TuneResult& result() { return record.result; }
  store::StoredTuneSession finish(bool found, const std::string& message) {
    record.found = result().found = found;
    result().message = message;
    db.save_tune_session(record);
    return record;
  }
};

// The first precision checked is the stock's: when it is over the budget nothing can be tuned.
store::StoredTuneSession stop_at_precisions(TuneSession& s,
                                            const std::vector<TunePrecisionCheck>& checks) {
  const auto closest = std::min_element(checks.begin(), checks.end(), [](auto& a, auto& b) {
    return (a.measured ? a.error : INFINITY) < (b.measured ? b.error : INFINITY);
  });
  s.result().search.stop_reason = "not started";
  return s.finish(
      false, fmt::format(
                 "no precision meets --max-error {:g}: the stock's {} is over it; the "
                 "closest is {} ({}); raise --max-error or allow fp32 (--dtypes)",
                 s.options.max_error, dtype_name(s.options.stock.dtype), dtype_name(closest->dtype),
                 closest->measured ? fmt::format("{} {:.2e}", closest->measure, closest->error)
                                   : closest->note));
}

// No point of the space ran within the bounds: the closest to the latency bound, or why not.
store::StoredTuneSession stop_at_search(TuneSession& s, const run::TuneSpace& space,
                                        const std::vector<run::TunePoint>& points,
                                        const analysis::HalvingResult& search) {
  const double bound_s = s.options.latency_bound_s;
  const size_t closest = analysis::quickest_point(search, points.size());
  std::string message = "no configuration ran";
  if (closest < points.size()) {
    const auto* o = analysis::latest_outcome(search, closest);
    const std::string setting = run::point_text(space.factors, points[closest]);
    if (bound_s > 0)
      message = fmt::format(
          "no configuration meets --latency-bound {:g} ms; the closest is {} at a mean step of "
          "{:.2f} ms",
          1e3 * bound_s, setting, 1e3 * o->step_s);
    s.result().closest = store::TuneClosest{
        setting, o->step_s,
        run::reproducer_command(*s.options.workload, run::options_at(space, points[closest]))};
  } else {
    // Every trial failed: say why with the stock's reason.
    message += ": " + search.rungs.front().outcomes.front().outcome.reason;
  }
  return s.finish(false, message);
}

// Successive halving over the space within the budget; the search summary goes in the result.
analysis::HalvingResult search_space(TuneSession& s, const run::TuneSpace& space,
                                     const std::vector<run::TunePoint>& points,
                                     analysis::HalvingOptions& halving) {
  halving.budget_s = s.options.budget_s;
  halving.latency_bound_s = s.options.latency_bound_s;
  std::cerr << fmt::format("searching {} configurations (successive halving, budget {:.0f} s)\n",
                           points.size(), s.options.budget_s);
  run::TrialRunner trials(*s.options.workload, space, tune_progress_line);
  trials.set_deadline(std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(s.options.budget_s)));
  analysis::HalvingResult search = analysis::successive_halving(points, trials, halving);
  size_t not_reached = 0;
  for (const auto& outcome : search.rungs.front().outcomes)
    not_reached += outcome.outcome.state == OutcomeState::kTimeout ? 1 : 0;
  store::TuneSearchSummary& summary = s.result().search;
  summary.started = true;
  summary.method = "successive halving";
  summary.eta = halving.eta;
  summary.first_steps = halving.first_steps;
  for (const auto& rung : search.rungs)
    summary.rungs.push_back({rung.steps, rung.points.size(), rung.seconds});
  summary.trials = search.trials;
  summary.seconds = search.seconds;
  summary.stop_reason = not_reached > 0 ? fmt::format(
                                              "budget: spent in rung 0, {} of {} "
                                              "configurations not measured",
                                              not_reached, points.size())
                                        : search.stop_reason;
  summary.not_measured = not_reached;
  return search;
}

// The search's best, less the changes that made no difference, against stock: contribution
// trials, the final runs, the speedup, and the headroom.
store::StoredTuneSession measure_best(TuneSession& s, const run::TuneSpace& space,
                                      const run::TunePoint& searched_best, size_t steps) {
  const Workload& w = *s.options.workload;
  const Contributions parts = contributions(w, space, searched_best, steps);
  run::TunePoint best_point = searched_best;
  for (size_t factor : parts.unneeded) best_point[factor] = 0;
  s.result().search.best = run::point_text(space.factors, searched_best);
  store::TuneFinal& f = s.result().final_runs.emplace();
  f.contributions = parts.rows;
  f.most = parts.most;
  const run::RunOptions& stock = s.options.stock;
  const run::RunOptions best = run::options_at(space, best_point);
  std::cerr << fmt::format("best: {}; stock and best to steady state, {} runs each ...\n",
                           run::point_text(space.factors, best_point), s.options.replicates);
  const FinalRuns final_runs =
      measure_final(w, stock, best, s.options.replicates, s.db, s.options.tag);
  const auto speed = analysis::compare_throughput(
      side_of(final_runs.stock), side_of(final_runs.best), analysis::ComparisonOptions{});
  const double stock_thr = mean_throughput(final_runs.stock);
  const double best_thr = mean_throughput(final_runs.best);
  f.stock = {"stock",
             tune_run_options(stock),
             run::reproducer_command(w, stock),
             run_ids(final_runs.stock),
             stock_thr,
             std::nullopt};
  f.best = {run::point_text(space.factors, best_point),
            tune_run_options(best),
            run::reproducer_command(w, best),
            run_ids(final_runs.best),
            best_thr,
            prediction_interval(best_thr, speed.between_runs, final_runs.best.size())};
  f.speedup = {speed.ratio,   speed.ci_low,
               speed.ci_high, analysis::verdict_name(speed.verdict),
               speed.reason,  speed.between_runs.sd};
  if (speed.verdict == analysis::Verdict::kNotComparable)
    return s.finish(false, "the final runs could not be compared: " + speed.reason);
  s.result().headroom = headroom(s.options, s.db, stock_thr, best, best_thr);
  s.record.speedup = speed.ratio;
  s.record.speedup_low = speed.ci_low;
  s.record.speedup_high = speed.ci_high;
  s.record.best_command = f.best.command;
  return s.finish(true, "");
}

// The session's headline and its precision errors; the stock's own is checked first.
std::vector<TunePrecisionCheck> open_session(TuneSession& s, const std::string& started_at) {
  const TuneOptions& o = s.options;
  const Workload& w = *o.workload;
  store::TuneResult& r = s.result();
  r.workload = w.info.name;
  r.mode = mode_name(o.stock.mode);
  r.batch = o.stock.config.get_int("batch");
  r.threads = o.stock.threads;
  r.unit = w.info.throughput_unit;
  r.budget_s = o.budget_s;
  r.max_error = o.max_error;
  r.latency_bound_s = o.latency_bound_s;
  std::vector<Dtype> checked = {o.stock.dtype};
  for (Dtype d : o.candidates)
    if (d != o.stock.dtype) checked.push_back(d);
  const auto checks = check_precisions(w, o.stock, checked, o.max_error);
  for (const auto& c : checks)
    r.precision_errors.push_back({dtype_name(c.dtype), c.measured ? c.error : kTuneNaN, c.measure,
                                  c.allowed, c.note, c.logits_relative_l2});
  store::StoredTuneSession& rec = s.record;
  rec.started_at = started_at;
  rec.workload = r.workload;
  rec.mode = r.mode;
  rec.batch = r.batch;
  rec.threads = r.threads;
  rec.tag = o.tag;
  rec.environment = platform::capture_environment(o.stock.threads, o.stock.device);
  rec.speedup = rec.speedup_low = rec.speedup_high = kTuneNaN;
  return checks;
}

}  // namespace

std::vector<Dtype> tune_candidate_dtypes(const std::string& listed, Mode mode) {
  if (!listed.empty()) return parse_dtype_list(listed);
  if (mode == Mode::kTrain) return {Dtype::kFp32, Dtype::kBf16};  // autocast: bf16 only
  return all_dtypes();
}

store::StoredTuneSession run_tune(const TuneOptions& options, store::ResultsStore& db) {
  PLUMB_ASSERT(options.workload != nullptr, "a tune job names its workload");
  const std::string started_at = utc_now_iso8601();
  TuneSession s{options, db, {}};
  const auto checks = open_session(s, started_at);
  if (!checks.front().allowed) return stop_at_precisions(s, checks);

  const Workload& w = *options.workload;
  run::TuneSpaceRequest request;
  for (const auto& c : checks)
    if (c.allowed && c.dtype != options.stock.dtype) request.dtypes.push_back(c.dtype);
  request.has_convolutions = run::has_convolution_weights(w, options.stock);
  if (options.latency_bound_s > 0)
    request.batches = candidate_batches(options.stock.config.get_int("batch"));
  const run::TuneSpace space = run::make_tune_space(options.stock, request);
  const auto points = analysis::all_points(space.factors);
  s.result().space = {space.factors, points.size(), space.not_searched};

  analysis::HalvingOptions halving;
  const analysis::HalvingResult search = search_space(s, space, points, halving);
  if (search.ranking.empty()) return stop_at_search(s, space, points, search);

  const auto* lead = analysis::latest_outcome(search, search.ranking.front());
  // About kContributionTrialS per trial, no more steps than the search's longest trials,
  // and no fewer than its second rung's.
  const size_t contribution_steps = std::max<size_t>(
      halving.first_steps * halving.eta,
      std::min<size_t>(static_cast<size_t>(std::lround(kContributionTrialS / lead->step_s)),
                       search.rungs.back().steps));
  return measure_best(s, space, points[search.ranking.front()], contribution_steps);
}

}  // namespace plumb::jobs
