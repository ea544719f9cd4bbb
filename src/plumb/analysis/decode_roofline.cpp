// Decode on the memory roof: counts per token, the bandwidth fit, the ridge crossing and the
// knee (see decode_roofline.h).
#include "plumb/analysis/decode_roofline.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "plumb/analysis/memory_scaling.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/mode.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::analysis {

double DecodeTokenCount::kv_fraction() const {
  return bytes() > 0 ? kv_bytes / bytes() : 0.0;
}

double DecodeTokenCount::intensity() const {
  return bytes() > 0 ? flops / bytes() : 0.0;
}

DecodeTokenCount decode_token_count(const TransformerShape& shape, int64_t batch, int64_t prompt,
                                    int64_t gen, double weight_element_bytes,
                                    double kv_element_bytes) {
  if (batch < 1 || prompt < 1)
    throw UsageError(fmt::format(
        "a decode count needs batch and prompt of at least 1, got {} and {}", batch, prompt));
  if (gen < 2)
    throw UsageError(fmt::format(
        "a generation of gen={} output tokens has no decode call (the first token is the "
        "prefill's): give gen of at least 2",
        gen));
  DecodeTokenCount out;
  const double calls = static_cast<double>(gen - 1);
  const double requests = static_cast<double>(batch);
  // Decode call j (1 .. gen - 1) feeds the token at position prompt + j - 1 and attends the
  // prompt + j positions written so far.
  for (int64_t j = 1; j < gen; ++j) {
    const ForwardCost call =
        decode_cost(shape, batch, prompt + j, weight_element_bytes, kv_element_bytes);
    out.weight_bytes += call.weight_bytes / requests / calls;
    out.kv_bytes += (call.kv_read_bytes + call.kv_write_bytes) / requests / calls;
    out.flops += call.flops / requests / calls;
  }
  out.mean_context = static_cast<double>(prompt) + static_cast<double>(gen) / 2.0;
  return out;
}

double decode_weight_element_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp32:
      return 4;
    case Dtype::kBf16:  // autocast's cached bf16 copies are what the matrix products read
    case Dtype::kFp16:
      return 2;
    default:
      throw UsageError(fmt::format(
          "the decode roofline counts weight bytes for fp32, bf16 and fp16, not {}: its "
          "layers keep copies in several element sizes",
          dtype_name(dtype)));
  }
}

double kv_element_bytes_of(const TransformerShape& shape, int64_t batch, int64_t positions,
                           double measured_cache_bytes, double fallback) {
  const double per_element = kv_cache_bytes(shape, batch, positions, 1.0);
  if (!(measured_cache_bytes > 0) || !(per_element > 0)) return fallback;
  return measured_cache_bytes / per_element;
}

std::optional<DecodeTokenCount> stored_decode_count(const store::StoredRun& run) {
  const auto& g = run.result.generation;
  if (run.result.status != run::RunStatus::kOk || !g || g->gen < 2 ||
      run.mode != mode_name(Mode::kInfer))
    return std::nullopt;
  try {
    const Workload& w = workloads::default_registry().get(run.workload);
    if (!w.transformer_shape) return std::nullopt;
    Config config = w.default_config();
    for (const auto& item : run.config.items()) {
      const auto& v = item.value();
      config.set_from_text(item.key(), v.is_string() ? v.get<std::string>() : json_text(v));
    }
    const TransformerShape shape = w.transformer_shape(config);
    const double weight_bytes = decode_weight_element_bytes(run.dtype);
    const double kv_bytes =
        kv_element_bytes_of(shape, g->batch, g->prompt + g->gen, g->kv_cache_bytes, weight_bytes);
    return decode_token_count(shape, g->batch, g->prompt, g->gen, weight_bytes, kv_bytes);
  } catch (const UsageError&) {
    // A workload or key this build no longer has, or a dtype the count does not model.
    return std::nullopt;
  }
}

DecodeRoofFit fit_decode_roof(const std::vector<double>& bytes_per_token,
                              const std::vector<double>& tpot_s) {
  const LineFit line = fit_line(bytes_per_token, tpot_s);
  DecodeRoofFit fit;
  fit.overhead_s = line.intercept;
  fit.bytes_per_s = line.slope > 0 ? 1.0 / line.slope : std::numeric_limits<double>::quiet_NaN();
  fit.r_squared = line.r_squared;
  fit.n = line.n;
  return fit;
}

DecodeBatchLine decode_batch_line(const TransformerShape& shape, int64_t context,
                                  double weight_element_bytes, double kv_element_bytes) {
  // Both counts are exactly linear in the batch: two batches determine the lines.
  const ForwardCost one = decode_cost(shape, 1, context, weight_element_bytes, kv_element_bytes);
  const ForwardCost two = decode_cost(shape, 2, context, weight_element_bytes, kv_element_bytes);
  DecodeBatchLine line;
  line.bytes_per_request = two.bytes() - one.bytes();
  line.fixed_bytes = one.bytes() - line.bytes_per_request;
  line.flops_per_request = one.flops;
  return line;
}

double ridge_batch(const DecodeBatchLine& line, double ridge) {
  const double headroom = line.flops_per_request - ridge * line.bytes_per_request;
  if (!(headroom > 0)) return std::numeric_limits<double>::infinity();
  return ridge * line.fixed_bytes / headroom;
}

BatchKnee batch_knee(const std::vector<int64_t>& batches, const std::vector<double>& tokens_per_s,
                     double threshold) {
  if (batches.size() != tokens_per_s.size())
    throw UsageError(fmt::format("a knee needs one rate per batch ({} rates for {} batches)",
                                 tokens_per_s.size(), batches.size()));
  if (batches.size() < 2)
    throw UsageError(fmt::format("a knee needs at least two batches, got {}", batches.size()));
  BatchKnee knee;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!(tokens_per_s[i] > 0) || !std::isfinite(tokens_per_s[i]))
      throw UsageError(fmt::format("batch {}'s decode rate {} is not a positive number", batches[i],
                                   tokens_per_s[i]));
    if (i == 0) continue;
    if (batches[i] <= batches[i - 1])
      throw UsageError("a knee needs batches in strictly increasing order");
    const double efficiency =
        (tokens_per_s[i] / tokens_per_s[i - 1]) /
        (static_cast<double>(batches[i]) / static_cast<double>(batches[i - 1]));
    knee.step_efficiency.push_back(efficiency);
    if (!knee.knee_batch && efficiency < threshold) knee.knee_batch = batches[i - 1];
  }
  return knee;
}

}  // namespace plumb::analysis
