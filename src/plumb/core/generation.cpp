// Phases of a generation and the one loop that drives it (see generation.h).
#include "plumb/core/generation.h"

#include <chrono>
#include <cstring>
#include <numeric>

#include <ATen/record_function.h>

#include "plumb/core/clock.h"
#include "plumb/core/errors.h"

namespace plumb {
namespace {

constexpr char kPrefillScope[] = "plumb::prefill";
constexpr char kDecodeScope[] = "plumb::decode";

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

}  // namespace

const char* phase_name(Phase phase) {
  return phase == Phase::kPrefill ? "prefill" : "decode";
}

std::optional<Phase> phase_from_name(const std::string& name) {
  for (Phase phase : all_phases())
    if (name == phase_name(phase)) return phase;
  return std::nullopt;
}

const std::vector<Phase>& all_phases() {
  static const std::vector<Phase> phases = {Phase::kPrefill, Phase::kDecode};
  return phases;
}

const char* phase_scope(Phase phase) {
  return phase == Phase::kPrefill ? kPrefillScope : kDecodeScope;
}

std::optional<Phase> phase_of_scope(const char* scope_name) {
  if (scope_name == nullptr) return std::nullopt;
  for (Phase phase : all_phases())
    if (std::strcmp(scope_name, phase_scope(phase)) == 0) return phase;
  return std::nullopt;
}

void run_in_phase(Phase phase, const std::function<void()>& call) {
  at::RecordFunction scope(at::RecordScope::USER_SCOPE);
  if (scope.isActive()) scope.before(phase_scope(phase));
  call();
}

GenerativeModel* as_generative(Model& model) {
  return dynamic_cast<GenerativeModel*>(&model);
}

double GenerationTrace::total_s() const {
  return std::accumulate(decode_s.begin(), decode_s.end(), prefill_s);
}

GenerationTrace generate(GenerativeModel& model, const Batch& batch, const torch::Device& device,
                         const std::function<void(Phase)>& after_call,
                         const torch::Tensor& forced) {
  const GenerationShape shape = model.generation_shape();
  PLUMB_ASSERT(shape.gen >= 1, "a generation produces at least one token");
  PLUMB_ASSERT(!forced.defined() || (forced.dim() == 2 && forced.size(1) == shape.gen),
               "forced tokens must be [B, gen]");
  GenerationTrace trace;
  std::vector<torch::Tensor> tokens;
  tokens.reserve(static_cast<size_t>(shape.gen));
  // Each call runs in its phase's user scope; the clock covers the call and the device's
  // completion of it, nothing else.
  const auto timed = [&](Phase phase, const std::function<torch::Tensor()>& call) {
    const auto start = std::chrono::steady_clock::now();
    torch::Tensor next;
    run_in_phase(phase, [&] { next = call(); });
    synchronize(device);
    const double elapsed = seconds_since(start);
    if (after_call) after_call(phase);
    tokens.push_back(next);
    return elapsed;
  };
  trace.prefill_s = timed(Phase::kPrefill, [&] { return model.prefill(batch); });
  trace.decode_s.reserve(static_cast<size_t>(shape.gen - 1));
  for (int64_t i = 1; i < shape.gen; ++i) {
    const torch::Tensor previous = forced.defined() ? forced.select(1, i - 1) : tokens.back();
    trace.decode_s.push_back(timed(Phase::kDecode, [&] { return model.decode(previous); }));
  }
  trace.tokens = torch::stack(tokens, 1);  // [B, gen]
  return trace;
}

}  // namespace plumb
