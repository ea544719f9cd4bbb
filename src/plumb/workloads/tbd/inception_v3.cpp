// Inception-v3 (Szegedy et al., Rethinking the Inception Architecture for Computer Vision,
// CVPR 2016), TBD's first image-classification model, on 299x299 inputs:
//   - stem: 3x3 convs (Conv2d_1a..2b), max pool, 1x1 + 3x3 convs (3b, 4a), max pool;
//   - 3 x InceptionA at 35x35 (Mixed_5b/c/d), InceptionB grid reduction (Mixed_6a),
//     4 x InceptionC with factorised 1x7 / 7x1 convs at 17x17 (Mixed_6b..e), InceptionD
//     reduction (Mixed_7a), 2 x InceptionE with expanded 1x3 / 3x1 filter banks at 8x8;
//   - global average pool, dropout 0.5, FC 2048 -> 1000;
//   - the auxiliary classifier on Mixed_6e (AuxLogits: 5x5/3 avg pool, 1x1 conv 128, 5x5 conv
//     768, FC), run in training only;
//   - every convolution is BasicConv2d: conv without bias, batch norm (eps 1e-3), ReLU.
// Layer for layer torchvision 0.14's inception_v3(aux_logits=True, init_weights=True): the same
// module tree and parameter names ("Mixed_6b.branch7x7dbl_3.conv.weight"), 27,161,264 trainable
// parameters (3,326,696 of them in AuxLogits) and 5,713,216,096 forward MACs at 299x299 in eval
// mode (torchvision model counted with forward hooks). Initialisation as torchvision: truncated
// normal std 0.1 on every conv and linear weight, std 0.001 on AuxLogits.fc (torchvision sets
// AuxLogits.conv1's 0.01 on the BasicConv2d wrapper, which its init loop never reads, so that
// conv gets 0.1 too), BN weight 1 / bias 0, PyTorch's default linear biases.
//
// Training as the paper (Sec. 8): RMSProp with decay 0.9 and epsilon 1.0, learning rate 0.045
// (decayed x0.94 every two epochs, not modelled), gradient clipping at global norm 2.0, batch 32
// per replica (50 replicas), label smoothing 0.1 (Sec. 7). Loss = main cross-entropy + 0.4 x
// auxiliary cross-entropy (TF-slim's Inception training and torchvision's fine-tuning recipe;
// the paper does not state the weight). Momentum 0.9 is the authors' TensorFlow Inception
// training code (models/research/inception: RMSPROP_MOMENTUM = 0.9); the paper is silent.
#include "plumb/workloads/tbd/inception_v3.h"

#include <string>
#include <tuple>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/clipped_update.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

// The aux head pools Mixed_6e's map with a 5x5/3 window and then applies a 5x5 conv, so it needs
// a 17x17 map there, which only a 299x299 (or larger) input gives.
constexpr int64_t kMinAuxImageSize = 299;

struct Kernel {
  int64_t kh, kw, sh = 1, sw = 1, ph = 0, pw = 0;
};
Kernel square(int64_t k, int64_t stride = 1, int64_t pad = 0) {
  return {k, k, stride, stride, pad, pad};
}
const Kernel k1x7{1, 7, 1, 1, 0, 3};
const Kernel k7x1{7, 1, 1, 1, 3, 0};
const Kernel k1x3{1, 3, 1, 1, 0, 1};
const Kernel k3x1{3, 1, 1, 1, 1, 0};

// conv (no bias) -> BN (eps 1e-3) -> ReLU, torchvision's BasicConv2d.
struct BasicConv2dImpl : nn::Module {
  BasicConv2dImpl(std::string path, int64_t in, int64_t out, const Kernel& k)
      : path_(std::move(path)),
        conv(register_module("conv", nn::Conv2d(nn::Conv2dOptions(in, out, {k.kh, k.kw})
                                                    .stride({k.sh, k.sw})
                                                    .padding({k.ph, k.pw})
                                                    .bias(false)))),
        bn(register_module("bn", nn::BatchNorm2d(nn::BatchNorm2dOptions(out).eps(1e-3)))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);
    auto y = run_layer(path_ + ".conv", conv, x);
    y = run_layer(path_ + ".bn", bn, y);
    return scope.output(y.relu_());  // F.relu(inplace=True): BN's backward needs only its input
  }

  std::string path_;
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
};
TORCH_MODULE(BasicConv2d);

// Base for the mixed blocks: registers BasicConv2d children by torchvision name and runs the
// non-module ops (pools, concatenation) as named layers of the block.
struct MixedBlock : nn::Module {
  explicit MixedBlock(std::string path) : path_(std::move(path)) {}

  BasicConv2d add(const std::string& name, int64_t in, int64_t out, const Kernel& k) {
    return register_module(name, BasicConv2d(path_ + "." + name, in, out, k));
  }
  torch::Tensor avg_pool_3x3(const torch::Tensor& x) {  // same-size 3x3/1 average pool
    LayerScope scope(path_ + ".avg_pool");
    return scope.output(F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(1).padding(1)));
  }
  torch::Tensor max_pool_3x3s2(const torch::Tensor& x) {  // grid reduction branch
    LayerScope scope(path_ + ".max_pool");
    return scope.output(F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2)));
  }
  torch::Tensor cat(const std::vector<torch::Tensor>& parts, const std::string& name = "cat") {
    LayerScope scope(path_ + "." + name);
    return scope.output(torch::cat(parts, 1));
  }

  std::string path_;
};

// 35x35: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1 -> 64 + 64 + 96 + pool_features channels.
struct InceptionAImpl : MixedBlock {
  InceptionAImpl(const std::string& path, int64_t in, int64_t pool_features)
      : MixedBlock(path),
        branch1x1(add("branch1x1", in, 64, square(1))),
        branch5x5_1(add("branch5x5_1", in, 48, square(1))),
        branch5x5_2(add("branch5x5_2", 48, 64, square(5, 1, 2))),
        branch3x3dbl_1(add("branch3x3dbl_1", in, 64, square(1))),
        branch3x3dbl_2(add("branch3x3dbl_2", 64, 96, square(3, 1, 1))),
        branch3x3dbl_3(add("branch3x3dbl_3", 96, 96, square(3, 1, 1))),
        branch_pool(add("branch_pool", in, pool_features, square(1))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, in, 35, 35] -> [B, 224 + pf, 35, 35]
    auto b1 = branch1x1(x);
    auto b5 = branch5x5_2(branch5x5_1(x));
    auto b3 = branch3x3dbl_3(branch3x3dbl_2(branch3x3dbl_1(x)));
    auto bp = branch_pool(avg_pool_3x3(x));
    return cat({b1, b5, b3, bp});
  }

  BasicConv2d branch1x1, branch5x5_1, branch5x5_2, branch3x3dbl_1, branch3x3dbl_2, branch3x3dbl_3,
      branch_pool;
};
TORCH_MODULE(InceptionA);

// 35x35 -> 17x17 reduction: 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2 -> 384 + 96 + in channels.
struct InceptionBImpl : MixedBlock {
  InceptionBImpl(const std::string& path, int64_t in)
      : MixedBlock(path),
        branch3x3(add("branch3x3", in, 384, square(3, 2))),
        branch3x3dbl_1(add("branch3x3dbl_1", in, 64, square(1))),
        branch3x3dbl_2(add("branch3x3dbl_2", 64, 96, square(3, 1, 1))),
        branch3x3dbl_3(add("branch3x3dbl_3", 96, 96, square(3, 2))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, 288, 35, 35] -> [B, 768, 17, 17]
    auto b3 = branch3x3(x);
    auto bd = branch3x3dbl_3(branch3x3dbl_2(branch3x3dbl_1(x)));
    return cat({b3, bd, max_pool_3x3s2(x)});
  }

  BasicConv2d branch3x3, branch3x3dbl_1, branch3x3dbl_2, branch3x3dbl_3;
};
TORCH_MODULE(InceptionB);

// 17x17 with factorised 7x7 convs (c7 inner channels): 4 branches of 192 -> 768 channels.
struct InceptionCImpl : MixedBlock {
  InceptionCImpl(const std::string& path, int64_t in, int64_t c7)
      : MixedBlock(path),
        branch1x1(add("branch1x1", in, 192, square(1))),
        branch7x7_1(add("branch7x7_1", in, c7, square(1))),
        branch7x7_2(add("branch7x7_2", c7, c7, k1x7)),
        branch7x7_3(add("branch7x7_3", c7, 192, k7x1)),
        branch7x7dbl_1(add("branch7x7dbl_1", in, c7, square(1))),
        branch7x7dbl_2(add("branch7x7dbl_2", c7, c7, k7x1)),
        branch7x7dbl_3(add("branch7x7dbl_3", c7, c7, k1x7)),
        branch7x7dbl_4(add("branch7x7dbl_4", c7, c7, k7x1)),
        branch7x7dbl_5(add("branch7x7dbl_5", c7, 192, k1x7)),
        branch_pool(add("branch_pool", in, 192, square(1))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, 768, 17, 17] -> [B, 768, 17, 17]
    auto b1 = branch1x1(x);
    auto b7 = branch7x7_3(branch7x7_2(branch7x7_1(x)));
    auto bd = branch7x7dbl_1(x);
    bd = branch7x7dbl_5(branch7x7dbl_4(branch7x7dbl_3(branch7x7dbl_2(bd))));
    auto bp = branch_pool(avg_pool_3x3(x));
    return cat({b1, b7, bd, bp});
  }

  BasicConv2d branch1x1, branch7x7_1, branch7x7_2, branch7x7_3, branch7x7dbl_1, branch7x7dbl_2,
      branch7x7dbl_3, branch7x7dbl_4, branch7x7dbl_5, branch_pool;
};
TORCH_MODULE(InceptionC);

// 17x17 -> 8x8 reduction: 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2 -> 320 + 192 + 768.
struct InceptionDImpl : MixedBlock {
  InceptionDImpl(const std::string& path, int64_t in)
      : MixedBlock(path),
        branch3x3_1(add("branch3x3_1", in, 192, square(1))),
        branch3x3_2(add("branch3x3_2", 192, 320, square(3, 2))),
        branch7x7x3_1(add("branch7x7x3_1", in, 192, square(1))),
        branch7x7x3_2(add("branch7x7x3_2", 192, 192, k1x7)),
        branch7x7x3_3(add("branch7x7x3_3", 192, 192, k7x1)),
        branch7x7x3_4(add("branch7x7x3_4", 192, 192, square(3, 2))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, 768, 17, 17] -> [B, 1280, 8, 8]
    auto b3 = branch3x3_2(branch3x3_1(x));
    auto b7 = branch7x7x3_4(branch7x7x3_3(branch7x7x3_2(branch7x7x3_1(x))));
    return cat({b3, b7, max_pool_3x3s2(x)});
  }

  BasicConv2d branch3x3_1, branch3x3_2, branch7x7x3_1, branch7x7x3_2, branch7x7x3_3, branch7x7x3_4;
};
TORCH_MODULE(InceptionD);

// 8x8 with expanded filter banks: 320 | 2 x 384 | 2 x 384 | 192 -> 2048 channels.
struct InceptionEImpl : MixedBlock {
  InceptionEImpl(const std::string& path, int64_t in)
      : MixedBlock(path),
        branch1x1(add("branch1x1", in, 320, square(1))),
        branch3x3_1(add("branch3x3_1", in, 384, square(1))),
        branch3x3_2a(add("branch3x3_2a", 384, 384, k1x3)),
        branch3x3_2b(add("branch3x3_2b", 384, 384, k3x1)),
        branch3x3dbl_1(add("branch3x3dbl_1", in, 448, square(1))),
        branch3x3dbl_2(add("branch3x3dbl_2", 448, 384, square(3, 1, 1))),
        branch3x3dbl_3a(add("branch3x3dbl_3a", 384, 384, k1x3)),
        branch3x3dbl_3b(add("branch3x3dbl_3b", 384, 384, k3x1)),
        branch_pool(add("branch_pool", in, 192, square(1))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, in, 8, 8] -> [B, 2048, 8, 8]
    auto b1 = branch1x1(x);
    auto b3 = branch3x3_1(x);  // [B, 384, 8, 8]
    b3 = cat({branch3x3_2a(b3), branch3x3_2b(b3)}, "cat_3x3");
    auto bd = branch3x3dbl_2(branch3x3dbl_1(x));  // [B, 384, 8, 8]
    bd = cat({branch3x3dbl_3a(bd), branch3x3dbl_3b(bd)}, "cat_3x3dbl");
    auto bp = branch_pool(avg_pool_3x3(x));
    return cat({b1, b3, bd, bp});
  }

  BasicConv2d branch1x1, branch3x3_1, branch3x3_2a, branch3x3_2b, branch3x3dbl_1, branch3x3dbl_2,
      branch3x3dbl_3a, branch3x3dbl_3b, branch_pool;
};
TORCH_MODULE(InceptionE);

// Auxiliary classifier on Mixed_6e (training only).
struct InceptionAuxImpl : MixedBlock {
  InceptionAuxImpl(const std::string& path, int64_t in, int64_t classes)
      : MixedBlock(path),
        conv0(add("conv0", in, 128, square(1))),
        conv1(add("conv1", 128, 768, square(5))),
        fc(register_module("fc", nn::Linear(768, classes))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [B, 768, 17, 17] -> [B, classes]
    torch::Tensor y;
    {
      LayerScope scope(path_ + ".avg_pool");
      y = scope.output(F::avg_pool2d(x, F::AvgPool2dFuncOptions(5).stride(3)));  // [B,768,5,5]
    }
    y = conv1(conv0(y));  // [B, 128, 5, 5] -> [B, 768, 1, 1]
    {
      LayerScope scope(path_ + ".adaptive_avg_pool");
      y = scope.output(F::adaptive_avg_pool2d(y, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
    }
    return run_layer(path_ + ".fc", fc, y);
  }

  BasicConv2d conv0, conv1;
  nn::Linear fc;
};
TORCH_MODULE(InceptionAux);

struct Inception3Impl : nn::Module {
  Inception3Impl(int64_t classes, bool aux_logits, double dropout)
      : Conv2d_1a_3x3(conv("Conv2d_1a_3x3", 3, 32, square(3, 2))),
        Conv2d_2a_3x3(conv("Conv2d_2a_3x3", 32, 32, square(3))),
        Conv2d_2b_3x3(conv("Conv2d_2b_3x3", 32, 64, square(3, 1, 1))),
        maxpool1(register_module("maxpool1", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)))),
        Conv2d_3b_1x1(conv("Conv2d_3b_1x1", 64, 80, square(1))),
        Conv2d_4a_3x3(conv("Conv2d_4a_3x3", 80, 192, square(3))),
        maxpool2(register_module("maxpool2", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2)))),
        Mixed_5b(register_module("Mixed_5b", InceptionA("Mixed_5b", 192, 32))),
        Mixed_5c(register_module("Mixed_5c", InceptionA("Mixed_5c", 256, 64))),
        Mixed_5d(register_module("Mixed_5d", InceptionA("Mixed_5d", 288, 64))),
        Mixed_6a(register_module("Mixed_6a", InceptionB("Mixed_6a", 288))),
        Mixed_6b(register_module("Mixed_6b", InceptionC("Mixed_6b", 768, 128))),
        Mixed_6c(register_module("Mixed_6c", InceptionC("Mixed_6c", 768, 160))),
        Mixed_6d(register_module("Mixed_6d", InceptionC("Mixed_6d", 768, 160))),
        Mixed_6e(register_module("Mixed_6e", InceptionC("Mixed_6e", 768, 192))),
        // Registered after Mixed_6e as torchvision does, so parameters() keep its order.
        AuxLogits(aux_logits ? register_module("AuxLogits", InceptionAux("AuxLogits", 768, classes))
                             : InceptionAux(nullptr)),
        Mixed_7a(register_module("Mixed_7a", InceptionD("Mixed_7a", 768))),
        Mixed_7b(register_module("Mixed_7b", InceptionE("Mixed_7b", 1280))),
        Mixed_7c(register_module("Mixed_7c", InceptionE("Mixed_7c", 2048))),
        avgpool(register_module("avgpool", nn::AdaptiveAvgPool2d(1))),
        dropout_(register_module("dropout", nn::Dropout(dropout))),
        fc(register_module("fc", nn::Linear(2048, classes))) {
    // torchvision's init: trunc_normal_(std, a=-2, b=2) on every Conv2d / Linear weight. The
    // bounds are absolute, i.e. 20 and 2000 standard deviations, so the truncation never bites
    // and a plain normal draw has the same distribution.
    torch::NoGradGuard no_grad;
    for (auto& item : named_modules("", /*include_self=*/false)) {
      const double std = item.key() == "AuxLogits.fc" ? 0.001 : 0.1;
      if (auto* c = item.value()->as<nn::Conv2d>()) c->weight.normal_(0.0, std);
      if (auto* l = item.value()->as<nn::Linear>()) l->weight.normal_(0.0, std);
    }
  }

  BasicConv2d conv(const std::string& name, int64_t in, int64_t out, const Kernel& k) {
    return register_module(name, BasicConv2d(name, in, out, k));
  }

  // x: [B, 3, 299, 299] -> {logits [B, classes], aux logits [B, classes] (training only, else
  // undefined)}. Shapes below are for 299x299.
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x) {
    auto y = Conv2d_1a_3x3(x);               // [B, 32, 149, 149]
    y = Conv2d_2a_3x3(y);                    // [B, 32, 147, 147]
    y = Conv2d_2b_3x3(y);                    // [B, 64, 147, 147]
    y = run_layer("maxpool1", maxpool1, y);  // [B, 64, 73, 73]
    y = Conv2d_3b_1x1(y);                    // [B, 80, 73, 73]
    y = Conv2d_4a_3x3(y);                    // [B, 192, 71, 71]
    y = run_layer("maxpool2", maxpool2, y);  // [B, 192, 35, 35]
    y = run_layer("Mixed_5b", Mixed_5b, y);  // [B, 256, 35, 35]
    y = run_layer("Mixed_5c", Mixed_5c, y);  // [B, 288, 35, 35]
    y = run_layer("Mixed_5d", Mixed_5d, y);  // [B, 288, 35, 35]
    y = run_layer("Mixed_6a", Mixed_6a, y);  // [B, 768, 17, 17]
    y = run_layer("Mixed_6b", Mixed_6b, y);
    y = run_layer("Mixed_6c", Mixed_6c, y);
    y = run_layer("Mixed_6d", Mixed_6d, y);
    y = run_layer("Mixed_6e", Mixed_6e, y);  // [B, 768, 17, 17]
    torch::Tensor aux;
    if (AuxLogits && is_training()) aux = run_layer("AuxLogits", AuxLogits, y);  // [B, classes]
    y = run_layer("Mixed_7a", Mixed_7a, y);                                      // [B, 1280, 8, 8]
    y = run_layer("Mixed_7b", Mixed_7b, y);                                      // [B, 2048, 8, 8]
    y = run_layer("Mixed_7c", Mixed_7c, y);                                      // [B, 2048, 8, 8]
    y = run_layer("avgpool", avgpool, y);                                        // [B, 2048, 1, 1]
    y = run_layer("dropout", dropout_, y);
    {
      LayerScope scope("flatten");
      y = scope.output(y.flatten(1));  // [B, 2048]
    }
    return {run_layer("fc", fc, y), aux};  // [B, classes]
  }

  BasicConv2d Conv2d_1a_3x3, Conv2d_2a_3x3, Conv2d_2b_3x3;
  nn::MaxPool2d maxpool1;
  BasicConv2d Conv2d_3b_1x1, Conv2d_4a_3x3;
  nn::MaxPool2d maxpool2;
  InceptionA Mixed_5b, Mixed_5c, Mixed_5d;
  InceptionB Mixed_6a;
  InceptionC Mixed_6b, Mixed_6c, Mixed_6d, Mixed_6e;
  InceptionAux AuxLogits;
  InceptionD Mixed_7a;
  InceptionE Mixed_7b, Mixed_7c;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Dropout dropout_;
  nn::Linear fc;
};
TORCH_MODULE(Inception3);

// Batch layout: tensors[0] = images [B, 3, S, S], tensors[1] = int64 labels [B].
class InceptionModel : public Model {
 public:
  InceptionModel(const Config& c, const torch::Device& device)
      : net_(c.get_int("classes"), c.get_bool("aux_logits"), c.get_double("dropout")),
        make_batch_(image_batches(c, device)),
        aux_weight_(c.get_double("aux_weight")),
        label_smoothing_(c.get_double("label_smoothing")),
        clip_norm_(c.get_double("clip_norm")) {
    net_->to(device);
    // TF's RMSProp (the paper's) computes ms = d ms + (1 - d) g^2, mom = m mom + lr g /
    // sqrt(ms + eps), with eps INSIDE the square root and ms starting at 1; PyTorch's divides
    // by sqrt(ms) + eps with ms starting at 0. With eps = 1.0 the steps differ in size
    // (sqrt(ms + 1) vs sqrt(ms) + 1) but not in the work: the same elementwise passes over
    // every parameter and the same two state tensors (square average, momentum buffer).
    optimizer_ = std::make_unique<torch::optim::RMSprop>(
        net_->parameters(), torch::optim::RMSpropOptions(c.get_double("lr"))
                                .alpha(c.get_double("rms_decay"))
                                .eps(c.get_double("eps"))
                                .momentum(c.get_double("momentum")));
  }

  torch::nn::Module& module() override { return *net_; }
  Batch make_batch() override { return make_batch_(); }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto [logits, aux] = net_->forward(batch.tensors[0]);  // [B, C] each
    torch::Tensor loss;                                    // []
    {
      LayerScope scope("loss");
      const auto options = F::CrossEntropyFuncOptions().label_smoothing(label_smoothing_);
      loss = F::cross_entropy(logits, batch.tensors[1], options);
      if (aux.defined())
        loss = loss + aux_weight_ * F::cross_entropy(aux, batch.tensors[1], options);
      scope.output(loss);
    }
    loss.backward();
    clipped_update(*optimizer_, net_->parameters(), clip_norm_);
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    return infer_output(batch).sum().item<double>();
  }

  torch::Tensor infer_output(const Batch& batch) override {
    return std::get<0>(net_->forward(batch.tensors[0]));  // logits [B, C]
  }

 private:
  Inception3 net_;
  std::function<Batch()> make_batch_;
  double aux_weight_, label_smoothing_, clip_norm_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_inception_v3() {
  Workload w;
  w.info.name = "inception_v3";
  w.info.suites = {"tbd"};
  w.info.domain = "image classification";
  w.info.description =
      "Inception-v3 with its auxiliary classifier (training only) on 299x299 ImageNet-shaped "
      "images, torchvision's layer names and initialisation";
  w.info.source =
      "Szegedy et al., Rethinking the Inception Architecture for Computer Vision, CVPR 2016 "
      "(architecture; RMSProp decay 0.9 / eps 1.0, lr 0.045, clipping 2.0, label smoothing 0.1, "
      "batch 32 per replica); layer for layer torchvision 0.14 inception_v3; aux loss weight 0.4 "
      "(TF-slim) and RMSProp momentum 0.9 (TF Inception code); TBD's image-classification model";
  w.info.throughput_unit = "images/s";
  w.info.small_batch = 2;
  // The aux head needs a 299x299 input (see kMinAuxImageSize); the tests' tiny size turns it off
  // (torchvision's aux_logits switch). 139x139 leaves a 3x3 map for the last blocks: at 75x75
  // (the smallest input) it is 1x1, and batch norm over two values per channel turns the loss
  // on a fixed batch into noise (16 steps raised it for 1 to 5 of 6 seeds at every lr tried
  // from 3e-4 to 1e-2, batch 2 or 4; at 139x139, lr 0.003 and no dropout, all 6 lowered it).
  w.info.tiny_config = {"batch=2",          "image_size=139", "classes=10",
                        "aux_logits=false", "lr=0.003",       "dropout=0"};
  w.default_config = [] {
    Config c = image_classifier_config(32, "mini-batch size per replica (paper: 32, 50 replicas)",
                                       75, "input height and width (paper: 299x299; at least 75)");
    c.set_int("image_size", 299);
    c.add_bool("aux_logits", true,
               "auxiliary classifier on Mixed_6e in training (paper, torchvision default); needs "
               "image_size >= 299");
    c.add_double("aux_weight", 0.4, "weight of the auxiliary loss (TF-slim Inception training)");
    c.add_double("label_smoothing", 0.1, "label-smoothing epsilon (paper, Sec. 7)");
    c.add_double("dropout", 0.5, "dropout before the classifier (torchvision)");
    c.add_double("lr", 0.045, "RMSProp learning rate (paper; x0.94 every 2 epochs, not modelled)");
    c.add_double("rms_decay", 0.9, "RMSProp decay of the squared-gradient average (paper)");
    c.add_double("eps", 1.0, "RMSProp epsilon (paper; TF adds it inside the square root)");
    c.add_double("momentum", 0.9,
                 "RMSProp momentum (TF Inception training code; the paper does not say)");
    c.add_double("clip_norm", 2.0, "gradient clipping threshold, global norm (paper)");
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    if (c.get_bool("aux_logits") && c.get_int("image_size") < kMinAuxImageSize)
      throw UsageError("inception_v3: the auxiliary classifier needs image_size >= 299 (got " +
                       std::to_string(c.get_int("image_size")) +
                       "); set aux_logits=false for smaller images");
    return std::make_unique<InceptionModel>(c, device);
  };
  return w;
}

}  // namespace plumb::workloads
