// speech: Deep Speech (Hannun et al., arXiv 2014) as Fathom's speech workload configures it for
// TIMIT (Fathom's TensorFlow code, speech.py / preproc.py):
//   - input: 26 coefficients per frame (12 MFCCs + energy, and their 13 deltas), a frame every
//     5 ms, utterances padded to 1,566 frames (TIMIT's longest, 7.8 s);
//   - three fully-connected layers of 1,024 units with the clipped ReLU min(max(x, 0), 20);
//   - one bidirectional simple recurrent layer of 1,024 units per direction, clipped-ReLU cells
//     h_t = g(W x_t + U h_{t-1} + b) (one bias per direction, as TF's _linear);
//   - an output layer to 61 TIMIT phones + the CTC blank (last index, as TF's ctc_loss);
//   - CTC loss summed over the batch (TF minimizes the per-utterance loss vector), plain SGD 0.01,
//     batch 32.
// Fathom's code never connects its recurrent layer (it keeps only the last time step, whose
// width does not fit the next layer); plumb connects it as the paper does: forward and backward
// outputs summed, h = h_f + h_b, per frame. The output layer's logits are linear (Fathom's code
// reuses its clipped-ReLU hidden-layer helper there; CTC applies the softmax). `context` > 0
// stacks C frames on each side of every frame as the paper's input (Fathom: none).
// Trainable parameters: 6,386,750 (derivation in docs/workloads.md).
#include "plumb/workloads/fathom/speech.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/model_builder.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr double kClip = 20.0;  // Deep Speech's clipped ReLU ceiling

// min(max(x, 0), 20). clamp rather than hardtanh: the same function, and LibTorch 1.13 has a
// bf16 CPU kernel for clamp's backward but not for hardtanh's.
torch::Tensor clipped_relu(const torch::Tensor& x) {
  return torch::clamp(x, 0.0, kClip);
}

// One direction of the simple recurrent layer: the input product W x_t + b for all frames is
// one matrix product; only U h_{t-1} is sequential.
struct RecurrentImpl : nn::Module {
  RecurrentImpl(int64_t input, int64_t hidden)
      : input_proj(register_module("input_proj", nn::Linear(input, hidden))),
        recurrent(register_module("recurrent",
                                  nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)))) {}
  nn::Linear input_proj, recurrent;
};
TORCH_MODULE(Recurrent);

struct SpeechImpl : nn::Module {
  explicit SpeechImpl(const Config& c)
      : context(c.get_int("context")),
        fc1(register_module(
            "fc1", nn::Linear(c.get_int("features") * (2 * context + 1), c.get_int("hidden")))),
        fc2(register_module("fc2", nn::Linear(c.get_int("hidden"), c.get_int("hidden")))),
        fc3(register_module("fc3", nn::Linear(c.get_int("hidden"), c.get_int("hidden")))),
        rnn_forward(
            register_module("rnn_forward", Recurrent(c.get_int("hidden"), c.get_int("hidden")))),
        rnn_backward(
            register_module("rnn_backward", Recurrent(c.get_int("hidden"), c.get_int("hidden")))),
        output(register_module("output", nn::Linear(c.get_int("hidden"), c.get_int("labels")))) {}

  // Runs one direction over x [T, B, H]; valid [T, B, 1] (1 for real frames) makes the backward
  // direction start from a zero state at each utterance's own last frame.
  torch::Tensor run_direction(const std::string& name, Recurrent& cell, const torch::Tensor& x,
                              const torch::Tensor& valid, bool backward) {
    auto projected = run_layer(name + ".input_proj", cell->input_proj, x);  // [T, B, H]
    LayerScope scope(name + ".recurrent");
    const int64_t steps = x.size(0);
    auto h = torch::zeros({x.size(1), x.size(2)}, x.options());  // [B, H]
    std::vector<torch::Tensor> outputs(steps);
    for (int64_t i = 0; i < steps; ++i) {
      const int64_t t = backward ? steps - 1 - i : i;
      h = clipped_relu(torch::addmm(projected[t], h, cell->recurrent->weight.t()));  // [B, H]
      if (backward) h = h * valid[t];  // padding frames keep the state at zero
      outputs[t] = h;
    }
    return scope.output(torch::stack(outputs, 0));  // [T, B, H]
  }

  // features [T, B, F], valid [T, B, 1] -> logits [T, B, labels]
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& valid) {
    if (context > 0) {
      LayerScope scope("context");  // [T, B, F] -> [T, B, F (2C + 1)] with zero edges
      auto padded = F::pad(x, F::PadFuncOptions({0, 0, 0, 0, context, context}));
      x = scope.output(padded.unfold(0, 2 * context + 1, 1).flatten(2));
    }
    x = clipped_relu(run_layer("fc1", fc1, x));  // [T, B, H]
    x = clipped_relu(run_layer("fc2", fc2, x));  // [T, B, H]
    x = clipped_relu(run_layer("fc3", fc3, x));  // [T, B, H]
    auto forward_out = run_direction("rnn_forward", rnn_forward, x, valid, false);
    auto backward_out = run_direction("rnn_backward", rnn_backward, x, valid, true);
    torch::Tensor summed;
    {
      LayerScope scope("rnn_sum");                        // Deep Speech: h(4) = h(f) + h(b)
      summed = scope.output(forward_out + backward_out);  // [T, B, H]
    }
    return run_layer("output", output, summed);  // [T, B, labels]
  }

  int64_t context;
  nn::Linear fc1, fc2, fc3;
  Recurrent rnn_forward, rnn_backward;
  nn::Linear output;
};
TORCH_MODULE(Speech);

class SpeechModel : public Model {
 public:
  SpeechModel(const Config& c, const torch::Device& device)
      : net_(c),
        device_(device),
        batch_(c.get_int("batch")),
        features_(c.get_int("features")),
        labels_(c.get_int("labels")),
        max_frames_(c.get_int("max_frames")),
        max_labels_(c.get_int("max_labels")),
        frame_s_(c.get_double("frame_ms") / 1000.0),
        pad_fixed_(c.get_string("padding") == "fixed"),
        mean_s_(c.get_double("mean_utterance_s")) {
    net_->to(device);
    optimizer_ = std::make_unique<torch::optim::SGD>(net_->parameters(),
                                                     torch::optim::SGDOptions(c.get_double("lr")));
  }

  nn::Module& module() override { return *net_; }

  // tensors: features [T, B, F] float (per-utterance standardised MFCCs + deltas, zero padding),
  // valid [T, B, 1] float, frames [B] int64, targets [B, L] int64 (phones 0..labels-2, padded),
  // target lengths [B] int64. units: seconds of real (unpadded) audio.
  Batch make_batch() override {
    auto cpu_long = torch::TensorOptions().dtype(torch::kLong);
    // TIMIT utterances: mean 3.1 s, sd ~0.9 s, 0.9 .. 7.8 s; ~12.4 phone labels per second
    // (61-phone transcriptions incl. the h# silences; longest 75).
    auto seconds = (torch::randn({batch_}) * (mean_s_ * 0.28) + mean_s_)
                       .clamp(0.3 * mean_s_, max_frames_ * frame_s_);                   // [B]
    auto frames = (seconds / frame_s_).round().clamp(1, max_frames_).to(torch::kLong);  // [B]
    auto phones = (seconds * 12.4 + torch::randn({batch_}) * 2.0).round();
    auto target_len =
        torch::minimum(phones.clamp(1, max_labels_).to(torch::kLong),
                       frames.div(2, "floor").clamp_min(1));  // CTC needs >= 1 frame each
    const int64_t steps = pad_fixed_ ? max_frames_ : frames.max().item<int64_t>();
    const int64_t label_cols = pad_fixed_ ? max_labels_ : target_len.max().item<int64_t>();
    auto valid = torch::arange(steps, cpu_long).unsqueeze(1).lt(frames.unsqueeze(0));  // [T, B]
    auto x = torch::randn({steps, batch_, features_}) * valid.unsqueeze(2);
    auto label_ok = torch::arange(label_cols, cpu_long).unsqueeze(0).lt(target_len.unsqueeze(1));
    auto targets = torch::randint(0, labels_ - 1, {batch_, label_cols}, cpu_long) * label_ok;
    const double audio_s = (frames.to(torch::kDouble) * frame_s_).sum().item<double>();
    return {{x.to(device_), valid.unsqueeze(2).to(torch::kFloat).to(device_), frames.to(device_),
             targets.to(device_), target_len.to(device_)},
            audio_s};
  }

  double train_step(const Batch& b) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto logits = net_->forward(b.tensors[0], b.tensors[1]);  // [T, B, labels]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto log_probs = torch::log_softmax(logits, 2);
      loss = scope.output(F::ctc_loss(
          log_probs, b.tensors[3], b.tensors[2], b.tensors[4],
          F::CTCLossFuncOptions().blank(labels_ - 1).reduction(torch::kSum).zero_infinity(true)));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }

  // Forward pass and greedy CTC decoding (best label per frame), as Fathom's decode op.
  double infer_step(const Batch& b) override {
    auto logits = net_->forward(b.tensors[0], b.tensors[1]);  // [T, B, labels]
    LayerScope scope("decode");
    return std::get<0>(logits.max(2)).sum().item<double>();
  }

  // Per-frame label logits [T, B, labels], before decoding.
  torch::Tensor infer_output(const Batch& b) override {
    return net_->forward(b.tensors[0], b.tensors[1]);
  }

 private:
  Speech net_;
  torch::Device device_;
  int64_t batch_, features_, labels_, max_frames_, max_labels_;
  double frame_s_;
  bool pad_fixed_;
  double mean_s_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_speech() {
  Workload w;
  w.info.name = "speech";
  w.info.suites = {"fathom"};
  w.info.domain = "speech recognition";
  w.info.description =
      "Deep Speech (TIMIT size): 3 clipped-ReLU FC layers of 1024, one bidirectional clipped-ReLU "
      "RNN (1024, directions summed), output to 61 phones + blank, CTC; 26 MFCC features per 5 ms "
      "frame, padded to 1566 frames";
  w.info.source =
      "Hannun et al., arXiv 1412.5567, 2014 (architecture); Fathom's speech (TIMIT: 26 "
      "coefficients, 1024 units, 62 labels, 1566 frames, batch 32, SGD 0.01)";
  w.info.throughput_unit = "audio-seconds/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2",       "features=6",   "hidden=16",           "labels=8",
                        "max_frames=24", "max_labels=6", "mean_utterance_s=0.1"};
  // One utterance padded to 1566 frames is ~60 GFLOP per train step with 3,132 sequential
  // recurrent steps; the main job pads to 1 s (200 frames) with 0.8 s utterances.
  w.info.suite_settings = {"max_frames=200", "mean_utterance_s=0.8"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 32, "mini-batch size (Fathom: 32)");
    c.add_int("features", 26,
              "coefficients per frame (Fathom: 12 MFCCs + energy + 13 deltas = 26)");
    c.add_int("context", 0,
              "frames of context on each side fed to fc1 (Fathom: 0; the paper: 5, 7 or 9)", 0);
    c.add_int("hidden", 1024, "units of every hidden layer and RNN direction (Fathom: 1024)");
    c.add_int("labels", 62, "output classes: 61 TIMIT phones + CTC blank (Fathom: 62)", 2);
    c.add_int("max_frames", 1566, "frames of the longest utterance (Fathom: 1566, TIMIT 7.8 s)");
    c.add_int("max_labels", 75, "longest phone transcription (Fathom: 75)");
    c.add_double("frame_ms", 5.0, "frame hop in ms (Fathom's preproc: 5 ms hop)");
    c.add_choice("padding", "fixed", {"fixed", "batch"},
                 "pad every batch to max_frames (Fathom's static graph) or to its longest "
                 "utterance");
    c.add_double("mean_utterance_s", 3.1, "mean utterance length in s (TIMIT: 3.1 s)");
    c.add_double("lr", 0.01, "SGD learning rate (Fathom: 0.01)");
    return c;
  };
  w.build = build_model<SpeechModel>;
  return w;
}

}  // namespace plumb::workloads
