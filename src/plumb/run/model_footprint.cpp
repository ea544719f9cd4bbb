// A transformer run's memory floor and the refusal of one that cannot fit (see model_footprint.h).
#include "plumb/run/model_footprint.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/proc_fields.h"
#include "plumb/core/transformer_shape.h"

namespace plumb::run {
namespace {

constexpr double kGB = 1e9;

// Bytes per parameter of the copies a run keeps: every model is built in fp32; bf16 runs under
// CPU autocast, which caches a bf16 copy of each weight; int8 keeps quantized copies beside;
// fp16 converts the module in place.
double weight_bytes_per_parameter(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return 4 + 2;
    case Dtype::kInt8:
      return 4 + 1;
    case Dtype::kFp16:
      return 2;
    default:
      return element_bytes(dtype);
  }
}

int64_t config_int_or(const Config& config, const char* key, int64_t fallback) {
  return config.has(key) ? config.get_int(key) : fallback;
}

}  // namespace

std::optional<ModelFootprint> transformer_footprint(const Workload& workload, const RunOptions& o) {
  if (!workload.transformer_shape) return std::nullopt;
  const TransformerShape shape = workload.transformer_shape(o.config);
  const auto parameters = static_cast<double>(parameter_count(shape));
  ModelFootprint footprint;
  footprint.weights = parameters * weight_bytes_per_parameter(o.dtype);
  if (o.mode == Mode::kTrain) {
    footprint.training_state = parameters * 4 * 3;  // fp32 gradient, AdamW's two moments
  } else if (shape.causal) {
    // The prompt's key: `prompt` (gpt2, llama), or `context` for ParaDnn's generator, whose
    // context is the prompt it runs (llama's `context` is its limit, and it has `prompt`).
    const int64_t prompt = config_int_or(o.config, "prompt", config_int_or(o.config, "context", 0));
    const int64_t positions = prompt + config_int_or(o.config, "gen", 0);
    footprint.kv_cache =
        kv_cache_bytes(shape, o.config.get_int("batch"), positions, kv_element_bytes(o.dtype));
  }
  return footprint;
}

void refuse_if_it_cannot_fit(const Workload& workload, const RunOptions& o,
                             int64_t available_bytes) {
  const auto footprint = transformer_footprint(workload, o);
  if (!footprint) return;
  if (available_bytes < 0) available_bytes = available_memory_bytes();
  if (available_bytes < 0 || footprint->total() <= static_cast<double>(available_bytes)) return;
  const std::string preset =
      o.config.has("preset") ? fmt::format(" (preset {})", o.config.get_string("preset")) : "";
  throw UsageError(fmt::format(
      "{}{} needs at least {:.1f} GB for {} {} (weights {:.1f} GB, {} {:.1f} GB) but {:.1f} GB "
      "of memory is available; choose a smaller preset, batch or context",
      workload.info.name, preset, footprint->total() / kGB, dtype_name(o.dtype), mode_name(o.mode),
      footprint->weights / kGB, o.mode == Mode::kTrain ? "gradients and AdamW state" : "KV cache",
      (footprint->training_state + footprint->kv_cache) / kGB,
      static_cast<double>(available_bytes) / kGB));
}

double kv_element_bytes(Dtype dtype) {
  return dtype == Dtype::kBf16 || dtype == Dtype::kFp16 ? 2 : 4;
}

}  // namespace plumb::run
