// MobileNet v1 (Howard et al. 2017), width multiplier 1.0, 224x224, one of ParaDnn's real
// models: a 3x3 stride-2 convolution to 32 channels, 13 depthwise-separable blocks (3x3
// depthwise conv + BN + ReLU, then 1x1 pointwise conv + BN + ReLU), global average pooling and
// a fully connected layer. Convolutions have no bias: the batch norm after each supplies it.
//
// Not in torchvision, so built from the paper's Table 1 (channels and strides), checked against
// TensorFlow-slim's mobilenet_v1.py (as copied into tensorflow/tpu, the repository ParaDnn took
// its real models from), whose layer table gives the same convolution parameters (3,185,088)
// and MACs (567,716,352). Table 1 prints stride 2 for the last depthwise layer, but its input
// and output are both 7x7: it is stride 1 here, as in slim. The activation is ReLU as the paper
// says (slim uses ReLU6, an elementwise clamp of the same size).
//
// Parameters, 4,231,976 in all: convolution weights 3,185,088 (stem 864, depthwise 3x3xC
// 44,640, pointwise CinxCout 3,139,584) + BN scale and shift 2 x 10,944 channels = 21,888 +
// FC 1024 x 1000 + 1000 = 1,025,000. Forward MACs at 224x224: 567,716,352 in the convolutions
// + 1,024,000 in the FC = 568,740,352 (the paper rounds to 569 M).
//
// Module names (the paper has none; chosen to read like torchvision models and to number
// blocks as slim does, "features.i" <-> slim's "MobilenetV1/Conv2d_i"):
//   features.0.conv, features.0.bn                                   stem
//   features.{1..13}.depthwise, .depthwise_bn, .pointwise, .pointwise_bn
//   classifier                                                       the FC layer
//
// Training follows the tensorflow/tpu MobileNet recipe ParaDnn ran (models/official/mobilenet:
// mobilenet.py, configs/mobilenet_config.py), as the paper only says "RMSprop ... similar to
// Inception V3": RMSProp with decay 0.9, momentum 0.9, epsilon 1.0, learning rate 0.165 per 256
// images scaled linearly with the batch (0.66 at its batch of 1024; decayed x0.94 every 3
// epochs, not modelled), L2 weight decay 4e-5 on the convolution and FC weights but not on the
// depthwise ones (slim's regularize_depthwise=False), truncated-normal(0.09) initialisation and
// batch norm with epsilon 1e-3 and decay 0.9997. Not reproduced: its label smoothing 0.1 and
// weight moving average (a softmax-sized and a parameter-sized elementwise pass per step) and
// slim's dropout with keep probability 0.999 before the classifier (absent from the paper).
#include "plumb/workloads/paradnn_real/mobilenet_v1.h"

#include <cmath>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

// Table 1 of the paper: (stride of the depthwise conv, output channels) of blocks 1..13.
struct BlockSpec {
  int64_t stride;
  int64_t out;
};
constexpr BlockSpec kBlocks[13] = {{1, 64},  {2, 128},  {1, 128}, {2, 256}, {1, 256},
                                   {2, 512}, {1, 512},  {1, 512}, {1, 512}, {1, 512},
                                   {1, 512}, {2, 1024}, {1, 1024}};
constexpr int64_t kStemChannels = 32;

// slim's batch norm: epsilon 1e-3, moving-average decay 0.9997 (PyTorch momentum = 1 - decay).
nn::BatchNorm2d batch_norm(int64_t channels) {
  return nn::BatchNorm2d(nn::BatchNorm2dOptions(channels).eps(1e-3).momentum(3e-4));
}

// 3x3 padding 1 gives slim's "SAME" output sizes (at stride 2 TF pads only bottom/right, a
// one-pixel shift that changes no shape or cost).
nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride, int64_t groups) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).groups(groups).bias(false));
}

// TF's truncated_normal_initializer: N(0, std) cut at +-2 std. LibTorch 1.13's C++ API has no
// trunc_normal_, so this is the inverse-CDF method of Python's torch.nn.init.trunc_normal_.
void truncated_normal_(torch::Tensor w, double std) {
  torch::NoGradGuard no_grad;
  const double lower_cdf = 0.5 * std::erfc(2.0 / std::sqrt(2.0));  // Phi(-2)
  w.uniform_(2 * lower_cdf - 1, 1 - 2 * lower_cdf);
  w.erfinv_().mul_(std * std::sqrt(2.0)).clamp_(-2 * std, 2 * std);
}

// Stem: 3x3 stride-2 conv + BN + ReLU, [B, 3, H, W] -> [B, 32, H/2, W/2].
struct StemImpl : nn::Module {
  explicit StemImpl(const std::string& path)
      : path_(path),
        conv(register_module("conv", conv3x3(3, kStemChannels, 2, 1))),
        bn(register_module("bn", batch_norm(kStemChannels))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer(path_ + ".bn", bn, run_layer(path_ + ".conv", conv, x));
    return out.relu_();  // in place, as torchvision's CNNs; attributed to this block
  }

  std::string path_;
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
};
TORCH_MODULE(Stem);

// Depthwise-separable block: [B, in, H, W] -> [B, out, H/stride, W/stride].
struct SeparableImpl : nn::Module {
  SeparableImpl(const std::string& path, int64_t in, int64_t out, int64_t stride)
      : path_(path),
        depthwise(register_module("depthwise", conv3x3(in, in, stride, /*groups=*/in))),
        depthwise_bn(register_module("depthwise_bn", batch_norm(in))),
        pointwise(
            register_module("pointwise", nn::Conv2d(nn::Conv2dOptions(in, out, 1).bias(false)))),
        pointwise_bn(register_module("pointwise_bn", batch_norm(out))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer(path_ + ".depthwise", depthwise, x);  // [B, in, H/s, W/s]
    out = run_layer(path_ + ".depthwise_bn", depthwise_bn, out);
    out.relu_();
    out = run_layer(path_ + ".pointwise", pointwise, out);  // [B, out, H/s, W/s]
    out = run_layer(path_ + ".pointwise_bn", pointwise_bn, out);
    return out.relu_();
  }

  std::string path_;
  nn::Conv2d depthwise;
  nn::BatchNorm2d depthwise_bn;
  nn::Conv2d pointwise;
  nn::BatchNorm2d pointwise_bn;
};
TORCH_MODULE(Separable);

struct MobileNetV1Impl : nn::Module {
  explicit MobileNetV1Impl(int64_t classes) : stem("features.0") {
    // The typed members are also pushed into the "features" Sequential, which names them
    // "features.0" .. "features.13"; forward calls them through the typed members.
    nn::Sequential features;
    features->push_back(stem);
    int64_t in = kStemChannels;
    for (const auto& spec : kBlocks) {
      const std::string path = "features." + std::to_string(features->size());
      blocks.push_back(Separable(path, in, spec.out, spec.stride));
      features->push_back(blocks.back());
      in = spec.out;
    }
    register_module("features", features);
    classifier = register_module("classifier", nn::Linear(in, classes));

    // slim/TPU: every convolution and the classifier (a 1x1 conv there) from a truncated
    // normal with std 0.09, zero classifier bias; BN scale 1, shift 0 (LibTorch's defaults).
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) truncated_normal_(c->weight, 0.09);
    }
    truncated_normal_(classifier->weight, 0.09);
    nn::init::zeros_(classifier->bias);
  }

  // x: [B, 3, 224, 224] -> logits [B, classes]; shapes below are for 224x224.
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer(stem->path_, stem, x);  // [B, 32, 112, 112]
    // blocks 1..13: [B, 64, 112, 112] [B, 128, 56, 56] x2 [B, 256, 28, 28] x2
    //               [B, 512, 14, 14] x6 [B, 1024, 7, 7] x2
    for (auto& block : blocks) out = run_layer(block->path_, block, out);
    {
      LayerScope scope("avgpool");
      out = scope.output(torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1));  // [B, 1024]
    }
    return run_layer("classifier", classifier, out);  // [B, classes]
  }

  Stem stem;
  std::vector<Separable> blocks;
  nn::Linear classifier{nullptr};
};
TORCH_MODULE(MobileNetV1);

// slim regularises the weights of the stem, pointwise and logits layers but not the depthwise
// weights ([C, 1, 3, 3]: one input channel per group), biases or BN parameters.
bool weight_decayed(const torch::Tensor& p) {
  return p.dim() >= 2 && p.size(1) > 1;
}

}  // namespace

Workload make_mobilenet_v1() {
  Workload w;
  w.info = {"mobilenet_v1",
            {"paradnn-real"},
            "image classification",
            "MobileNet v1, width 1.0 (3x3/32 stem, 13 depthwise-separable blocks with BN + ReLU, "
            "average pool, FC) on 224x224 ImageNet-shaped images",
            "Howard et al., MobileNets, arXiv:1704.04861, 2017; architecture from its Table 1, "
            "checked against TF-slim mobilenet_v1; training recipe (RMSProp decay 0.9, momentum "
            "0.9, eps 1.0, lr 0.165 x batch/256, wd 4e-5, batch 1024) and initialisation from "
            "tensorflow/tpu's MobileNet, the code ParaDnn ran",
            "images/s",
            4,
            {"batch=2", "image_size=64", "classes=10"}};
  w.default_config = [] {
    // 32 is the network's total stride: the last two blocks then run on a 1x1 map.
    Config c = image_classifier_config(
        1024, "mini-batch size (tensorflow/tpu MobileNet recipe: 1024)", 32);
    c.add_double("lr", 0.165,
                 "RMSProp learning rate per 256 images, scaled by batch/256 (tensorflow/tpu)");
    c.add_double("rms_decay", 0.9,
                 "RMSProp decay of the squared-gradient average (tensorflow/tpu)");
    c.add_double("momentum", 0.9, "RMSProp momentum (tensorflow/tpu)");
    c.add_double("eps", 1.0, "RMSProp epsilon (tensorflow/tpu, as Inception v3)");
    c.add_double("weight_decay", 4e-5, "L2 weight decay on non-depthwise weights (slim)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    MobileNetV1 net(c.get_int("classes"));
    auto make_batch = image_batches(c, device);
    const int64_t batch = c.get_int("batch");
    // TF's RMSProp keeps lr inside the momentum (mom = m mom + lr g / sqrt(ms + eps)); PyTorch
    // applies it outside and adds eps after the square root. At a fixed learning rate the
    // steps agree up to that epsilon placement (and TF starting ms at 1, PyTorch at 0); the
    // work per step is the same.
    auto optimizer_for = [c, batch](std::vector<torch::Tensor> params) {
      const auto options = torch::optim::RMSpropOptions(c.get_double("lr") * batch / 256.0)
                               .alpha(c.get_double("rms_decay"))
                               .momentum(c.get_double("momentum"))
                               .eps(c.get_double("eps"));
      std::vector<torch::Tensor> decayed, not_decayed;
      for (auto& p : params) (weight_decayed(p) ? decayed : not_decayed).push_back(p);
      auto decayed_options = options;
      decayed_options.weight_decay(c.get_double("weight_decay"));
      std::vector<torch::optim::OptimizerParamGroup> groups;
      groups.emplace_back(decayed, std::make_unique<torch::optim::RMSpropOptions>(decayed_options));
      groups.emplace_back(not_decayed, std::make_unique<torch::optim::RMSpropOptions>(options));
      return std::make_unique<torch::optim::RMSprop>(std::move(groups), options);
    };
    return make_classifier_model(net, device, make_batch, optimizer_for);
  };
  return w;
}

}  // namespace plumb::workloads
