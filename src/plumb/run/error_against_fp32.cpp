// The one error-against-fp32 measurement (see error_against_fp32.h).
#include "plumb/run/error_against_fp32.h"

#include <fmt/format.h>

namespace plumb::run {

const char* error_metric(const OutputError& e) {
  return e.agreement_kind == "token" ? kTokenMismatchMetric : kRelativeL2Metric;
}

double error_value(const OutputError& e) {
  return e.agreement_kind == "token" ? 1 - e.agreement : e.relative_l2;
}

std::string error_text(const ErrorAgainstFp32& e) {
  return e.outcome.ok() ? fmt::format("{} {:.2e}", e.metric, e.value) : e.outcome.reason;
}

RunOptions fp32_reference_setting(const RunOptions& setting) {
  RunOptions o = setting;
  o.mode = Mode::kInfer;
  o.dtype = Dtype::kFp32;
  o.memory_format = MemoryFormat::kContiguous;
  o.engine = Engine::kOnednn;
  o.keep_fp32.clear();
  o.embedding_bits = RunOptions{}.embedding_bits;
  return o;
}

namespace {

bool same_as_reference(const RunOptions& a, const RunOptions& reference) {
  return a.dtype == reference.dtype && a.memory_format == reference.memory_format &&
         a.engine == reference.engine && a.keep_fp32.empty() &&
         a.embedding_bits == reference.embedding_bits;
}

}  // namespace

Fp32Reference::Fp32Reference(const Workload& workload, const RunOptions& setting)
    : workload_(&workload), setting_(fp32_reference_setting(setting)) {
  auto capture = capture_outputs(workload, setting_, kErrorBatches);
  if (capture.status != RunStatus::kOk)
    capture_ =
        Outcome::failure(capture.status, "fp32 outputs could not be captured: " + capture.message);
  else if (!capture.exposes_output)
    capture_ = Outcome::failure(
        OutcomeState::kUnsupported,
        workload.info.name + " does not expose its output yet: its error against fp32 is unknown");
  else {
    outputs_ = std::move(capture.outputs);
    logits_ = std::move(capture.logits);
  }
}

OutputError Fp32Reference::against_reference(const OutputCapture& candidate) const {
  return logits_.empty()
             ? compare_outputs(outputs_, candidate.outputs)
             : compare_generations(outputs_, logits_, candidate.outputs, candidate.logits);
}

const char* Fp32Reference::metric() const {
  return !outputs_.empty() && !outputs_.front().is_floating_point() ? kTokenMismatchMetric
                                                                    : kRelativeL2Metric;
}

ErrorAgainstFp32 Fp32Reference::error_of(const RunOptions& candidate) const {
  ErrorAgainstFp32 e;
  if (!captured()) {
    e.outcome = capture_;
    return e;
  }
  e.metric = metric();
  RunOptions o = setting_;
  o.dtype = candidate.dtype;
  o.memory_format = candidate.memory_format;
  o.engine = candidate.engine;
  o.keep_fp32 = candidate.keep_fp32;
  o.embedding_bits = candidate.embedding_bits;
  if (same_as_reference(o, setting_)) {
    OutputCapture itself;
    itself.outputs = outputs_;
    itself.logits = logits_;
    e.error = against_reference(itself);
  } else {
    // A generative candidate is also fed fp32's tokens, so its logits compare position by
    // position with fp32's.
    auto capture = capture_outputs(*workload_, o, kErrorBatches,
                                   logits_.empty() ? std::vector<torch::Tensor>{} : outputs_);
    if (capture.status != RunStatus::kOk) {
      e.outcome = Outcome::failure(capture.status, capture.message);
      return e;
    }
    e.error = against_reference(capture);
    e.quantized_layers = std::move(capture.quantized_layers);
  }
  e.outcome = Outcome::success();
  e.value = error_value(e.error);
  return e;
}

}  // namespace plumb::run
