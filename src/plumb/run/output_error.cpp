// Outputs of a precision on fixed inputs, and their error against fp32 (see output_error.h).
#include "plumb/run/output_error.h"

#include <cmath>
#include <limits>
#include <utility>

#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {

OutputError compare_outputs(const std::vector<torch::Tensor>& reference,
                            const std::vector<torch::Tensor>& outputs) {
  PLUMB_ASSERT(reference.size() == outputs.size(), "outputs of different batch counts compared");
  OutputError e;
  double diff2 = 0, ref2 = 0, out2 = 0, dot = 0;
  int64_t agree = 0, agree_total = 0;
  const bool tokens = !reference.empty() && !reference.front().is_floating_point();
  const bool classes = !reference.empty() && !tokens && reference.front().dim() == 2 &&
                       reference.front().size(1) > 1;
  for (size_t i = 0; i < reference.size(); ++i) {
    PLUMB_ASSERT(reference[i].sizes() == outputs[i].sizes(), "outputs of different shapes");
    const auto r = reference[i].to(torch::kDouble).flatten();
    const auto y = outputs[i].to(torch::kDouble).flatten();
    const auto d = y - r;
    diff2 += d.pow(2).sum().item<double>();
    ref2 += r.pow(2).sum().item<double>();
    out2 += y.pow(2).sum().item<double>();
    dot += (r * y).sum().item<double>();
    e.max_abs = std::max(e.max_abs, d.numel() ? d.abs().max().item<double>() : 0.0);
    e.elements += r.numel();
    e.examples += reference[i].dim() > 0 ? reference[i].size(0) : 1;
    if (tokens) {
      agree += reference[i].eq(outputs[i]).sum().item<int64_t>();
      agree_total += reference[i].numel();
    } else if (classes) {
      agree += reference[i].argmax(1).eq(outputs[i].argmax(1)).sum().item<int64_t>();
      agree_total += reference[i].size(0);
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  e.relative_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 == 0 ? 0 : nan);
  e.cosine = ref2 > 0 && out2 > 0 ? dot / std::sqrt(ref2 * out2) : nan;
  e.agreement_kind = tokens ? "token" : classes ? "top1" : "";
  e.agreement = agree_total > 0 ? static_cast<double>(agree) / agree_total : nan;
  return e;
}

OutputError compare_generations(const std::vector<torch::Tensor>& reference_tokens,
                                const std::vector<torch::Tensor>& reference_logits,
                                const std::vector<torch::Tensor>& tokens,
                                const std::vector<torch::Tensor>& logits) {
  OutputError e = compare_outputs(reference_logits, logits);
  const OutputError by_token = compare_outputs(reference_tokens, tokens);
  e.agreement = by_token.agreement;
  e.agreement_kind = by_token.agreement_kind;
  e.measured_on = "logits";
  return e;
}

namespace {

// One generation of `batch`: its tokens [B, gen] and the logits [B, gen, V] that chose each
// (along `forced` when defined), on the CPU.
std::pair<torch::Tensor, torch::Tensor> generation_outputs(GenerativeModel& model,
                                                           const Batch& batch,
                                                           const torch::Device& device,
                                                           const torch::Tensor& forced) {
  std::vector<torch::Tensor> logits;  // gen x [B, V]
  const auto trace = generate(
      model, batch, device,
      [&](Phase) { logits.push_back(model.last_logits().to(torch::kFloat).cpu().clone()); },
      forced.defined() ? forced.to(device) : forced);
  return {trace.tokens.cpu(), torch::stack(logits, 1)};  // [B, gen], [B, gen, V]
}

}  // namespace

OutputCapture capture_outputs(const Workload& workload, const RunOptions& options, size_t batches,
                              const std::vector<torch::Tensor>& forced_tokens) {
  PLUMB_ASSERT(options.mode == Mode::kInfer, "outputs are compared in inference");
  OutputCapture out;
  RunResult r;
  with_model(
      workload, options, r,
      [&](StepLoop& loop) {
        const auto& all = loop.batches();
        PLUMB_ASSERT(forced_tokens.empty() || forced_tokens.size() == all.size(),
                     "one forced sequence per batch");
        for (size_t i = 0; i < all.size(); ++i) {
          const Batch& batch = all[i];
          // The same noise for every precision in models that sample (the VAE).
          torch::manual_seed(options.seed + 1);
          if (GenerativeModel* generative = loop.generative()) {
            // Free-running for the tokens; forced along the reference's for the logits.
            auto [tokens, logits] =
                generation_outputs(*generative, batch, loop.device(), torch::Tensor());
            if (!forced_tokens.empty())
              logits =
                  generation_outputs(*generative, batch, loop.device(), forced_tokens[i]).second;
            out.outputs.push_back(tokens);
            out.logits.push_back(logits);
            continue;
          }
          auto y = loop.model().infer_output(batch);
          if (!y.defined()) {
            out.exposes_output = false;
            return;
          }
          out.outputs.push_back(y.is_floating_point() ? y.to(torch::kFloat).contiguous().clone()
                                                      : y.contiguous().clone());
        }
      },
      batches);
  out.status = r.status;
  out.message = r.message;
  out.quantized_layers = r.quantized_layers;
  return out;
}

}  // namespace plumb::run
