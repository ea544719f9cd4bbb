// The tuning space and its trials (see tune_trials.h).
#include "plumb/run/tune_trials.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/outcome.h"
#include "plumb/run/heap_policy.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {
namespace {

using Clock = std::chrono::steady_clock;

void add_factor(TuneSpace& space, TuneFactor factor, const std::string& single_reason) {
  if (factor.values.size() > 1) {
    space.factors.push_back(std::move(factor));
  } else {
    space.not_searched.push_back(factor.name + ": " + single_reason);
  }
}

const std::string& value_of(const TuneSpace& space, const TunePoint& point,
                            const std::string& factor) {
  for (size_t f = 0; f < space.factors.size(); ++f)
    if (space.factors[f].name == factor) return space.factors[f].values[point[f]];
  static const std::string none;
  return none;
}

// Points that share a model: the same precision, memory format and batch.
using ModelKey = std::tuple<Dtype, MemoryFormat, int64_t>;

ModelKey model_key(const RunOptions& o) {
  return {o.dtype, o.memory_format, o.config.get_int("batch")};
}

}  // namespace

TuneSpace make_tune_space(const RunOptions& stock, const TuneSpaceRequest& request) {
  TuneSpace space;
  space.stock = stock;
  TuneFactor threads{"threads", {std::to_string(stock.threads)}};
  for (int t = stock.threads / 2; t >= 1; t /= 2) threads.values.push_back(std::to_string(t));
  add_factor(space, threads, "one thread is all the stock run uses");

  TuneFactor dtype{"dtype", {dtype_name(stock.dtype)}};
  for (Dtype d : request.dtypes)
    if (d != stock.dtype) dtype.values.push_back(dtype_name(d));
  add_factor(space, dtype, "no other precision is allowed (--dtypes, or the error budget)");

  TuneFactor format{"memory_format", {memory_format_name(stock.memory_format)}};
  if (request.has_convolutions)
    for (MemoryFormat m : {MemoryFormat::kContiguous, MemoryFormat::kChannelsLast})
      if (m != stock.memory_format) format.values.push_back(memory_format_name(m));
  add_factor(space, format, "the model has no 4-D weights, so channels_last changes nothing");

  TuneFactor engine{"engine", {engine_name(stock.engine)}};
  for (Engine e : {Engine::kOnednn, Engine::kNative})
    if (e != stock.engine) engine.values.push_back(engine_name(e));
  add_factor(space, engine, "");

  TuneFactor heap{"heap", {heap_policy_name(stock.heap)}};
  for (HeapPolicy h : {HeapPolicy::kKeep, HeapPolicy::kReturn})
    if (h != stock.heap) heap.values.push_back(heap_policy_name(h));
  add_factor(space, heap, "");

  const int64_t stock_batch = stock.config.get_int("batch");
  TuneFactor batch{"batch", {std::to_string(stock_batch)}};
  for (int64_t b : request.batches)
    if (b != stock_batch && b >= 1) batch.values.push_back(std::to_string(b));
  add_factor(space, batch,
             "the batch is kept (give --latency-bound to search the batch within a bound)");

  space.not_searched.push_back(
      "inter-op threads: LibTorch's inter-op pool runs at::launch and TorchScript forks; plumb's "
      "C++ workloads run every operator on the calling thread, so the pool size changes "
      "nothing (it can also be set only once per process)");
  space.not_searched.push_back(
      "graph-level options: LibTorch 1.13 C++ offers torch::jit::freeze and "
      "optimize_for_inference (conv-bn folding, oneDNN conversion) for TorchScript modules "
      "only; plumb's workloads are C++ frontend modules, which C++ cannot script (plumb "
      "analyze fusion measures conv-bn folding per shape)");
  return space;
}

RunOptions options_at(const TuneSpace& space, const TunePoint& point) {
  PLUMB_ASSERT(point.size() == space.factors.size(), "a point of this space");
  RunOptions o = space.stock;
  if (const auto& v = value_of(space, point, "threads"); !v.empty()) o.threads = std::stoi(v);
  if (const auto& v = value_of(space, point, "dtype"); !v.empty()) o.dtype = parse_dtype(v);
  if (const auto& v = value_of(space, point, "memory_format"); !v.empty())
    o.memory_format = parse_memory_format(v);
  if (const auto& v = value_of(space, point, "engine"); !v.empty()) o.engine = parse_engine(v);
  if (const auto& v = value_of(space, point, "heap"); !v.empty()) o.heap = parse_heap_policy(v);
  if (const auto& v = value_of(space, point, "batch"); !v.empty())
    o.config.set_int("batch", std::stoll(v));
  return o;
}

bool has_convolution_weights(const Workload& workload, const RunOptions& options) {
  torch::manual_seed(options.seed);
  auto model = workload.build(options.config, parse_device(options.device));
  for (const auto& p : model->module().parameters())
    if (p.dim() == 4) return true;
  return false;
}

TrialRunner::TrialRunner(const Workload& workload, const TuneSpace& space, ProgressFn progress)
    : workload_(workload), space_(space), progress_(std::move(progress)) {}

std::vector<TrialOutcome> TrialRunner::operator()(const std::vector<TunePoint>& points,
                                                  size_t steps) {
  std::vector<TrialOutcome> outcomes(points.size());
  std::map<ModelKey, std::vector<size_t>> groups;  // in first-seen order within each key
  std::vector<ModelKey> order;
  for (size_t i = 0; i < points.size(); ++i) {
    const ModelKey key = model_key(options_at(space_, points[i]));
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(i);
  }
  size_t measured = 0;  // trials this call ran: the first always runs
  const auto past_deadline = [&] {
    return deadline_ && measured > 0 && Clock::now() >= *deadline_;
  };
  const auto not_reached = [&](size_t m) {
    outcomes[m].outcome = Outcome::failure(OutcomeState::kTimeout, kNotReached);
    if (progress_)
      progress_(fmt::format("{:<44} {}", point_text(space_.factors, points[m]), kNotReached));
  };
  // Under a deadline, the first configuration of every model comes before the rest of any
  // model (one more build per model), so a budget that ends early still saw every precision,
  // format and batch.
  std::vector<std::pair<ModelKey, std::vector<size_t>>> passes;
  const bool spread = deadline_.has_value() && order.size() > 1;
  for (const ModelKey& key : order)
    passes.emplace_back(key, spread ? std::vector<size_t>{groups[key].front()} : groups[key]);
  if (spread)
    for (const ModelKey& key : order)
      if (groups[key].size() > 1)
        passes.emplace_back(key, std::vector<size_t>(groups[key].begin() + 1, groups[key].end()));
  std::map<ModelKey, Outcome> failed_models;  // a model that could not be built or run
  for (const auto& pass : passes) {
    // Named, not bound: the lambda below captures them (C++17 cannot capture a binding).
    const ModelKey& key = pass.first;
    const std::vector<size_t>& members = pass.second;
    if (past_deadline()) {
      for (size_t m : members) not_reached(m);
      continue;
    }
    if (const auto failed = failed_models.find(key); failed != failed_models.end()) {
      for (size_t m : members) outcomes[m].outcome = failed->second;
      continue;
    }
    const RunOptions first = options_at(space_, points[members.front()]);
    const auto build_start = Clock::now();
    RunResult group;
    std::vector<std::string> ignored_warnings;
    apply_heap_policy(first.heap, ignored_warnings);
    size_t done = 0;  // members measured before a failure of the model itself
    with_model(workload_, first, group, [&](StepLoop& loop) {
      // Building, converting and calibrating is shared: charge it to the first member.
      double shared_s = seconds_since(build_start);
      // Engines whose first step on this model was hopeless (see kWarmupCutFactor): the
      // group's other members differ only in threads and heap, which cannot close a 10x gap.
      std::map<Engine, TrialOutcome> hopeless_engines;
      for (size_t m : members) {
        const RunOptions o = options_at(space_, points[m]);
        TrialOutcome& out = outcomes[m];
        const auto start = Clock::now();
        RunResult member;
        if (past_deadline()) {
          not_reached(m);
          ++done;
          continue;
        }
        if (const auto cut = hopeless_engines.find(o.engine); cut != hopeless_engines.end()) {
          out = cut->second;
          out.seconds = 0;
          out.note = fmt::format(
              "not stepped: the same precision, format and engine was over {:g}x the fastest "
              "trial's time per unit",
              kWarmupCutFactor);
          ++done;
          if (progress_)
            progress_(fmt::format("{:<44} {}", point_text(space_.factors, points[m]), out.note));
          continue;
        }
        try {
          apply_threads(o.threads);
          const EngineChoice engine(o.engine);
          apply_heap_policy(o.heap, ignored_warnings);
          // The first warm-up step carries one-time costs, so only a far larger lag cuts here.
          const double first_s = loop.step();
          const bool hopeless = first_s / loop.units() > kWarmupCutFactor * fastest_unit_s_;
          double warm_s = first_s;
          for (size_t w = 1; !hopeless && (w < kTrialWarmupSteps || warm_s < kMinWarmupS); ++w)
            warm_s += loop.step();
          double total = hopeless ? first_s : 0;
          if (hopeless) {
            out.steps = 1;
            out.note = fmt::format(
                "cut after its first warm-up step: over {:g}x the fastest trial's time per unit",
                kWarmupCutFactor);
          }
          const double min_timed_s = kMinTrialStepS * static_cast<double>(steps);
          while (!hopeless && (out.steps < steps || total < min_timed_s)) {
            total += loop.step();
            ++out.steps;
            const double unit_s = total / (static_cast<double>(out.steps) * loop.units());
            if (unit_s > kTrialCutFactor * fastest_unit_s_) break;
          }
          out.outcome = Outcome::success();
          out.step_s = total / static_cast<double>(out.steps);
          out.throughput = loop.units() / out.step_s;
          fastest_unit_s_ = std::min(fastest_unit_s_, out.step_s / loop.units());
          if (hopeless) hopeless_engines[o.engine] = out;
        } catch (...) {
          record_failure(std::current_exception(), o, member);
          out.outcome = Outcome::failure(member.status, member.message);
        }
        out.seconds = seconds_since(start) + shared_s;
        shared_s = 0;
        ++done;
        ++measured;
        if (progress_)
          progress_(fmt::format("{:<44} {}", point_text(space_.factors, points[m]),
                                out.outcome.ok()
                                    ? fmt::format("{:.2f} {} ({} steps)", out.throughput,
                                                  workload_.info.throughput_unit, out.steps)
                                    : out.outcome.reason));
      }
    });
    if (group.status != RunStatus::kOk)
      failed_models[key] = Outcome::failure(group.status, group.message);
    if (group.status != RunStatus::kOk)
      for (size_t k = done; k < members.size(); ++k) {
        TrialOutcome& out = outcomes[members[k]];
        out.outcome = Outcome::failure(group.status, group.message);
        out.seconds = k == done ? seconds_since(build_start) : 0;
        if (progress_)
          progress_(fmt::format("{:<44} {}", point_text(space_.factors, points[members[k]]),
                                group.message));
      }
  }
  return outcomes;
}

}  // namespace plumb::run
