// deepspeech2: Deep Speech 2 (Amodei et al., ICML 2016) as TBD trains it: MXNet's
// example/speech_recognition with its deepspeech.cfg, the "default MXNet configuration" with 5
// recurrent layers that TBD names (Table II note b: the paper's 7 did not fit in memory).
//   - input: linear spectrogram, 161 bins (20 ms window, 10 ms hop), normalised to N(0, 1);
//   - conv1: 32 filters of 11 (time) x 41 (frequency), stride 2x2, no padding, no bias, then
//     ReLU, then batch norm (MXNet's order); conv2: 32 x 32 x 11 x 21, stride 1x2, same.
//     Frequency: 161 -> 61 -> 21, so each frame carries 32 x 21 = 672 features;
//   - bidirectional GRU of 5 layers x 1760 units, built as MXNet's bi_gru_unroll: a 5-layer
//     forward stack and a separate 5-layer backward stack, concatenated only after the top
//     layer (layer l > 0 reads its own direction's 1760 outputs). Cell (stt_layer_gru.py):
//     [z, r] = sigmoid(BN_t(W_g x + b_g) + U_g h + c_g); h~ = tanh(W x + b + U (r * h) + c);
//     h' = h + z (h~ - h). BN_t normalises the gate input over the batch at each time step and
//     has its own gamma/beta per time step (shared by the 5 layers of a direction), for every
//     step of the largest bucket (1,600 frames -> 785 steps);
//   - one rear FC 3520 -> 1760 (no bias) + batch norm (stats per step, gamma/beta shared) +
//     ReLU; classifier 1760 -> 29 (blank, space, apostrophe, a-z); CTC (WarpCTC, blank 0);
//   - SGD momentum 0.9, lr 3e-4, gradients rescaled by 1/batch (MXNet Module), clipped
//     elementwise at +-100; batch 12; bucketing in steps of 100 frames up to 1,600 (16 s).
// Trainable parameters: 192,026,013 (derivation in docs/workloads.md).
#include "plumb/workloads/tbd/deepspeech2.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/layers.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int64_t kKernelT1 = 11, kKernelF1 = 41, kStrideT1 = 2, kStrideF1 = 2;  // conv1
constexpr int64_t kKernelT2 = 11, kKernelF2 = 21, kStrideT2 = 1, kStrideF2 = 2;  // conv2
constexpr double kBnEps = 1e-3;                // MXNet batchnorm helper: eps 0.001
constexpr double kDeepSpeechBnMomentum = 0.1;  // MXNet momentum 0.9 = keep 90% of the running value
constexpr int64_t kBucketStep = 100;           // deepspeech.cfg buckets 200, 300, ..., 1600 frames

// Time steps left after both convolutions.
int64_t steps_after_conv(int64_t frames) {
  return conv_out(conv_out(frames, kKernelT1, kStrideT1), kKernelT2, kStrideT2);
}

// Batch norm whose statistics are taken over the batch separately at every time step (MXNet
// applies one BatchNorm op per unrolled step). x [B, T, C] -> [B, T, C]. Running statistics are
// kept per step in buffers sized for the longest sequence. With `gamma`/`beta` [T, C] the
// affine transform is per step, otherwise the caller applies a shared one.
torch::Tensor stepwise_batch_norm(const torch::Tensor& x, torch::Tensor& running_mean,
                                  torch::Tensor& running_var, const torch::Tensor& gamma,
                                  const torch::Tensor& beta, bool training) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2);
  auto flat = x.reshape({b, t * c});  // each (step, channel) is one batch-norm channel
  auto mean = running_mean.narrow(0, 0, t * c), var = running_var.narrow(0, 0, t * c);
  auto w = gamma.defined() ? gamma.narrow(0, 0, t).reshape({t * c}) : torch::Tensor();
  auto bias = beta.defined() ? beta.narrow(0, 0, t).reshape({t * c}) : torch::Tensor();
  return torch::batch_norm(flat, w, bias, mean, var, training, kDeepSpeechBnMomentum, kBnEps, false)
      .view({b, t, c});
}

// One GRU layer of one direction (MXNet GRUParam: gates and transform, input and hidden side,
// each with a bias).
struct GruLayerImpl : nn::Module {
  GruLayerImpl(int64_t input, int64_t hidden)
      : gates_i2h(register_module("gates_i2h", nn::Linear(input, 2 * hidden))),
        gates_h2h(register_module("gates_h2h", nn::Linear(hidden, 2 * hidden))),
        trans_i2h(register_module("trans_i2h", nn::Linear(input, hidden))),
        trans_h2h(register_module("trans_h2h", nn::Linear(hidden, hidden))) {}
  nn::Linear gates_i2h, gates_h2h, trans_i2h, trans_h2h;
};
TORCH_MODULE(GruLayer);

// A 5-layer stack run in one direction, with the per-step gate batch norm of that direction.
struct GruStackImpl : nn::Module {
  GruStackImpl(int64_t input, int64_t hidden, int64_t layers, int64_t max_steps) {
    for (int64_t l = 0; l < layers; ++l) {
      stack.push_back(
          register_module("l" + std::to_string(l), GruLayer(l == 0 ? input : hidden, hidden)));
      bn_mean.push_back(register_buffer("l" + std::to_string(l) + "_bn_mean",
                                        torch::zeros({max_steps * 2 * hidden})));
      bn_var.push_back(register_buffer("l" + std::to_string(l) + "_bn_var",
                                       torch::ones({max_steps * 2 * hidden})));
    }
    gamma = register_parameter("bn_gamma", torch::ones({max_steps, 2 * hidden}));
    beta = register_parameter("bn_beta", torch::zeros({max_steps, 2 * hidden}));
  }

  // x [B, T, input] -> [B, T, H]
  torch::Tensor forward(const std::string& path, torch::Tensor x, bool backward) {
    for (size_t l = 0; l < stack.size(); ++l) {
      const std::string name = path + ".l" + std::to_string(l);
      auto& layer = stack[l];
      auto gates_in = run_layer(name + ".gates_i2h", layer->gates_i2h, x);  // [B, T, 2H]
      {
        LayerScope scope(name + ".gates_bn");
        gates_in = scope.output(
            stepwise_batch_norm(gates_in, bn_mean[l], bn_var[l], gamma, beta, is_training()));
      }
      auto trans_in = run_layer(name + ".trans_i2h", layer->trans_i2h, x);  // [B, T, H]
      LayerScope scope(name + ".recurrent");
      const int64_t steps = x.size(1), hidden = trans_in.size(2);
      auto h = torch::zeros({x.size(0), hidden}, x.options());  // [B, H]
      std::vector<torch::Tensor> outputs(steps);
      for (int64_t i = 0; i < steps; ++i) {
        const int64_t t = backward ? steps - 1 - i : i;
        auto gates = torch::sigmoid(gates_in.select(1, t) + layer->gates_h2h->forward(h));
        auto update = gates.narrow(1, 0, hidden), reset = gates.narrow(1, hidden, hidden);
        auto candidate = torch::tanh(trans_in.select(1, t) + layer->trans_h2h->forward(h * reset));
        h = h + update * (candidate - h);  // [B, H]
        outputs[t] = h;
      }
      x = scope.output(torch::stack(outputs, 1));  // [B, T, H]
    }
    return x;
  }

  std::vector<GruLayer> stack;
  std::vector<torch::Tensor> bn_mean, bn_var;
  torch::Tensor gamma, beta;  // [max_steps, 2H], one pair per time step
};
TORCH_MODULE(GruStack);

struct DeepSpeech2Impl : nn::Module {
  explicit DeepSpeech2Impl(const Config& c)
      : conv1(register_module(
            "conv1", nn::Conv2d(nn::Conv2dOptions(1, c.get_int("channels"), {kKernelT1, kKernelF1})
                                    .stride({kStrideT1, kStrideF1})
                                    .bias(false)))),
        conv1_bn(
            register_module("conv1_bn", nn::BatchNorm2d(nn::BatchNormOptions(c.get_int("channels"))
                                                            .eps(kBnEps)
                                                            .momentum(kDeepSpeechBnMomentum)))),
        conv2(register_module(
            "conv2", nn::Conv2d(nn::Conv2dOptions(c.get_int("channels"), c.get_int("channels"),
                                                  {kKernelT2, kKernelF2})
                                    .stride({kStrideT2, kStrideF2})
                                    .bias(false)))),
        conv2_bn(
            register_module("conv2_bn", nn::BatchNorm2d(nn::BatchNormOptions(c.get_int("channels"))
                                                            .eps(kBnEps)
                                                            .momentum(kDeepSpeechBnMomentum)))),
        gru_forward(register_module(
            "gru_forward", GruStack(conv_features(c), c.get_int("hidden"), c.get_int("rnn_layers"),
                                    steps_after_conv(c.get_int("max_frames"))))),
        gru_backward(register_module(
            "gru_backward", GruStack(conv_features(c), c.get_int("hidden"), c.get_int("rnn_layers"),
                                     steps_after_conv(c.get_int("max_frames"))))),
        rear_fc(register_module(
            "rear_fc",
            nn::Linear(
                nn::LinearOptions(2 * c.get_int("hidden"), c.get_int("rear_fc")).bias(false)))),
        classifier(
            register_module("classifier", nn::Linear(c.get_int("rear_fc"), c.get_int("classes")))) {
    const int64_t steps = steps_after_conv(c.get_int("max_frames"));
    rear_bn_gamma = register_parameter("rear_bn_gamma", torch::ones({c.get_int("rear_fc")}));
    rear_bn_beta = register_parameter("rear_bn_beta", torch::zeros({c.get_int("rear_fc")}));
    rear_bn_mean = register_buffer("rear_bn_mean", torch::zeros({steps * c.get_int("rear_fc")}));
    rear_bn_var = register_buffer("rear_bn_var", torch::ones({steps * c.get_int("rear_fc")}));
  }

  static int64_t conv_features(const Config& c) {
    return c.get_int("channels") *
           conv_out(conv_out(c.get_int("bins"), kKernelF1, kStrideF1), kKernelF2, kStrideF2);
  }

  // spectrogram [B, T, bins] -> logits [B, T', classes]
  torch::Tensor forward(const torch::Tensor& spectrogram) {
    auto x = spectrogram.unsqueeze(1);  // [B, 1, T, bins]
    x = run_layer("conv1_bn", conv1_bn,
                  torch::relu(run_layer("conv1", conv1, x)));  // [B, 32, T1, 61]
    x = run_layer("conv2_bn", conv2_bn,
                  torch::relu(run_layer("conv2", conv2, x)));   // [B, 32, T', 21]
    x = x.permute({0, 2, 1, 3}).flatten(2);                     // [B, T', 672]
    auto fwd = gru_forward->forward("gru_forward", x, false);   // [B, T', H]
    auto bwd = gru_backward->forward("gru_backward", x, true);  // [B, T', H]
    auto h = torch::cat({fwd, bwd}, 2);                         // [B, T', 2H]
    h = run_layer("rear_fc", rear_fc, h);                       // [B, T', rear]
    {
      LayerScope scope("rear_bn");
      h = stepwise_batch_norm(h, rear_bn_mean, rear_bn_var, {}, {}, is_training());
      h = scope.output(torch::relu(h * rear_bn_gamma + rear_bn_beta));
    }
    return run_layer("classifier", classifier, h);  // [B, T', classes]
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d conv1_bn;
  nn::Conv2d conv2;
  nn::BatchNorm2d conv2_bn;
  GruStack gru_forward, gru_backward;
  nn::Linear rear_fc, classifier;
  torch::Tensor rear_bn_gamma, rear_bn_beta, rear_bn_mean, rear_bn_var;
};
TORCH_MODULE(DeepSpeech2);

class DeepSpeech2Model : public Model {
 public:
  DeepSpeech2Model(const Config& c, const torch::Device& device)
      : net_(c),
        device_(device),
        batch_(c.get_int("batch")),
        bins_(c.get_int("bins")),
        classes_(c.get_int("classes")),
        max_frames_(c.get_int("max_frames")),
        frames_(c.get_int("frames")),
        clip_(c.get_double("clip_gradient")) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::SGD>(
        net_->parameters(),
        torch::optim::SGDOptions(c.get_double("lr")).momentum(c.get_double("momentum")));
  }

  nn::Module& module() override { return *net_; }

  // tensors: spectrogram [B, T, bins] float (normalised log spectrogram, zero padding), output
  // lengths [B] int64 (steps after the convolutions), targets [B, L] int64 (1..classes-1),
  // target lengths [B] int64. T is the batch's bucket. units: seconds of real audio.
  Batch make_batch() override {
    auto cpu_long = torch::TensorOptions().dtype(torch::kLong);
    int64_t bucket = frames_;
    if (bucket == 0) {
      // LibriSpeech train-clean-100: mean 12.7 s per utterance, most 11..16 s; deepspeech.cfg
      // drops utterances over 16 s. The iterator fills a batch from one bucket.
      const double seconds = std::clamp(12.7 + 3.0 * torch::randn({1}).item<double>(), 1.0, 16.0);
      const auto frames = static_cast<int64_t>(std::ceil(seconds * 100.0));
      bucket = std::clamp((frames + kBucketStep - 1) / kBucketStep * kBucketStep, 2 * kBucketStep,
                          max_frames_);
    }
    const int64_t shortest = std::max<int64_t>(bucket - std::min(kBucketStep, bucket / 4), 31);
    auto frames = torch::randint(shortest, bucket + 1, {batch_}, cpu_long);  // [B]
    auto steps = frames.sub(kKernelT1).div(kStrideT1, "floor").add(1).sub(kKernelT2 - 1);
    // ~14.5 characters per second of read speech (2.7 words/s); CTC needs room for repeats.
    auto chars = (frames.to(torch::kFloat) * 0.145).round().to(torch::kLong);
    auto target_len = torch::minimum(chars, steps.div(2, "floor")).clamp_min(1);  // [B]
    const int64_t label_cols = target_len.max().item<int64_t>();
    auto valid = torch::arange(bucket, cpu_long).unsqueeze(0).lt(frames.unsqueeze(1));  // [B, T]
    auto x = torch::randn({batch_, bucket, bins_}) * valid.unsqueeze(2);
    auto label_ok = torch::arange(label_cols, cpu_long).unsqueeze(0).lt(target_len.unsqueeze(1));
    auto targets = torch::randint(1, classes_, {batch_, label_cols}, cpu_long) * label_ok;
    const double audio_s = frames.sum().item<double>() * 0.01;
    return {{x.to(device_), steps.to(device_), targets.to(device_), target_len.to(device_)},
            audio_s};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto logits = net_->forward(b.tensors[0]);  // [B, T', classes]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto log_probs = torch::log_softmax(logits, 2).transpose(0, 1);  // [T', B, classes]
      // WarpCTC sums over the batch; MXNet's Module rescales gradients by 1/batch.
      loss = scope.output(
          F::ctc_loss(log_probs, b.tensors[2], b.tensors[1], b.tensors[3],
                      F::CTCLossFuncOptions().blank(0).reduction(torch::kSum).zero_infinity(true)) /
          static_cast<double>(batch_));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      torch::nn::utils::clip_grad_value_(net_->parameters(), clip_);  // MXNet clip_gradient
      optimizer_->step();
    }
    return loss.item<double>();
  }

  // Forward pass and greedy CTC decoding (best class per step).
  double infer_step(const Batch& b) override {
    auto logits = net_->forward(b.tensors[0]);
    LayerScope scope("decode");
    return std::get<0>(logits.max(2)).sum().item<double>();
  }

  // Per-frame character logits, before decoding.
  torch::Tensor infer_output(const Batch& b) override { return net_->forward(b.tensors[0]); }

 private:
  DeepSpeech2 net_;
  torch::Device device_;
  int64_t batch_, bins_, classes_, max_frames_, frames_;
  double clip_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_deepspeech2() {
  Workload w;
  w.info.name = "deepspeech2";
  w.info.suites = {"tbd"};
  w.info.domain = "speech recognition";
  w.info.description =
      "Deep Speech 2, MXNet 5-RNN variant (TBD): 2 conv (11x41/2x2, 11x21/1x2, 32 ch, ReLU + BN), "
      "5-layer bidirectional GRU 1760 with per-step BN on gate inputs, FC 1760 + BN, 29 "
      "characters, CTC; 161-bin spectrogram, 100-frame buckets up to 16 s";
  w.info.source =
      "Amodei et al., ICML 2016 (architecture); TBD (Zhu et al., IISWC 2018) Table II: MXNet "
      "example/speech_recognition deepspeech.cfg (5 bi-GRU x 1760, SGD 3e-4 momentum 0.9, "
      "clip 100, batch 12, LibriSpeech)";
  w.info.throughput_unit = "audio-seconds/s";
  w.info.small_batch = 2;
  w.info.tiny_config = {"batch=2",      "channels=2", "hidden=8",      "rear_fc=8",
                        "rnn_layers=2", "classes=6",  "max_frames=48", "frames=48"};
  // A 12.7 s utterance is ~0.65 TFLOP per train step and even the smallest bucket (2 s) takes
  // ~30 s on one core (batch 2 streams every GRU matrix once per step): the main job uses
  // 0.48 s buckets (9 GRU steps per direction).
  w.info.suite_settings = {"frames=48"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 12, "mini-batch size (deepspeech.cfg: 12; training batch norm needs 2)");
    c.add_int("bins", 161, "spectrogram bins: 20 ms window at 16 kHz, 10 ms hop (161)", 81);
    c.add_int("channels", 32, "filters of both conv layers (deepspeech.cfg: 32)");
    c.add_int("rnn_layers", 5, "GRU layers per direction (deepspeech.cfg / TBD: 5)");
    c.add_int("hidden", 1760, "GRU units per direction (deepspeech.cfg: 1760)");
    c.add_int("rear_fc", 1760, "units of the FC layer after the GRUs (deepspeech.cfg: 1760)");
    c.add_int("classes", 29,
              "output classes incl. CTC blank: blank, space, apostrophe, a-z (the cfg's "
              "bi-grapheme option adds corpus-dependent pairs)",
              2);
    c.add_int("max_frames", 1600,
              "largest bucket in frames (deepspeech.cfg: 1600 = 16 s); sets the per-step BN "
              "parameters",
              31);
    c.add_int("frames", 0,
              "bucket of every batch in frames; 0 draws LibriSpeech-like lengths, bucketed by 100",
              0);
    c.add_double("lr", 3e-4, "SGD learning rate (deepspeech.cfg: 0.0003)");
    c.add_double("momentum", 0.9, "SGD momentum (deepspeech.cfg: 0.9)");
    c.add_double("clip_gradient", 100.0, "elementwise gradient clip (deepspeech.cfg: 100)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    const int64_t frames = c.get_int("frames");
    if (frames != 0 && (frames < 31 || frames > c.get_int("max_frames")))
      throw UsageError(
          "deepspeech2: frames must be 0 (LibriSpeech-like buckets) or in [31, "
          "max_frames] (two convolutions need 31 frames)");
    return std::make_unique<DeepSpeech2Model>(c, device);
  };
  return w;
}

}  // namespace plumb::workloads
