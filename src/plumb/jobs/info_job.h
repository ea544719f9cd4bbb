// plumb info's job: a workload built at batch 1 (parameters do not depend on the batch), its
// trainable parameters, its layers with their module types, parameters and output shapes, and
// the work of one example's inference, all from one traced inference step; with the intensity
// option also the Facebook paper's Table 1 (ops per element of traffic per compute layer) at
// the requested batch; for a transformer, FLOPs and bytes per token of prefill and decode.
// Reporters: info_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/intensity.h"
#include "plumb/core/config.h"
#include "plumb/core/generation.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/workload.h"
#include "plumb/jobs/layer_traffic_trace.h"
#include "plumb/profile/forward_cost.h"

namespace plumb::jobs {

struct InfoJobOptions {
  Config config;  // resolved
  bool intensity = false;
  // Table 1 is per inference at a small batch: 1 unless the batch was given.
  bool batch_given = false;
  // Transformers: the context a decode token attends (default: the config's prompt + gen).
  std::optional<int64_t> context;
};

// A transformer's work per token of one phase, counted from its dimensions
// (core/transformer_shape.h) in fp32: a prefill over the prompt, or one decode iteration at a
// context.
struct TokenCostRow {
  Phase phase = Phase::kPrefill;
  int64_t batch = 1;    // requests in the call (weights are read once for all of them)
  int64_t tokens = 1;   // new tokens per request in the call
  int64_t context = 1;  // positions attended
  ForwardCost per_token;
  double intensity() const { return per_token.flops / per_token.bytes(); }
};

struct InfoLayer {
  LayerRecord record;
  std::string type;  // the module's type: "Bottleneck", "Conv2d"
  int64_t params = 0;
};

struct InfoJobResult {
  const Workload* workload = nullptr;
  Config config;
  int64_t params = 0;
  profile::ForwardCost forward;  // of one example
  std::vector<InfoLayer> layers;
  // With the intensity option:
  std::optional<ModelTraffic> traffic;
  std::optional<analysis::IntensitySummary> summary;
  int64_t intensity_batch = 1;
  // Transformers only: the dimensions, prefill and decode per token, and why the layer list is
  // missing when the model was not built (it would not fit in memory).
  std::optional<TransformerShape> shape;
  std::vector<TokenCostRow> token_costs;
  std::string layers_skipped;
};

InfoJobResult run_info_job(const Workload& workload, const InfoJobOptions& options);

}  // namespace plumb::jobs
