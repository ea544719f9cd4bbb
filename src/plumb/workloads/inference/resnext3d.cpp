// ResNeXt3D-101, the video-understanding model of the Facebook data-centre inference study
// (Park et al. 2018, Table 1: 21 M parameters, 1 clip of 8-16 frames; Sec. 2.1.2: "ResNeXt-3D
// with depth-wise convolutions, which factorizes the 3D convolution into channel and
// spatiotemporal dimension"). The published form of that model is the interaction-reduced
// channel-separated network ir-CSN-101 (Tran, Wang, Torresani, Feiszli, Video Classification
// with Channel-Separated Convolutional Networks, ICCV 2019), and plumb builds it exactly as the
// authors' Caffe2 code does (facebookresearch/VMZ, c2/lib/models/r3d_model.py with model_name
// ir-csn, model_depth 101, and models/builder/video_model.py add_bottleneck, block type
// "3d-sep"; the repository's training data folder is even called "ResNext3D"):
//   - stem: 3x7x7 conv, 64 channels, stride 1x2x2, padding 1x3x3, BN, ReLU; no pool1 (VMZ's
//     default use_pool1=0 for 112x112 crops);
//   - bottleneck blocks 3-4-23-3 of ResNet-101 widths (64/256, 128/512, 256/1024, 512/2048):
//     1x1x1 conv, BN, ReLU; 3x3x3 DEPTHWISE conv (groups = channels), BN, ReLU; 1x1x1 conv, BN;
//     projection shortcut (1x1x1 conv + BN) where the width or the stride changes; add, ReLU;
//   - the first block of stages 2-4 strides 2x2x2 (time too) on its depthwise conv and on the
//     shortcut, so an 8x112x112 clip ends as a 2048 x 1 x 7 x 7 map;
//   - global average pool (VMZ: a T/8 x 7 x 7 average pool, the same thing for T = 8, 16) and an
//     FC layer 2048 -> 400 Kinetics classes.
// BN epsilon 1e-3 and moving-average momentum 0.9 (Caffe2's convention; PyTorch's 0.1).
// Convolution weights MSRAFill (normal, std sqrt(2 / fan_out)), FC XavierFill (uniform
// +-sqrt(3 / fan_in)) with zero bias: Caffe2's fills in that code.
// 22,213,776 trainable parameters and 11,993,410,048 forward MACs per 8x112x112 clip
// (derivation in docs/workloads.md; equal to torchvision 0.14's VideoResNet built with the same
// blocks, counted with forward hooks). 92.1% of the MACs are in 1x1x1 convolutions, 97.9% of
// those outside the 3x7x7 stem (the study quotes 97.1%).
// Training as VMZ's train_net.py: SGD with Nesterov momentum 0.9, learning rate 0.01 per
// replica batch (scaled with the number of replicas, base_lr x GPUs), weight decay 1e-4 (CSN),
// softmax cross-entropy; 8 clips per replica.
#include "plumb/workloads/inference/resnext3d.h"

#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"
#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

constexpr int64_t kReplicaBatch = 8;  // clips per GPU in the learning-rate rule

nn::Conv3d conv3d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
                  int64_t groups = 1) {
  return nn::Conv3d(nn::Conv3dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(padding)
                        .groups(groups)
                        .bias(false));
}

// Caffe2 SpatialBN(epsilon=1e-3, momentum=0.9): running = 0.9 running + 0.1 batch.
nn::BatchNorm3d batch_norm3d(int64_t channels) {
  return nn::BatchNorm3d(nn::BatchNorm3dOptions(channels).eps(1e-3).momentum(0.1));
}

// A conv -> BN (-> ReLU) unit, named as torchvision's Sequential children "0", "1", "2".
struct ConvUnit {
  nn::Conv3d conv{nullptr};
  nn::BatchNorm3d bn{nullptr};
  nn::ReLU relu{nullptr};  // null for the last conv of a block and the shortcut

  nn::Sequential sequential() const {
    nn::Sequential s;
    s->push_back("0", conv);
    s->push_back("1", bn);
    if (!relu.is_empty()) s->push_back("2", relu);
    return s;
  }
  torch::Tensor forward(const std::string& path, const torch::Tensor& x) {
    LayerScope scope(path);
    auto y = run_layer(path + ".0", conv, x);
    y = run_layer(path + ".1", bn, y);
    if (!relu.is_empty()) y = run_layer(path + ".2", relu, y);
    return scope.output(y);
  }
};

ConvUnit unit(nn::Conv3d conv, int64_t out, bool relu) {
  return {std::move(conv), batch_norm3d(out), relu ? inplace_relu() : nn::ReLU(nullptr)};
}

// ir-CSN bottleneck: [B, in, T, H, W] -> [B, 4 w, T/s, H/s, W/s].
struct BottleneckImpl : nn::Module {
  BottleneckImpl(std::string path, int64_t in, int64_t width, int64_t stride)
      : path_(std::move(path)),
        conv1(unit(conv3d(in, width, 1, 1, 0), width, true)),
        conv2(unit(conv3d(width, width, 3, stride, 1, /*groups=*/width), width, true)),
        conv3(unit(conv3d(width, 4 * width, 1, 1, 0), 4 * width, false)),
        relu(inplace_relu()) {
    register_module("conv1", conv1.sequential());
    register_module("conv2", conv2.sequential());
    register_module("conv3", conv3.sequential());
    register_module("relu", relu);
    if (in != 4 * width || stride != 1) {
      downsample = unit(conv3d(in, 4 * width, 1, stride, 0), 4 * width, false);
      register_module("downsample", downsample.sequential());
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    auto y = conv1.forward(path_ + ".conv1", x);  // [B, w, T, H, W]
    y = conv2.forward(path_ + ".conv2", y);       // [B, w, T/s, H/s, W/s] depthwise 3x3x3
    y = conv3.forward(path_ + ".conv3", y);       // [B, 4w, T/s, H/s, W/s]
    auto shortcut = downsample.conv.is_empty() ? x : downsample.forward(path_ + ".downsample", x);
    {
      LayerScope scope(path_ + ".add");
      y = scope.output(y.add_(shortcut));
    }
    return run_layer(path_ + ".relu", relu, y);
  }

  std::string path_;
  ConvUnit conv1, conv2, conv3, downsample;
  nn::ReLU relu;
};
TORCH_MODULE(Bottleneck);

struct ResNeXt3DImpl : nn::Module {
  ResNeXt3DImpl(const std::vector<int64_t>& blocks, int64_t classes)
      : stem(unit(nn::Conv3d(nn::Conv3dOptions(3, 64, {3, 7, 7})
                                 .stride({1, 2, 2})
                                 .padding({1, 3, 3})
                                 .bias(false)),
                  64, true)) {
    register_module("stem", stem.sequential());
    int64_t in = 64;
    for (size_t s = 0; s < blocks.size(); ++s) {
      const std::string name = "layer" + std::to_string(s + 1);
      const int64_t width = 64 << s;
      nn::Sequential layer;
      for (int64_t b = 0; b < blocks[s]; ++b) {
        const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
        Bottleneck block(name + "." + std::to_string(b), in, width, stride);
        layer->push_back(std::to_string(b), block);
        blocks_.push_back(block);
        in = 4 * width;
      }
      register_module(name, layer);
    }
    avgpool = register_module("avgpool", nn::AdaptiveAvgPool3d(1));
    fc = register_module("fc", nn::Linear(in, classes));

    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv3d>()) {
        // Caffe2 MSRAFill: std sqrt(2 / fan_out), fan_out = out channels x kernel volume.
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      } else if (auto* l = m->as<nn::Linear>()) {
        // Caffe2 XavierFill: uniform(+-sqrt(3 / fan_in)); ConstantFill 0 for the bias.
        const double bound = std::sqrt(3.0 / static_cast<double>(l->weight.size(1)));
        l->weight.uniform_(-bound, bound);
        l->bias.zero_();
      }
    }
  }

  // x: [B, 3, T, S, S] -> logits [B, classes]; shapes for 8x112x112.
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = stem.forward("stem", x);  // [B, 64, 8, 56, 56]
    // layer1 [B, 256, 8, 56, 56], layer2 [B, 512, 4, 28, 28], layer3 [B, 1024, 2, 14, 14],
    // layer4 [B, 2048, 1, 7, 7]
    for (auto& block : blocks_) y = run_layer(block->path_, block, y);
    y = run_layer("avgpool", avgpool, y);  // [B, 2048, 1, 1, 1]
    {
      LayerScope scope("flatten");
      y = scope.output(y.flatten(1));  // [B, 2048]
    }
    return run_layer("fc", fc, y);  // [B, classes]
  }

  ConvUnit stem;
  std::vector<Bottleneck> blocks_;
  nn::AdaptiveAvgPool3d avgpool{nullptr};
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNeXt3D);

}  // namespace

Workload make_resnext3d() {
  Workload w;
  w.info.name = "resnext3d";
  w.info.suites = {"inference"};
  w.info.domain = "video classification";
  w.info.description =
      "ResNeXt3D-101 as ir-CSN-101: ResNet-101 bottlenecks (3-4-23-3) whose 3x3x3 conv is "
      "depthwise, 3x7x7 stem without pool1, on 8x112x112 Kinetics-shaped clips, 400 classes";
  w.info.source =
      "Park et al., Deep Learning Inference in Facebook Data Centers, 2018 (Table 1: "
      "ResNeXt3D-101, 21 M parameters, clips of 8-16 frames); architecture from Tran et al., "
      "Video Classification with Channel-Separated Convolutional Networks, ICCV 2019 "
      "(ir-CSN-101, 8x112x112 clips) as the authors' VMZ Caffe2 code builds it; recipe from VMZ "
      "train_net.py (SGD Nesterov 0.9, lr 0.01 per 8-clip replica) and CSN (wd 1e-4)";
  w.info.throughput_unit = "clips/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=2", "image_size=32", "classes=10"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", kReplicaBatch, "clips per mini-batch (VMZ / CSN: 8 clips per GPU)");
    c.add_int("frames", 8, "frames per clip T (CSN: 8; the study: 8-16)");
    c.add_int("image_size", 112, "crop height and width (CSN / VMZ: 112x112)", 8);
    c.add_int("classes", 400, "output classes (Kinetics-400)", 2);
    c.add_double("lr", 0.01,
                 "SGD learning rate per 8-clip replica batch, scaled by batch/8 (VMZ: base_lr x "
                 "GPUs)");
    c.add_double("momentum", 0.9, "Nesterov momentum (VMZ MomentumSGDUpdate, nesterov=1)");
    c.add_double("weight_decay", 1e-4, "L2 weight decay (CSN)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    ResNeXt3D net(std::vector<int64_t>{3, 4, 23, 3}, c.get_int("classes"));
    const int64_t batch = c.get_int("batch"), frames = c.get_int("frames");
    const int64_t size = c.get_int("image_size"), classes = c.get_int("classes");
    auto make_batch = [=]() {
      Batch b;
      // Mean/std-normalised RGB frames: [B, 3, T, S, S], N(0, 1) per channel.
      auto clips = normalized_images(batch, 3 * frames, size, size, device)
                       .view({batch, 3, frames, size, size});
      b.tensors = {clips, class_labels(batch, classes, device)};  // labels [B]
      b.units = static_cast<double>(batch);
      return b;
    };
    auto optimizer_for =
        sgd_from_config(c, /*nesterov=*/true, static_cast<double>(batch) / kReplicaBatch);
    return make_classifier_model(net, device, make_batch, optimizer_for);
  };
  return w;
}

}  // namespace plumb::workloads
