// The one standard interface behind which every reference model lives (as in Fathom):
// a descriptor (name, suites, domain, source, throughput unit), documented default
// configuration equal to the published architecture, and a builder that returns a
// ready-to-step Model (module + optimizer + synthetic data generator).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/config.h"
#include "plumb/core/transformer_shape.h"

namespace plumb {

// One synthetic mini-batch, already on the model's device.
struct Batch {
  std::vector<torch::Tensor> tensors;  // model-specific order, documented by each workload
  double units = 0;                    // work in this batch, in the workload's throughput unit
                                       // (images, tokens, audio-seconds, samples ...)
};

// An instantiated workload. The runner owns the loop and the clock; a Model only knows how
// to make data and take one step.
class Model {
 public:
  virtual ~Model() = default;

  // The root module: parameter counts, train()/eval(), device moves and layer listings.
  virtual torch::nn::Module& module() = 0;

  // A synthetic batch with the real input shapes, dtypes and value ranges. Draws from
  // torch's global generator, so the runner's seed makes it reproducible. The runner calls it
  // after setting train()/eval(), so a batch may depend on the mode (wgan_gp trains on real
  // images but only generates from noise); a training batch must also serve infer_step.
  virtual Batch make_batch() = 0;

  // A synthetic batch of `examples` examples instead of the configured batch, for the serving
  // batcher's variable batches (plumb serve). std::nullopt (the default) means the model's batch
  // is fixed by its configuration: a server then pads every batch to that size.
  virtual std::optional<Batch> make_batch_of(int64_t /*examples*/) { return std::nullopt; }

  // Forward, loss, backward and optimizer step with the optimizer the source used.
  // Returns the loss (the runner checks it is finite).
  virtual double train_step(const Batch& batch) = 0;

  // Forward only. The runner has already put the module in eval mode under
  // c10::InferenceMode. Returns a scalar summary of the output (used to check for NaN and to
  // keep the computation observable).
  virtual double infer_step(const Batch& batch) = 0;

  // Forward only, returning what the model outputs (class logits [B, C], a reconstruction,
  // scores ...), so a precision's error can be measured against fp32 on the same inputs. Same
  // preconditions as infer_step. An undefined tensor (the default) means the workload does
  // not expose its output yet: precision comparisons then report speed only, and say so.
  virtual torch::Tensor infer_output(const Batch& /*batch*/) { return {}; }
};

struct WorkloadInfo {
  std::string name;                 // canonical, lower-case: "resnet50"
  std::vector<std::string> suites;  // "fathom", "tbd", "paradnn-real", "inference" ...
  std::string domain;               // "image classification", "machine translation" ...
  std::string description;          // one line: what the model is, and the chosen variant
  std::string source;               // paper (year) and what was taken from it
  std::string throughput_unit;      // "images/s", "tokens/s", "samples/s" ...
  int64_t small_batch = 1;          // CPU-friendly batch for the suite / main job
  // "key=value" overrides that shrink the model to seconds-per-step size for the tests that
  // run every registered workload (dimensions only; the architecture stays the same — plus a
  // learning rate where the published one diverges at batch 2 without batch norm).
  std::vector<std::string> tiny_config;
  // "key=value" reductions `plumb suite` applies on top of small_batch where even one example
  // at the published size would not fit the main job's time on a 2-core CPU (shorter sequences,
  // smaller images). Empty for most workloads; the suite prints them with its results.
  std::vector<std::string> suite_settings = {};
  // False for models the sources only serve (resnext101_32x48d): `plumb suite` then measures
  // inference only; `plumb run --mode train` still trains it when asked.
  bool train_by_default = true;
};

struct Workload {
  WorkloadInfo info;
  // The published configuration; always contains "batch". Precision is not a workload key:
  // it is a run setting (RunOptions::dtype), applied by the runner.
  std::function<Config()> default_config;
  std::function<std::unique_ptr<Model>(const Config&, const torch::Device&)> build;
  // Transformers only (gpt2, llama, bert, paradnn_transformer): the dimensions a config
  // gives, from which info, intensity and the decode roofline count work and bytes without
  // building the model. Empty for every other workload.
  std::function<TransformerShape(const Config&)> transformer_shape = {};
};

// Whether the workload at `config` generates tokens in inference (a causal transformer: prefill,
// then decode with a KV cache); an encoder and every one-shot model do not.
bool generates_tokens(const Workload& workload, const Config& config);

// Trainable parameters of a module (requires_grad only), the number papers report.
int64_t count_trainable_parameters(torch::nn::Module& module);

// The configuration `plumb suite` and `plumb characterize` (the main job) measure: the
// published one at small_batch, with suite_settings applied. Other commands start from it when
// asked (--suite-size), so their figures describe the same sizes the suite's do.
Config suite_config(const Workload& workload);
// The published config shrunk by the workload's tiny_config overrides: seconds-per-step models
// (the tests, plumb characterize --size tiny).
Config tiny_config(const Workload& workload);

}  // namespace plumb
