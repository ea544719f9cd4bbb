// plumb serve's token-level measurement over a real generative model (see token_serve_session.h).
#include "plumb/run/token_serve_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/slot_generation.h"
#include "plumb/core/text.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/model_footprint.h"
#include "plumb/run/rate_search.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {

namespace {

// No measurement offers more requests than this (every one is stored).
constexpr size_t kMaxRequests = 100'000;
// Warm-up: prefills of the longest prompt and decode iterations, the median of the last ones
// taken.
constexpr int kWarmPrefills = 4, kWarmDecodes = 12;
// A default bound is kept where a lone request's figure leaves it this much headroom.
constexpr double kBoundHeadroom = 4;

// The engine as the scheduler drives it, with a CUDA device synchronised after every call so
// the clock reads the device's completion.
class SynchronizedEngine : public SlottedGenerator {
 public:
  SynchronizedEngine(SlottedGenerator& model, const torch::Device& device)
      : model_(model), device_(device) {}
  int64_t kv_bytes_per_position() const override { return model_.kv_bytes_per_position(); }
  int64_t max_positions() const override { return model_.max_positions(); }
  void allocate_slots(int64_t slots, int64_t positions) override {
    model_.allocate_slots(slots, positions);
    sync();
  }
  void prefill_slot(int64_t slot, int64_t start, int64_t tokens, bool last) override {
    model_.prefill_slot(slot, start, tokens, last);
    sync();
  }
  void decode_slots(int64_t slots) override {
    model_.decode_slots(slots);
    sync();
  }
  void move_slot(int64_t from, int64_t to) override {
    model_.move_slot(from, to);
    sync();
  }
  int64_t slot_length(int64_t slot) const override { return model_.slot_length(slot); }

 private:
  void sync() {
    if (device_.is_cuda()) torch::cuda::synchronize();
  }
  SlottedGenerator& model_;
  torch::Device device_;
};

template <typename Fn>
double timed(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return seconds_since(start);
}

// Offsets a later trace's times so it follows `earlier` as one longer run would.
void append_trace(TokenServeTrace& earlier, TokenServeTrace later) {
  double offset = 0;
  for (const auto& r : earlier.requests) offset = std::max(offset, r.finish_s);
  for (auto& r : later.requests) {
    r.arrival_s += offset;
    r.admitted_s += offset;
    r.first_token_s += offset;
    r.finish_s += offset;
    for (auto& t : r.token_s) t += offset;
    earlier.requests.push_back(std::move(r));
  }
  for (auto& it : later.iterations) {
    it.start_s += offset;
    it.end_s += offset;
    earlier.iterations.push_back(it);
  }
}

class TokenSession {
 public:
  TokenSession(const TokenServeOptions& o, TokenServeResult& r, const ProgressFn& progress,
               SlottedGenerator& engine)
      : o_(o), r_(r), progress_(progress), engine_(engine) {}

  // Warm figures of a request alone and of a full batch.
  void warm_up() {
    const int64_t positions = r_.slot_positions;
    engine_.allocate_slots(o_.scheduler.max_batch + 1, positions);
    const int64_t prompt = o_.mix.longest_prompt();
    std::vector<double> prefills, lone, full;
    for (int i = 0; i < kWarmPrefills; ++i)
      prefills.push_back(timed([&] { engine_.prefill_slot(0, 0, prompt, true); }));
    const int64_t decodes = std::min<int64_t>(kWarmDecodes, positions - prompt);
    for (int64_t i = 0; i < decodes; ++i) lone.push_back(timed([&] { engine_.decode_slots(1); }));
    // A full batch at the longest prompt.
    const int64_t b = o_.scheduler.max_batch;
    for (int64_t s = 1; s < b; ++s) engine_.prefill_slot(s, 0, prompt, true);
    engine_.prefill_slot(0, 0, prompt, true);
    for (int64_t i = 0; i < decodes; ++i) full.push_back(timed([&] { engine_.decode_slots(b); }));
    const auto tail = [](std::vector<double> v) {
      const size_t keep = std::min<size_t>(v.size(), 5);
      return median_of(std::vector<double>(v.end() - static_cast<ptrdiff_t>(keep), v.end()));
    };
    r_.lone_ttft_s = tail(prefills);
    r_.lone_tpot_s = tail(lone);
    r_.full_batch_tpot_s = tail(full);
    if (progress_)
      progress_(fmt::format(
          "warm: prefill of {} tokens {}, a decode iteration {} alone and {} at batch {}", prompt,
          format_ms(r_.lone_ttft_s, 1), format_ms(r_.lone_tpot_s, 1),
          format_ms(r_.full_batch_tpot_s, 1), b));
  }

  // The requests of a measurement: `count` arriving at `rate` (0: all at once).
  std::vector<TokenRequest> requests(size_t count, double rate) {
    const uint64_t seed = o_.run.seed + seed_++;
    const std::vector<double> arrivals = rate > 0 ? gamma_arrivals(rate, o_.burstiness, count, seed)
                                                  : std::vector<double>(count, 0.0);
    return draw_requests(o_.mix, arrivals, seed);
  }

  TokenServeTrace serve(const std::vector<TokenRequest>& requests) {
    SteadyServeClock clock;
    return serve_token_requests(requests, o_.scheduler, r_.slot_positions, engine_, clock);
  }

  // Every request waiting at the start: enough of them for the duration at the warm full-batch
  // rate, and at least four batches.
  TokenScenarioRun& offline() {
    const double mean_output = 0.5 * static_cast<double>(o_.mix.longest_output() + 1);
    const double per_request =
        (mean_output * r_.full_batch_tpot_s) / static_cast<double>(o_.scheduler.max_batch) +
        r_.lone_ttft_s / 2;
    const size_t count = std::clamp<size_t>(
        static_cast<size_t>(std::ceil(o_.duration_s / std::max(per_request, 1e-6))),
        static_cast<size_t>(4 * o_.scheduler.max_batch), kMaxRequests);
    TokenScenarioRun run;
    run.trace = serve(requests(count, 0));
    return record(std::move(run), "offline");
  }

  // Arrivals at `rate` for the duration, and at least the requests the percentile's rule needs;
  // an undecided verdict is served once more with twice the requests and the two judged together.
  TokenScenarioRun& server(double rate, const std::string& role) {
    const size_t count = std::clamp<size_t>(static_cast<size_t>(std::ceil(rate * o_.duration_s)),
                                            min_queries_for(o_.bounds.percentile), kMaxRequests);
    TokenScenarioRun run;
    run.offered_rate = rate;
    run.trace = serve(requests(count, rate));
    TokenRunSummary summary = summarize_token_trace(run.trace, r_.bounds);
    if (summary.verdict == TailVerdict::kUndecided) {
      if (progress_)
        progress_(fmt::format("  {:.3g} requests/s undecided after {} requests; serving {} more",
                              rate, count, 2 * count));
      append_trace(run.trace, serve(requests(2 * count, rate)));
    }
    return record(std::move(run), role);
  }

 private:
  TokenScenarioRun& record(TokenScenarioRun run, const std::string& role) {
    run.role = role;
    run.summary = summarize_token_trace(run.trace, r_.bounds);
    const auto& s = run.summary;
    if (progress_) {
      std::string line = fmt::format("{}: {} requests", role, s.requests);
      if (std::isfinite(run.offered_rate))
        line += fmt::format(" at {:.3g}/s offered", run.offered_rate);
      line +=
          fmt::format(", {:.3g} requests/s and {:.1f} output tokens/s served, mean batch {:.1f}",
                      s.request_rate, s.output_token_rate, s.mean_decode_batch);
      const std::string p = fmt::format("p{:g}", 100 * r_.bounds.percentile);
      line += fmt::format("; TTFT {} {} [{}, {}], TPOT {} {} [{}, {}]", p,
                          format_ms(s.ttft.tail.value, 1), format_ms(s.ttft.tail.low, 1),
                          format_ms(s.ttft.tail.high, 1), p, format_ms(s.tpot.tail.value, 1),
                          format_ms(s.tpot.tail.low, 1), format_ms(s.tpot.tail.high, 1));
      if (role != "offline")
        line +=
            fmt::format(" -> {}; goodput {:.3g}/s", tail_verdict_name(s.verdict), s.goodput_rate);
      progress_(line);
    }
    r_.runs.push_back(std::move(run));
    return r_.runs.back();
  }

  const TokenServeOptions& o_;
  TokenServeResult& r_;
  const ProgressFn& progress_;
  SlottedGenerator& engine_;
  uint64_t seed_ = 1;
};

// Applies the defaults' scaling where the user gave no bound.
void apply_bounds(const TokenServeOptions& o, TokenServeResult& r) {
  r.bounds = o.bounds;
  const auto scale = [&](bool given, double& bound, double lone, const char* what) {
    if (given) return;
    const double scaled = scaled_bound(bound, lone);
    if (scaled == bound) return;
    r.bound_notes.push_back(fmt::format(
        "the default {} bound {} (MLPerf's LLM Server) is less than {:g}x a request served alone "
        "on this machine ({}): scaled to {}",
        what, format_ms(bound, 1), kBoundHeadroom, format_ms(lone, 1), format_ms(scaled, 1)));
    bound = scaled;
  };
  scale(o.ttft_given, r.bounds.ttft_s, r.lone_ttft_s, "TTFT");
  scale(o.tpot_given, r.bounds.tpot_s, r.lone_tpot_s, "TPOT");
}

}  // namespace

double scaled_bound(double bound_s, double lone_s) {
  const double need = kBoundHeadroom * lone_s;
  if (!(need > bound_s)) return bound_s;
  const double step = std::pow(10.0, std::floor(std::log10(need)) - 1);  // two digits
  return std::ceil(need / step) * step;
}

Setting token_serve_setting(const Workload& w, const TokenServeOptions& o) {
  const auto range = [](const LengthRange& r) {
    return r.low == r.high ? std::to_string(r.low) : fmt::format("{}-{}", r.low, r.high);
  };
  std::vector<SettingField> own = {
      own_field("scenario", "--scenario", scenario_name(o.scenario)),
      own_field("scheduler", "--scheduler", scheduler_name(o.scheduler.kind)),
      own_field("max_batch", "--max-batch", std::to_string(o.scheduler.max_batch))};
  if (o.scheduler.kind == SchedulerKind::kContinuous)
    own.push_back(own_field("chunk", "--chunk", std::to_string(o.scheduler.chunk_tokens), "0"));
  else
    own.push_back(own_field("max_wait", "--max-wait",
                            fmt::format("{:g}ms", 1e3 * o.scheduler.max_wait_s), "0ms"));
  if (o.scheduler.kv_budget_bytes > 0)
    own.push_back(
        own_field("kv_budget", "--kv-budget", std::to_string(o.scheduler.kv_budget_bytes)));
  if (!o.mix.pairs.empty()) {
    own.push_back(own_field("lengths", "--lengths", o.mix.file));
  } else {
    own.push_back(own_field("prompt_tokens", "--prompt-tokens", range(o.mix.prompt)));
    own.push_back(own_field("output_tokens", "--output-tokens", range(o.mix.output)));
  }
  own.push_back(own_field("burstiness", "--burstiness", fmt::format("{:g}", o.burstiness), "1"));
  if (o.rate > 0) own.push_back(own_field("qps", "--qps", fmt::format("{:g}", o.rate)));
  own.push_back(own_field("ttft", "--ttft", fmt::format("{:g}ms", 1e3 * o.bounds.ttft_s)));
  own.push_back(own_field("tpot", "--tpot", fmt::format("{:g}ms", 1e3 * o.bounds.tpot_s)));
  own.push_back(own_field("percentile", "--percentile",
                          fmt::format("{:g}", 100 * o.bounds.percentile), "99"));
  return serve_command_setting(w, o.run, std::move(own), o.duration_s, o.resolution);
}

void validate_token_serve_options(const TokenServeOptions& o) {
  const auto positive = require_positive;
  if (o.scenario == Scenario::kSingleStream)
    throw UsageError(
        "--scenario single-stream: a generative workload is served as offline or server "
        "(MLPerf's LLM scenarios); a request alone is the server at a low --qps");
  positive(o.bounds.ttft_s, "--ttft", "time such as 2s");
  positive(o.bounds.tpot_s, "--tpot", "time such as 200ms");
  positive(o.duration_s, "--duration", "number of seconds");
  if (o.rate != 0) positive(o.rate, "--qps", "number of requests per second");
  positive(o.burstiness, "--burstiness", "number (1 = Poisson, below 1 burstier)");
  if (o.scheduler.max_batch < 1)
    throw UsageError(fmt::format("--max-batch must be at least 1, got {}", o.scheduler.max_batch));
  if (o.scheduler.chunk_tokens < 0)
    throw UsageError(
        fmt::format("--chunk must be 0 (prefill-first) or a positive token budget, got {}",
                    o.scheduler.chunk_tokens));
  if (o.scheduler.kind == SchedulerKind::kStatic && o.scheduler.chunk_tokens > 0)
    throw UsageError(
        "--chunk applies to --scheduler continuous; static batching prefills whole "
        "prompts");
  if (o.scheduler.max_wait_s < 0)
    throw UsageError(
        fmt::format("--max-wait must not be negative, got {}", o.scheduler.max_wait_s));
  if (!(o.bounds.percentile > 0 && o.bounds.percentile < 1))
    throw UsageError(
        fmt::format("--percentile must be between 0 and 100, got {}", 100 * o.bounds.percentile));
  if (!(o.resolution > 0 && o.resolution < 1))
    throw UsageError(fmt::format("--resolution must be between 0 and 1, got {}", o.resolution));
}

void check_requests_fit(const Workload& w, const TokenServeOptions& o) {
  if (!w.transformer_shape) return;
  const TransformerShape shape = w.transformer_shape(o.run.config);
  const auto bytes_per_position =
      static_cast<int64_t>(kv_cache_bytes(shape, 1, 1, kv_element_bytes(o.run.dtype)));
  SchedulerOptions scheduler = o.scheduler;
  if (scheduler.kv_budget_bytes == 0)  // every slot's allocation: any request that fits one
    scheduler.kv_budget_bytes = scheduler.max_batch * slot_positions(o.mix) * bytes_per_position;
  check_admissible(scheduler, bytes_per_position, shape.max_positions, o.mix);
}

TokenServeResult serve_generative(const Workload& workload, const TokenServeOptions& options,
                                  const ProgressFn& progress) {
  validate_token_serve_options(options);
  TokenServeOptions o = options;
  o.run.mode = Mode::kInfer;
  // The model is built for the longest request served (a generative workload checks its
  // prompt + gen against the context and sizes its position tables by them); the requests'
  // own lengths come from the mix.
  if (o.run.config.has("prompt") && o.run.config.has("gen")) {
    o.run.config.set_int("prompt", o.mix.longest_prompt());
    o.run.config.set_int("gen", o.mix.longest_output());
  }
  TokenServeResult r;
  r.started_at = utc_now_iso8601();
  RunResult run;
  apply_heap_policy(o.run.heap, run.warnings);
  with_model(
      workload, o.run, run,
      [&](StepLoop& loop) {
        SlottedGenerator* slotted = as_slotted(loop.model());
        if (slotted == nullptr)
          throw UsageError(fmt::format(
              "{} is not a generative model with a KV cache in slots; token-level serving takes "
              "gpt2, llama and paradnn_transformer",
              workload.info.name));
        SynchronizedEngine engine(*slotted, loop.device());
        r.kv_bytes_per_position = engine.kv_bytes_per_position();
        r.slot_positions = slot_positions(o.mix);
        if (o.scheduler.kv_budget_bytes == 0)
          o.scheduler.kv_budget_bytes =
              o.scheduler.max_batch * r.slot_positions * r.kv_bytes_per_position;
        r.kv_budget_bytes = o.scheduler.kv_budget_bytes;
        check_admissible(o.scheduler, engine.kv_bytes_per_position(), engine.max_positions(),
                         o.mix);
        if (progress)
          progress(fmt::format("{} slots of {} positions at {} a position; KV budget {}",
                               o.scheduler.max_batch, r.slot_positions,
                               format_bytes(static_cast<double>(r.kv_bytes_per_position)),
                               format_bytes(static_cast<double>(r.kv_budget_bytes))));
        TokenSession session(o, r, progress, engine);
        session.warm_up();
        apply_bounds(o, r);
        for (const auto& note : r.bound_notes)
          if (progress) progress(note);
        switch (o.scenario) {
          case Scenario::kOffline:
            session.offline();
            return;
          case Scenario::kServer:
          case Scenario::kSingleStream:
            break;
        }
        if (o.rate > 0) {
          session.server(o.rate, "server");
          return;
        }
        r.searched = true;
        // A request alone must keep both bounds, or no rate can.
        if (r.lone_ttft_s > r.bounds.ttft_s || r.lone_tpot_s > r.bounds.tpot_s) {
          r.reachable = false;
          return;
        }
        const double ceiling = session.offline().summary.request_rate;
        const ServerSearch found = search_server_rate(
            ceiling, o.resolution, r.bounds.percentile, kMaxTokenTrialS, [&](double rate) {
              const TailVerdict v = session.server(rate, "trial").summary.verdict;
              return std::pair{static_cast<int>(r.runs.size()) - 1, v};
            });
        r.found_rate = found.found;
        r.failed_rate = found.failed;
        r.found_run = found.found_run;
      },
      /*batch_pool=*/1);
  take_run_outcome(run, r);
  return r;
}

}  // namespace plumb::run
