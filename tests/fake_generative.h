// A scripted generative model for the generation, runner and phase tests: a cache of
// [B, prompt + gen, width] allocated at prefill and written in place by each decode, a prefill
// that also runs a matmul of known size (work only the prefill does), a decode that attends
// over the cache (two matmuls and a softmax in layer "attn"), and logits from a linear layer
// ("proj") over the latest position.
#pragma once

#include <memory>
#include <string>

#include "fake_workload.h"
#include "plumb/core/generation.h"
#include "plumb/core/layer_scope.h"
#include "plumb/core/workload.h"

namespace plumb::testing {

constexpr int64_t kFakeLmWidth = 8;  // the cache's and the logits' width (vocabulary)
constexpr int64_t kFakeLmPrefillIn = 32, kFakeLmPrefillOut = 24;  // [B*P, In] x [In, Out]

class FakeGenerativeModel : public Model, public GenerativeModel {
 public:
  FakeGenerativeModel(int64_t batch, int64_t prompt, int64_t gen)
      : shape_{batch, prompt, gen},
        proj_(torch::nn::Linear(kFakeLmWidth, kFakeLmWidth)),
        prefill_in_(torch::ones({batch * prompt, kFakeLmPrefillIn})),
        prefill_weight_(torch::ones({kFakeLmPrefillIn, kFakeLmPrefillOut})) {}

  torch::nn::Module& module() override { return *proj_; }
  Batch make_batch() override {
    return {{torch::randint(kFakeLmWidth, {shape_.batch, shape_.prompt}, torch::kLong)},
            static_cast<double>(shape_.batch * shape_.gen)};
  }
  double train_step(const Batch&) override {
    return proj_->forward(torch::ones({1, kFakeLmWidth})).sum().item<double>();
  }
  double infer_step(const Batch& batch) override {
    torch::NoGradGuard no_grad;
    generate(*this, batch, torch::Device(torch::kCPU));
    return last_logits().sum().item<double>();
  }

  GenerationShape generation_shape() const override { return shape_; }
  torch::Tensor prefill(const Batch& batch) override {
    cache_ = torch::zeros({shape_.batch, shape_.prompt + shape_.gen, kFakeLmWidth});  // [B, P+G, W]
    cache_.narrow(1, 0, shape_.prompt)
        .copy_(batch.tensors[0].unsqueeze(2).expand({-1, -1, kFakeLmWidth}).to(torch::kFloat));
    position_ = shape_.prompt;
    torch::mm(prefill_in_, prefill_weight_);  // [B*P, Out]: prefill's work only
    return next_token();
  }
  torch::Tensor decode(const torch::Tensor& tokens) override {
    cache_.narrow(1, position_, 1)
        .copy_(tokens.view({-1, 1, 1}).expand({-1, 1, kFakeLmWidth}).to(torch::kFloat));
    ++position_;
    {
      LayerScope scope("attn");
      // As a model written for LibTorch 1.13 and 2.x attends: two matmuls and a softmax.
      const auto q = cache_.select(1, position_ - 1).unsqueeze(1);              // [B, 1, W]
      const auto kv = cache_.narrow(1, 0, position_);                           // [B, pos, W]
      const auto p = torch::softmax(torch::matmul(q, kv.transpose(1, 2)), -1);  // [B, 1, pos]
      torch::matmul(p, kv);                                                     // [B, 1, W]
    }
    return next_token();
  }
  torch::Tensor last_logits() const override { return logits_; }
  int64_t kv_cache_bytes() const override {
    return shape_.batch * (shape_.prompt + shape_.gen) * kFakeLmWidth * 4;
  }

  const torch::Tensor& cache() const { return cache_; }

 private:
  torch::Tensor next_token() {
    LayerScope scope("proj");
    logits_ = proj_->forward(cache_.select(1, position_ - 1));  // [B, W]
    return logits_.argmax(1);                                   // [B]
  }
  GenerationShape shape_;
  torch::nn::Linear proj_;
  torch::Tensor prefill_in_, prefill_weight_, cache_, logits_;
  int64_t position_ = 0;
};

// A workload of the fake at `batch` requests (its config's batch) of prompt + gen tokens.
inline Workload fake_generative_workload(const std::string& name, int64_t batch, int64_t prompt,
                                         int64_t gen) {
  Workload w = test_workload_shell(name, "a scripted generative model", batch);
  w.info.throughput_unit = "tokens/s";
  w.build = [prompt, gen](const Config& c, const torch::Device&) -> std::unique_ptr<Model> {
    return std::make_unique<FakeGenerativeModel>(c.get_int("batch"), prompt, gen);
  };
  return w;
}

}  // namespace plumb::testing
