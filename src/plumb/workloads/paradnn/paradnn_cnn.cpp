// paradnn_cnn: ParaDnn's parameterised convolutional model (Wang, Wei & Brooks, MLSys 2020,
// Sec. 2.1 and Table 2b): a ResNet v1 of four groups of residual or bottleneck blocks with
// the filter count doubling per group from a minimum, as its public code builds it
// (github.com/Emma926/paradnn: cnn.py and resnet_model.py, a modified copy of tensorflow/tpu's
// models/official/resnet/resnet_model.py):
//
//   image [B, 3, S, S]
//   -> conv1 7x7/2, f filters -> bn1 -> ReLU -> maxpool 3x3/2        [B, f, S/4, S/4]
//   -> layer1..layer4: `blocks` blocks each, widths f, 2f, 4f, 8f, stride 2 in the first block
//      of layers 2-4; output channels e x width (e = 4 bottleneck, 1 residual)
//   -> avgpool 7x7, stride 1, no padding (resnet_model.py's final_avg_pool)   [B, 8ef, P, P]
//   -> flatten -> fc (classes)
//
//   residual block:   3x3 conv (stride) - BN - ReLU - 3x3 conv - BN        (2 conv + 2 BN)
//   bottleneck block: 1x1 conv - BN - ReLU - 3x3 conv (stride) - BN - ReLU - 1x1 conv (4w) - BN
//                     (3 conv + 3 BN; the stride on the 3x3, as tensorflow/tpu's v1.5)
//   then + shortcut, ReLU. The FIRST block of EVERY group has a projection shortcut (1x1 conv
//   with the block's stride + BN), even in layer1 where the shapes already agree: resnet_model.py
//   passes use_projection=True to each group's block 0.
//
// Not plumb's common ResNet (resnet.h): its stem and widths are fixed at 64..512 and it
// projects only where shapes change. The stem here is resnet_model.py's: a 7x7 stride-2 conv
// with the MINIMUM filter count f (not 64), BN, ReLU and a 3x3 stride-2 max pool.
// Convolutions have no bias; BN decay 0.9 (PyTorch momentum 0.1), epsilon 1e-5; the last BN
// of each block starts with scale 0 (init_zero); conv weights tf.variance_scaling_initializer
// (truncated normal, std sqrt(1/fan_in)); fc weights N(0, 0.01), bias 0. Padding: TF's
// "fixed padding" for strided convs and SAME otherwise are both symmetric here (k/2 per side);
// TF's SAME max pool on an even map pads (0, 1) where PyTorch pads (1, 1): same output size
// and work, windows shifted by one pixel.
//
// The average pool keeps the public code's 7x7 window: at S = 224 the last map is 7x7 and it is
// a global pool; at the other sizes Table 2b sweeps (200..300) the map is ceil(S/32) wide, the
// pool leaves P = ceil(S/32) - 6 (1 at 200, 2 at 250, 4 at 300) and the fc sees 8ef x P^2
// features, as it did when the paper ran them. image_size therefore starts at 193 (P >= 1).
//
// Parameters (closed form; f = filters, n = blocks per group, e = 4 bottleneck / 1 residual,
// w_g = f 2^g and c_g = e w_g for groups g = 0..3, c_{-1} = f, K = classes):
//   stem conv + BN:          3 x 49 f + 2 f
//   residual block 0:        9 c_{g-1} w_g + 9 w_g^2 + c_{g-1} w_g + 3 x 2 w_g
//                            (conv1, conv2, projection; 3 BN of 2 w_g each)
//   residual blocks 1..n-1:  (n - 1)(18 w_g^2 + 4 w_g)
//   bottleneck block 0:      c_{g-1} w_g + 9 w_g^2 + 4 w_g^2 + 4 c_{g-1} w_g
//                            + 2 (w_g + w_g + 4 w_g + 4 w_g)   (conv1..3, projection; 4 BN)
//   bottleneck blocks 1..:   (n - 1)(17 w_g^2 + 12 w_g)
//   fc:                      8 e f P^2 K + K
// (BN running statistics are buffers, not trainable, as TF's moving averages.)
//
// Default: block bottleneck (the paper's default), blocks 4 per group (Table 2b: 1..8, +1),
// filters 32 (16..64, x2: the middle), image 250 (200..300, +50: the middle), classes 1000
// (500..1500, +500: the middle), batch 256 (64..1024, x2: the geometric middle).
#include "plumb/workloads/paradnn/paradnn_cnn.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/layers.h"
#include "plumb/workloads/common/resnet.h"
#include "plumb/workloads/paradnn/paradnn_common.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

constexpr int64_t kPoolWindow = 7;  // resnet_model.py's final_avg_pool
constexpr int64_t kGroups = 4;

struct ParaCnnImpl : nn::Module {
  ParaCnnImpl(bool bottleneck, int64_t blocks, int64_t filters, int64_t classes,
              int64_t pooled_size)
      : conv1(register_module("conv1", conv2d(3, filters, 7, 2, same_padding(7), /*bias=*/false))),
        bn1(register_module("bn1", nn::BatchNorm2d(filters))),
        maxpool(register_module("maxpool",
                                nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)))) {
    ResNetSpec spec;
    spec.bottleneck = bottleneck;
    int64_t in = filters;
    for (int64_t g = 0; g < kGroups; ++g) {
      const std::string name = "layer" + std::to_string(g + 1);
      nn::Sequential seq;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t stride = (g > 0 && b == 0) ? 2 : 1;
        // resnet_model.py projects the shortcut of every group's first block, even where the
        // shapes already match (group 1 of residual blocks).
        ResidualBlock block(name + "." + std::to_string(b), spec, in, filters << g, stride,
                            /*force_projection=*/b == 0);
        block->zero_init_last_norm();  // resnet_model.py: the last BN of a block starts at 0
        in = block->out_channels;
        seq->push_back(block);
      }
      groups.push_back(register_module(name, seq));
    }
    fc = register_module("fc", nn::Linear(in * pooled_size * pooled_size, classes));
    torch::NoGradGuard no_grad;
    // tf.variance_scaling_initializer on every convolution (stem and blocks).
    for (auto& m : modules(/*include_self=*/false))
      if (auto* c = m->as<nn::Conv2d>())
        variance_scaling_(c->weight, c->weight.size(1) * c->weight.size(2) * c->weight.size(3));
    fc->weight.normal_(0, 0.01);
    fc->bias.zero_();
  }

  // x: [B, 3, S, S] -> logits [B, classes]
  torch::Tensor forward(const torch::Tensor& x) {
    auto out = run_layer("bn1", bn1, run_layer("conv1", conv1, x));  // [B, f, S/2, S/2]
    out.relu_();
    out = run_layer("maxpool", maxpool, out);  // [B, f, S/4, S/4]
    // [B, e f, S/4] -> [B, 2e f, S/8] -> [B, 4e f, S/16] -> [B, 8e f, S/32] (sizes rounded up)
    for (size_t g = 0; g < groups.size(); ++g)
      out = run_layer("layer" + std::to_string(g + 1), groups[g], out);
    {
      LayerScope scope("avgpool");
      out = scope.output(torch::avg_pool2d(out, kPoolWindow, 1).flatten(1));  // [B, 8ef P^2]
    }
    return run_layer("fc", fc, out);  // [B, classes]
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::MaxPool2d maxpool;
  std::vector<nn::Sequential> groups;
  nn::Linear fc{nullptr};
};
TORCH_MODULE(ParaCnn);

// Side of the last feature map: the stem conv, the max pool and the three strided groups each
// halve it, rounding up (k/2 padding), so ceil(S / 32); the 7x7 pool then leaves P = that - 6.
int64_t pooled_size(int64_t image_size) {
  int64_t s = image_size;
  for (int i = 0; i < 5; ++i) s = (s + 1) / 2;
  return s - kPoolWindow + 1;
}

}  // namespace

int64_t paradnn_cnn_parameters(const Config& c) {
  const bool bottleneck = c.get_string("block") == "bottleneck";
  const int64_t n = c.get_int("blocks"), f = c.get_int("filters"), K = c.get_int("classes");
  const int64_t e = bottleneck ? 4 : 1;
  int64_t total = 3 * 49 * f + 2 * f;  // stem conv + bn
  int64_t in = f;
  for (int64_t g = 0; g < kGroups; ++g) {
    const int64_t w = f << g;
    if (bottleneck) {
      total += in * w + 9 * w * w + 4 * w * w + in * 4 * w + 2 * (w + w + 4 * w + 4 * w);
      total += (n - 1) * (17 * w * w + 12 * w);
    } else {
      total += 9 * in * w + 9 * w * w + in * w + 3 * 2 * w;
      total += (n - 1) * (18 * w * w + 4 * w);
    }
    in = e * w;
  }
  const int64_t P = pooled_size(c.get_int("image_size"));
  return total + 8 * e * f * P * P * K + K;
}

Workload make_paradnn_cnn() {
  Workload w;
  w.info = {"paradnn_cnn",
            {"paradnn"},
            "parameterised convolutional model",
            "ParaDnn CNN generator: ResNet v1 of 4 groups of residual or bottleneck blocks, "
            "filters doubling per group, 7x7 average pool + FC; default bottleneck, 4 blocks "
            "per group, 32 filters, 250x250 images, 1000 classes",
            "Wang, Wei & Brooks, Benchmarking TPU, GPU, and CPU Platforms for Deep Learning, "
            "MLSys 2020 (Sec. 2.1, Table 2b ranges); stem, blocks, projections, pooling, "
            "initialisation, loss and optimizer from its public code (Emma926/paradnn cnn.py, "
            "resnet_model.py from tensorflow/tpu)",
            "images/s",
            8,
            {"batch=2", "blocks=1", "filters=4", "image_size=193", "classes=10"}};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 256, "mini-batch size (Table 2b: 64..1024, x2; middle of the grid)");
    c.add_choice("block", "bottleneck", {"residual", "bottleneck"},
                 "block type: residual (2 conv + 2 BN) or bottleneck (3 conv + 3 BN; the "
                 "paper's default)");
    c.add_int("blocks", 4, "blocks in each of the 4 groups (Table 2b: 1..8, +1)");
    c.add_int("filters", 32, "filters of the stem and group 1, doubled per group (16..64, x2)");
    c.add_int("image_size", 250,
              "input height and width, 3 channels (Table 2b: 200..300, +50); at least 193 so "
              "the 7x7 average pool fits the last map",
              193);
    c.add_int("classes", 1000, "output classes (Table 2b: 500..1500, +500)", 2);
    add_paradnn_optimizer_keys(c);
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    ParaCnn net(c.get_string("block") == "bottleneck", c.get_int("blocks"), c.get_int("filters"),
                c.get_int("classes"), pooled_size(c.get_int("image_size")));
    return make_classifier_model(net, device, image_batches(c, device),
                                 paradnn_optimizer_factory(c));
  };
  return w;
}

}  // namespace plumb::workloads
