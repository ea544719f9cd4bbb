// The one output error of a precision against fp32 that plumb precision, characterize and tune
// report: one reference setting (fp32, contiguous, oneDNN, inference, the setting's seed, config
// and threads), one batch count (the timed batches of a run), one headline metric and one
// message when the error cannot be measured.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "plumb/core/outcome.h"
#include "plumb/core/workload.h"
#include "plumb/run/output_error.h"
#include "plumb/run/run_result.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {

// Batches whose outputs are compared: the pool of batches a timed run cycles through.
inline constexpr size_t kErrorBatches = kDefaultBatchPool;

// The headline metric: relative L2 for floating outputs; for token (integer) outputs the share
// of tokens that differ, since the distance between two token ids means nothing. A generative
// model's relative L2 is still reported beside it: that of its logits along fp32's tokens
// (OutputError::measured_on).
inline constexpr const char* kRelativeL2Metric = "relative_l2";
inline constexpr const char* kTokenMismatchMetric = "token_mismatch";

// Not measured: kUnsupported when the workload does not expose its output, else the state and
// message of the capture that failed (fp32's or the candidate's).
struct ErrorAgainstFp32 {
  Outcome outcome = Outcome::failure(OutcomeState::kError, "");  // ok once measured
  OutputError error;  // every measure (relative L2, max abs, cosine, agreement) when measured
  std::string metric = kRelativeL2Metric;  // kRelativeL2Metric or kTokenMismatchMetric
  double value = std::numeric_limits<double>::quiet_NaN();  // the headline metric's value
  std::vector<std::string> quantized_layers;                // int8: module paths calibration saw
};

// The headline metric of `e`'s outputs and its value (see above).
const char* error_metric(const OutputError& e);
double error_value(const OutputError& e);

// "relative_l2 1.23e-02", or why not when not measured: the one line the commands print.
std::string error_text(const ErrorAgainstFp32& e);

// The reference every precision is compared with: `setting` in fp32, contiguous, on oneDNN, in
// inference (its seed, config, threads and device kept; per-precision options cleared).
RunOptions fp32_reference_setting(const RunOptions& setting);

// fp32's outputs of one workload, captured once, and the error of any precision against them.
class Fp32Reference {
 public:
  // Captures the outputs of fp32_reference_setting(setting) on kErrorBatches batches.
  Fp32Reference(const Workload& workload, const RunOptions& setting);

  // Outputs were captured; when not, note() says why (every error_of carries it too).
  bool captured() const { return capture_.ok(); }
  const std::string& note() const { return capture_.reason; }
  const RunOptions& setting() const { return setting_; }
  // The headline metric of this workload's outputs (relative L2 when none were captured).
  const char* metric() const;

  // The error of `candidate` (its dtype, memory format, engine, kept layers ...; run in
  // inference at the reference's seed and config) against fp32's outputs. fp32 in the reference
  // setting itself is exact and not run again.
  ErrorAgainstFp32 error_of(const RunOptions& candidate) const;

 private:
  OutputError against_reference(const OutputCapture& candidate) const;

  const Workload* workload_;
  RunOptions setting_;
  std::vector<torch::Tensor> outputs_;
  std::vector<torch::Tensor> logits_;  // a generative model's, along its own tokens
  Outcome capture_;                    // of fp32's outputs
};

}  // namespace plumb::run
