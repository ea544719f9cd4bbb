// Decode on the memory roof (docs/llm.md "Decode on the memory roof"): what one decoded token
// reads and computes, counted from a transformer's dimensions over the decode calls of a
// generation; the least-squares fit of time per output token against bytes per token (the
// slope's inverse is the effective bandwidth, the intercept the per-token overhead); where a
// batch of requests turns decode compute-bound by the counts (the ridge crossing), and where the
// measured tokens/s stop growing with the batch (the knee). Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "plumb/core/dtype.h"
#include "plumb/core/transformer_shape.h"
#include "plumb/store/run_record.h"

namespace plumb::analysis {

// What one decoded token reads and computes: one decode call's counts (decode_cost) divided by
// the requests it decodes, averaged over the gen - 1 decode calls of a generation (call j
// attends prompt + j positions, so the mean context is prompt + gen / 2).
struct DecodeTokenCount {
  double mean_context = 0;
  double weight_bytes = 0;  // weights read, per token
  double kv_bytes = 0;      // KV cache read and written, per token
  double flops = 0;         // per token
  double bytes() const { return weight_bytes + kv_bytes; }
  double kv_fraction() const;  // kv_bytes / bytes()
  double intensity() const;    // flops / bytes(): FLOP per byte
};

// Throws UsageError when gen < 2 (no decode call) or batch or prompt is below 1.
DecodeTokenCount decode_token_count(const TransformerShape& shape, int64_t batch, int64_t prompt,
                                    int64_t gen, double weight_element_bytes,
                                    double kv_element_bytes);

// Bytes per weight a decode reads in `dtype`: fp32 4; bf16 2 (CPU autocast multiplies through
// the bf16 copies it caches of each weight); fp16 2 (the module converted). Throws UsageError
// for int8 and fp64, which the decode count does not model.
double decode_weight_element_bytes(Dtype dtype);

// Bytes per element of the KV cache a run allocated: its measured cache bytes over the
// elements kv_cache_bytes counts for batch x (prompt + gen) positions; `fallback` when the
// run measured none.
double kv_element_bytes_of(const TransformerShape& shape, int64_t batch, int64_t positions,
                           double measured_cache_bytes, double fallback);

// The decode counts of a stored generative inference run (status ok, with its generation
// phases): its workload's dimensions from the stored config, its batch, prompt and gen, its
// dtype's weight bytes and its measured cache's element size. None for any other run, or when
// the workload or a stored config key is no longer known.
std::optional<DecodeTokenCount> stored_decode_count(const store::StoredRun& run);

// TPOT = overhead_s + bytes_per_token / bytes_per_s, fitted by ordinary least squares over
// points at batch 1 (one per model size).
struct DecodeRoofFit {
  double overhead_s = 0;   // the intercept: seconds per token that no byte explains
  double bytes_per_s = 0;  // 1 / slope: the effective bandwidth; NaN when the slope is not > 0
  double r_squared = 0;
  size_t n = 0;
};
// Throws UsageError for fewer than two points, mismatched sizes or equal byte counts.
DecodeRoofFit fit_decode_roof(const std::vector<double>& bytes_per_token,
                              const std::vector<double>& tpot_s);

// One decode call's counts as lines in the batch b: bytes = fixed_bytes + b * bytes_per_request
// (the weights are read once whatever the batch; each request adds its KV cache and embedding
// rows), flops = b * flops_per_request.
struct DecodeBatchLine {
  double fixed_bytes = 0;
  double bytes_per_request = 0;
  double flops_per_request = 0;
};
DecodeBatchLine decode_batch_line(const TransformerShape& shape, int64_t context,
                                  double weight_element_bytes, double kv_element_bytes);

// The batch (real-valued) at which a decode call's intensity reaches `ridge` FLOP/byte (peak
// FLOP/s over DRAM bytes/s): solves b f / (W + b k) = ridge, b = ridge W / (f - ridge k). +inf
// when no batch reaches it (each request's own bytes already keep it below the ridge).
double ridge_batch(const DecodeBatchLine& line, double ridge);

// The measured knee of decode tokens/s over the batch. Between consecutive batches b[i-1] <
// b[i], the step's scaling efficiency is (tps[i] / tps[i-1]) / (b[i] / b[i-1]): 1 while tokens/s
// grow in proportion to the batch (memory-bound: a call costs the same for more requests),
// b[i-1] / b[i] when they stay flat (compute-bound). The knee is b[i-1] of the first step whose
// efficiency is below `threshold`: the largest batch up to which tokens/s grew at least nearly
// linearly. None when every step stays at or above it (still linear at the largest batch).
struct BatchKnee {
  std::vector<double> step_efficiency;  // one per step: size() - 1 entries
  std::optional<int64_t> knee_batch;
};
constexpr double kKneeEfficiency = 0.75;
// Throws UsageError for fewer than two batches, batches not strictly increasing, mismatched
// sizes, or a rate that is not positive and finite.
BatchKnee batch_knee(const std::vector<int64_t>& batches, const std::vector<double>& tokens_per_s,
                     double threshold = kKneeEfficiency);

}  // namespace plumb::analysis
