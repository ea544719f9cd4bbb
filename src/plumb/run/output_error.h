// How far a precision's outputs are from fp32's on the same inputs and the same weights: the
// error measures of `plumb precision` (relative L2, max abs, cosine, top-1 / token agreement).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

struct OutputError {
  double relative_l2 = 0;  // ||y - y32|| / ||y32||
  double max_abs = 0;      // max |y - y32|
  double cosine = 1;       // <y, y32> / (||y|| ||y32||)
  // Classifiers ([B, C] floating outputs): share of examples whose argmax class agrees. Token
  // outputs (integer): share of equal tokens. NaN where neither applies.
  double agreement = 0;
  std::string agreement_kind;  // "top1", "token" or "" (none)
  // What relative L2, max abs and cosine measure: "outputs" (the outputs themselves) or, for a
  // generative model, "logits": the logits of every generated position when the candidate is
  // fed fp32's tokens (teacher forcing), so positions stay comparable after the first token
  // that differs; its token agreement is that of the sequences each generates on its own.
  std::string measured_on = "outputs";
  int64_t elements = 0;  // output elements compared
  int64_t examples = 0;  // examples compared (first output dimension, summed)
};

// Error measures of `outputs` against `reference`, batch by batch (same shapes). Pure.
OutputError compare_outputs(const std::vector<torch::Tensor>& reference,
                            const std::vector<torch::Tensor>& outputs);

// A generative model's error: token agreement of `tokens` against `reference_tokens`, the
// floating measures of `logits` against `reference_logits` (measured_on "logits").
OutputError compare_generations(const std::vector<torch::Tensor>& reference_tokens,
                                const std::vector<torch::Tensor>& reference_logits,
                                const std::vector<torch::Tensor>& tokens,
                                const std::vector<torch::Tensor>& logits);

struct OutputCapture {
  RunStatus status = RunStatus::kOk;
  std::string message;                 // why, when status != ok
  std::vector<torch::Tensor> outputs;  // one per batch, fp32 (or integer), on the CPU
  // Generative models: per batch the logits [B, gen, V] of every generated position, along
  // the forced tokens when given (else along the model's own choices).
  std::vector<torch::Tensor> logits;
  std::vector<std::string> quantized_layers;  // int8: module paths calibration saw
  bool exposes_output = true;                 // false: the workload has no infer_output yet
};

// Builds the model at options.seed in options' precision (options.mode must be infer) and
// returns its outputs on `batches` distinct synthetic batches, the same for every precision
// (the timed batches of the run; the random state is reset before each forward, so sampling
// layers draw the same noise). A generative model's outputs are its generated tokens [B, gen]
// and its logits are captured too, teacher-forced along `forced_tokens` (one per batch) when
// given.
OutputCapture capture_outputs(const Workload& workload, const RunOptions& options, size_t batches,
                              const std::vector<torch::Tensor>& forced_tokens = {});

}  // namespace plumb::run
