// plumb serve's measurement over a real model (see serve_session.h).
#include "plumb/run/serve_session.h"
#include "plumb/core/text.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/rate_search.h"
#include "plumb/run/statistic_registry.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {

namespace {

// Batches per prepared size, cycled so consecutive batches differ.
constexpr size_t kBatchesPerSize = 2;
// Warm-up per size: until steady, at least a few steps, at most this many or this long.
constexpr size_t kMinWarmupSteps = 3, kMaxWarmupSteps = 40;
constexpr double kMaxWarmupPerSizeS = 10;
// No measurement serves more queries than this (memory for their times stays small).
constexpr size_t kMaxQueries = 2'000'000;
constexpr double kSingleStreamPercentile = 0.90;

// The sizes a batch is padded up to: powers of two below max_batch, and max_batch.
std::vector<int64_t> padded_sizes(int64_t max_batch) {
  std::vector<int64_t> sizes;
  for (int64_t s = 1; s < max_batch; s *= 2) sizes.push_back(s);
  sizes.push_back(max_batch);
  return sizes;
}

// The model's inference step on prepared batches of each size, callable from any worker.
class PaddedService {
 public:
  PaddedService(StepLoop& loop, std::map<int64_t, std::vector<Batch>> batches)
      : model_(loop.model()), batches_(std::move(batches)) {}

  void operator()(int64_t queries) {
    auto it = batches_.lower_bound(queries);
    PLUMB_ASSERT(it != batches_.end(), "the batcher never forms a batch above the largest size");
    const auto& pool = it->second;
    const double value = model_.infer_step(pool[next_++ % pool.size()]);
    if (!std::isfinite(value)) throw NonFiniteLoss{value, next_.load()};
  }

 private:
  Model& model_;
  std::map<int64_t, std::vector<Batch>> batches_;
  std::atomic<size_t> next_{0};
};

double step_seconds(PaddedService& service, int64_t size) {
  const auto start = std::chrono::steady_clock::now();
  service(size);
  return seconds_since(start);
}

class Session {
 public:
  Session(const ServeOptions& o, ServeResult& r, const ProgressFn& progress, PaddedService& service)
      : o_(o), r_(r), progress_(progress), service_([&service](int64_t n) { service(n); }) {
    serving_.policy = o.policy;
    serving_.policy.max_batch = r.batch_limit;
    serving_.workers = o.workers;
    // Workers inherit the caller's inference mode and autocast (thread-local in LibTorch) and
    // its intra-op thread count.
    const at::ThreadLocalState state;
    const int threads = o.run.threads;
    serving_.on_worker_start = [state, threads]() {
      at::set_num_threads(threads);
      return std::make_shared<at::ThreadLocalStateGuard>(state);
    };
  }

  double service_at(int64_t size) const {
    const auto at = std::lower_bound(r_.batch_sizes.begin(), r_.batch_sizes.end(), size);
    return r_.service_s[static_cast<size_t>(at - r_.batch_sizes.begin())];
  }

  // As long as the duration asks, and at least the queries that bound the 90th percentile
  // (LoadGen's SingleStream figure): a slow model is not held for the 299 of a p99. Enough to
  // show a bound missed, which the Server search checks first.
  ScenarioRun& single_stream() {
    const size_t count =
        std::clamp<size_t>(static_cast<size_t>(std::ceil(o_.duration_s / service_at(1))),
                           min_queries_for(kSingleStreamPercentile), kMaxQueries);
    return record(
        summarize_queries(serve_single_stream(count, service_), o_.percentile, o_.bound_s),
        "single-stream");
  }

  ScenarioRun& offline() {
    const int64_t b = r_.offline_batch;
    ServingOptions serving = serving_;
    serving.policy.max_batch = b;
    const auto batches =
        std::max<size_t>(8, static_cast<size_t>(std::ceil(o_.duration_s / service_at(b))));
    const std::vector<double> arrivals(std::min(kMaxQueries, batches * static_cast<size_t>(b)),
                                       0.0);
    return record(
        summarize_queries(serve_arrivals(arrivals, serving, service_), o_.percentile, o_.bound_s),
        "offline");
  }

  // Poisson arrivals at `rate`, for the duration and at least the queries the percentile's rule
  // needs; an undecided verdict is served once more on a fresh schedule of twice the queries,
  // and the two judged together.
  ScenarioRun& server(double rate, const std::string& role) {
    const size_t count = std::clamp<size_t>(static_cast<size_t>(std::ceil(rate * o_.duration_s)),
                                            min_queries_for(o_.percentile), kMaxQueries);
    auto queries =
        serve_arrivals(poisson_arrivals(rate, count, o_.run.seed + seed_++), serving_, service_);
    ScenarioRun run = summarize_queries(queries, o_.percentile, o_.bound_s);
    if (run.check.verdict == TailVerdict::kUndecided) {
      if (progress_)
        progress_(fmt::format(
            "  {:.1f} q/s undecided after {} queries ({} over {}); serving {} "
            "more",
            rate, run.queries.size(), run.check.over_bound, format_ms(o_.bound_s), 2 * count));
      auto more = serve_arrivals(poisson_arrivals(rate, 2 * count, o_.run.seed + seed_++), serving_,
                                 service_);
      // Times of the second schedule follow the first's, as one longer run would.
      const double offset = queries.back().finish_s;
      for (auto& q : more) {
        q.arrival_s += offset;
        q.start_s += offset;
        q.finish_s += offset;
      }
      queries.insert(queries.end(), more.begin(), more.end());
      run = summarize_queries(std::move(queries), o_.percentile, o_.bound_s);
    }
    run.offered_qps = rate;
    return record(std::move(run), role);
  }

 private:
  ScenarioRun& record(ScenarioRun run, const std::string& role) {
    run.role = role;
    if (progress_) {
      std::string line = fmt::format("{}: {} queries", role, run.queries.size());
      if (std::isfinite(run.offered_qps))
        line += fmt::format(" at {:.1f} q/s offered", run.offered_qps);
      line +=
          fmt::format(", {:.1f} q/s served, mean batch {:.1f}", run.achieved_qps, run.mean_batch);
      // Offline queries all arrive at once: their latency is the run's length.
      if (role != "offline")
        line += fmt::format(", p{:g} {} [{}, {}]", 100 * o_.percentile, format_ms(run.tail.value),
                            format_ms(run.tail.low), format_ms(run.tail.high));
      if (role == "server" || role == "trial")
        line += fmt::format(" -> {} ({} of {} over {})", tail_verdict_name(run.check.verdict),
                            run.check.over_bound, run.queries.size(), format_ms(o_.bound_s));
      progress_(line);
    }
    r_.runs.push_back(std::move(run));
    return r_.runs.back();
  }

  const ServeOptions& o_;
  ServeResult& r_;
  const ProgressFn& progress_;
  ServiceFn service_;
  ServingOptions serving_;
  uint64_t seed_ = 1;
};

// Prepares batches of every size the batcher may form, or of the configured size only when the
// model's batch is fixed.
std::map<int64_t, std::vector<Batch>> prepare_batches(StepLoop& loop, const ServeOptions& o,
                                                      ServeResult& r) {
  std::map<int64_t, std::vector<Batch>> batches;
  for (int64_t size : padded_sizes(o.policy.max_batch)) {
    for (size_t i = 0; i < kBatchesPerSize; ++i) {
      auto batch = loop.batch_of(size);
      if (!batch) {
        r.fixed_batch = true;
        r.max_batch = o.run.config.get_int("batch");
        r.batch_sizes = {r.max_batch};
        r.warnings.push_back(fmt::format(
            "{} makes batches of its configured size only: every batch runs padded to batch={} "
            "(--max-batch {} does not apply)",
            o.run.workload, r.max_batch, o.policy.max_batch));
        return {{r.max_batch, loop.batches()}};
      }
      batches[size].push_back(std::move(*batch));
    }
  }
  r.max_batch = o.policy.max_batch;
  r.batch_sizes = padded_sizes(o.policy.max_batch);
  return batches;
}

void warm_up_sizes(PaddedService& service, const ServeOptions& o, ServeResult& r,
                   const ProgressFn& progress) {
  for (int64_t size : r.batch_sizes) {
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    while (times.size() < kMaxWarmupSteps && seconds_since(start) < kMaxWarmupPerSizeS) {
      times.push_back(step_seconds(service, size));
      if (times.size() >= kMinWarmupSteps && tail_is_steady(times, o.run.steady)) break;
    }
    const size_t tail = std::min<size_t>(times.size(), 5);
    const std::vector<double> last(times.end() - static_cast<ptrdiff_t>(tail), times.end());
    r.service_s.push_back(median_of(last));
    if (progress)
      progress(fmt::format("batch {}: {} per batch after {} warm-up steps", size,
                           format_ms(r.service_s.back()), times.size()));
  }
}

void choose_batch_limits(const ServeOptions& o, ServeResult& r, const ProgressFn& progress) {
  const BatchLimits limits =
      batch_limits(r.batch_sizes, r.service_s, o.bound_s, o.policy.max_wait_s);
  r.offline_batch = limits.offline_batch;
  r.batch_limit = limits.server_batch;
  if (!progress) return;
  if (r.offline_batch < r.max_batch)
    progress(
        fmt::format("offline batches of {}: the most queries per second of service (a batch "
                    "of {} serves fewer per second)",
                    r.offline_batch, r.max_batch));
  if (r.batch_limit < r.offline_batch)
    progress(
        fmt::format("server batches stop at {}: a larger one takes more than half of the "
                    "bound less the wait ({})",
                    r.batch_limit, format_ms((o.bound_s - o.policy.max_wait_s) / 2)));
}

}  // namespace

BatchLimits batch_limits(const std::vector<int64_t>& sizes, const std::vector<double>& service_s,
                         double bound_s, double max_wait_s) {
  PLUMB_ASSERT(!sizes.empty() && sizes.size() == service_s.size(), "a service time per size");
  double best = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    best = std::max(best, static_cast<double>(sizes[i]) / service_s[i]);
  // Within 2% of the best, the larger: the difference is warm-up noise.
  size_t limit = 0;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (static_cast<double>(sizes[i]) / service_s[i] >= 0.98 * best) limit = i;
  BatchLimits out;
  out.offline_batch = sizes[limit];
  const double budget = (bound_s - max_wait_s) / 2;
  while (limit > 0 && service_s[limit] > budget) --limit;
  out.server_batch = sizes[limit];
  return out;
}

std::string scenario_name(Scenario scenario) {
  switch (scenario) {
    case Scenario::kSingleStream:
      return "single-stream";
    case Scenario::kServer:
      return "server";
    case Scenario::kOffline:
      return "offline";
  }
  return "server";
}

Scenario parse_scenario(const std::string& text) {
  for (Scenario s : {Scenario::kSingleStream, Scenario::kServer, Scenario::kOffline})
    if (text == scenario_name(s)) return s;
  throw UsageError(
      fmt::format("--scenario: unknown scenario '{}'; use single-stream, server or offline", text));
}

Setting serve_setting(const Workload& w, const ServeOptions& o) {
  const std::string percentile = fmt::format("p{:g}", 100 * o.percentile);
  const ServeOptions defaults;
  std::vector<SettingField> own = {
      own_field("scenario", "--scenario", scenario_name(o.scenario)),
      own_field(percentile, "--" + percentile, fmt::format("{:g}ms", 1e3 * o.bound_s)),
      own_field("max_batch", "--max-batch", std::to_string(o.policy.max_batch)),
      own_field("max_wait", "--max-wait", fmt::format("{:g}ms", 1e3 * o.policy.max_wait_s)),
      own_field("workers", "--workers", std::to_string(o.workers),
                std::to_string(defaults.workers))};
  if (o.rate_qps > 0) own.push_back(own_field("qps", "--qps", fmt::format("{:g}", o.rate_qps)));
  return serve_command_setting(w, o.run, std::move(own), o.duration_s, o.resolution);
}

Setting serve_command_setting(const Workload& w, const RunOptions& run,
                              std::vector<SettingField> own, double duration_s, double resolution) {
  own.push_back(own_field("duration", "--duration", fmt::format("{:g}", duration_s), "", true));
  own.push_back(own_field("resolution", "--resolution", fmt::format("{:g}", resolution),
                          fmt::format("{:g}", ServeOptions{}.resolution), true));
  Setting s = run_setting("plumb serve", w.info.name, run_identity(w, run), std::move(own));
  for (auto& f : s.fields)
    if (f.name == "mode") f.flag.clear();  // serving is inference: the command says it
  return s;
}

void require_positive(double v, const char* flag, const char* what) {
  if (!(v > 0) || !std::isfinite(v))
    throw UsageError(fmt::format("{} must be a positive {}, got {}", flag, what, v));
}

void validate_serve_options(const ServeOptions& o) {
  const auto positive = require_positive;
  positive(o.bound_s, "the latency bound (--p99/--p90/--p999)", "time such as 20ms");
  positive(o.duration_s, "--duration", "number of seconds");
  if (o.rate_qps != 0) positive(o.rate_qps, "--qps", "number of queries per second");
  positive(o.policy.max_wait_s, "--max-wait", "time such as 2ms");
  if (o.policy.max_batch < 1)
    throw UsageError(fmt::format("--max-batch must be at least 1, got {}", o.policy.max_batch));
  if (o.workers < 1)
    throw UsageError(fmt::format("--workers must be at least 1, got {}", o.workers));
  if (!(o.percentile > 0 && o.percentile < 1))
    throw UsageError(
        fmt::format("the percentile must be between 0 and 100, got {}", 100 * o.percentile));
  if (!(o.resolution > 0 && o.resolution < 1))
    throw UsageError(fmt::format("--resolution must be between 0 and 1, got {}", o.resolution));
}

ScenarioRun summarize_queries(std::vector<QueryTimes> queries, double percentile, double bound_s) {
  ScenarioRun run;
  run.queries = std::move(queries);
  const auto& q = run.queries;
  if (q.empty()) return run;
  std::vector<double> latency;
  latency.reserve(q.size());
  double queueing = 0, batch_sum = 0, end = 0, begin = q.front().arrival_s;
  for (const auto& t : q) {
    latency.push_back(t.latency_s());
    queueing += t.queueing_s();
    batch_sum += t.batch;
    end = std::max(end, t.finish_s);
    begin = std::min(begin, t.arrival_s);
    run.largest_batch = std::max<int64_t>(run.largest_batch, t.batch);
  }
  run.check = check_tail(latency, percentile, bound_s);
  // The percentiles through their registered statistics (statistic_registry.h).
  const Samples latencies(latency);
  const Estimate tail =
      statistic::kPercentileInterval.compute(latencies, {percentile, kTailConfidence, {}});
  run.tail = {tail.value, tail.low, tail.high, latencies.size()};
  const auto at = [&](double p) {
    return statistic::kPercentile.compute(latencies, {p, kTailConfidence, {}}).value;
  };
  run.p50_s = at(0.50);
  run.p90_s = at(0.90);
  run.p99_s = at(0.99);
  run.p999_s = at(0.999);
  const double n = static_cast<double>(q.size());
  double latency_sum = 0;  // in ascending order, as it always was summed
  for (double l : latencies.sorted()) latency_sum += l;
  run.queueing_share = latency_sum > 0 ? queueing / latency_sum : 0;
  run.mean_batch = batch_sum / n;
  run.achieved_qps = end > begin ? n / (end - begin) : ScenarioRun::kNaN;
  return run;
}

ServeResult serve_workload(const Workload& workload, const ServeOptions& options,
                           const ProgressFn& progress) {
  validate_serve_options(options);
  ServeOptions o = options;
  o.run.mode = Mode::kInfer;
  ServeResult r;
  r.started_at = utc_now_iso8601();
  RunResult run;
  // The served model runs under the heap policy a timing run applies (--heap).
  apply_heap_policy(o.run.heap, run.warnings);
  with_model(
      workload, o.run, run,
      [&](StepLoop& loop) {
        PaddedService service(loop, prepare_batches(loop, o, r));
        warm_up_sizes(service, o, r, progress);
        choose_batch_limits(o, r, progress);
        Session session(o, r, progress, service);
        switch (o.scenario) {
          case Scenario::kSingleStream:
            session.single_stream();
            return;
          case Scenario::kOffline:
            session.offline();
            return;
          case Scenario::kServer:
            break;
        }
        if (o.rate_qps > 0) {
          session.server(o.rate_qps, "server");
          return;
        }
        r.searched = true;
        // The floor first: when one query alone misses the bound, no rate can keep it.
        const ScenarioRun& floor = session.single_stream();
        if (floor.check.verdict == TailVerdict::kMissed) {
          r.reachable = false;
          return;
        }
        const double ceiling = session.offline().achieved_qps;
        const ServerSearch found = search_server_rate(
            ceiling, o.resolution, o.percentile, kMaxServerTrialS, [&](double rate) {
              const TailVerdict v = session.server(rate, "trial").check.verdict;
              return std::pair{static_cast<int>(r.runs.size()) - 1, v};
            });
        r.found_qps = found.found;
        r.failed_qps = found.failed;
        r.found_run = found.found_run;
      },
      /*batch_pool=*/1);
  take_run_outcome(run, r);
  return r;
}

}  // namespace plumb::run
