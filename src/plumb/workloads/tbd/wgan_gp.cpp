// wgan_gp: TBD's adversarial-learning workload, a Wasserstein GAN trained with gradient
// penalty (Gulrajani et al., Improved Training of Wasserstein GANs, NIPS 2017) on 64x64
// images (TBD: "Downsampled ImageNet, 3x64x64"; "both the WGAN generator and discriminator
// are 4 residual block CNNs", 14 + 14 layers).
//
// Architecture: the authors' 64x64 ResNet (GoodGenerator / GoodDiscriminator of
// gan_64x64.py in igul222/improved_wgan_training, the TensorFlow code TBD ran), DIM = 64:
//   generator: z [B,128] -> Linear 128 -> 4*4*8*DIM -> [B,512,4,4] -> 4 up-sampling residual
//     blocks (512->512->256->128->64 channels, 4 -> 64 pixels) -> BatchNorm, ReLU ->
//     Conv3x3 64->3 -> tanh;
//   critic: [B,3,64,64] -> Conv3x3 3->64 -> 4 down-sampling residual blocks (64->128->256->
//     512->512 channels, 64 -> 4 pixels) -> Linear 8192 -> 1. No batch norm in the critic
//     (it would break the per-example gradient penalty): the reference uses layer norm over
//     (C, H, W) with a per-channel scale and offset, i.e. GroupNorm with one group.
//   Residual block: shortcut = 1x1 conv (with bias) on the resampled input; main path =
//     norm, ReLU, conv1 3x3 (no bias), norm, ReLU, conv2 3x3 (bias). Up blocks: nearest
//     neighbour x2 (the reference's concat + depth_to_space) before the shortcut conv and
//     before conv1. Down blocks: 2x2 mean pool before the shortcut conv and after conv2;
//     conv1 keeps the input width.
//   14 layers each: generator = linear + 4 x (shortcut, conv1, conv2) + output conv; critic =
//     input conv + 4 x 3 convs + linear, TBD's "14+14".
// Parameters (derivation in docs/workloads.md): generator 8,540,483, critic 7,491,841, total
// 16,032,324. Forward MACs per generated image (inference): 1,786,511,360; critic forward per
// image: 1,697,390,592.
//
// Training (gan_64x64.py, MODE = 'wgan-gp'): Adam lr 1e-4, betas (0, 0.9) for both networks,
// batch 64, lambda = 10, CRITIC_ITERS = 5. One train step here is one generator iteration of
// the reference loop: 5 critic updates, each on a fresh batch of real images and fresh noise,
// then 1 generator update. Critic update: fake = G(z) (no gradient to G), loss = mean D(fake)
// - mean D(real) + lambda * mean((||grad_x D(x_hat)||_2 - 1)^2) on random interpolates x_hat;
// the input gradient is taken with create_graph, so the backward pass includes the penalty's
// double backward through the critic. Generator update: loss = -mean D(G(z)), critic
// weights frozen (the reference's var_list: no critic weight gradients are computed).
// Initialisation: LibTorch defaults (tflib's He/Glorot uniform differs; cost is unaffected).
#include "plumb/workloads/tbd/wgan_gp.h"

#include <string>
#include <vector>

#include "plumb/core/errors.h"
#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/layers.h"
#include "plumb/workloads/common/model_builder.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

constexpr int64_t kImageSize = 64;  // four 2x resamplings between 4x4 and 64x64
constexpr int64_t kBaseSize = 4;

// Generator residual block with 2x nearest-neighbour up-sampling (ResidualBlock(...,
// resample='up') of gan_64x64.py).
struct UpBlockImpl : nn::Module {
  UpBlockImpl(std::string path, int64_t in, int64_t out)
      : path_(std::move(path)),
        shortcut(
            register_module("shortcut", conv2d(in, out, 1, 1, same_padding(1), /*bias=*/true))),
        bn1(register_module("bn1", nn::BatchNorm2d(in))),
        conv1(register_module("conv1", conv2d(in, out, 3, 1, same_padding(3), /*bias=*/false))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))),
        conv2(register_module("conv2", conv2d(out, out, 3, 1, same_padding(3), /*bias=*/true))) {}

  static torch::Tensor upsample(const torch::Tensor& x) {
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{2.0, 2.0})
                                 .mode(torch::kNearest));
  }

  // x: [B, in, H, W] -> [B, out, 2H, 2W]
  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);  // ReLUs and the residual add are attributed to the block
    torch::Tensor skip;
    {
      LayerScope s(path_ + ".shortcut");
      skip = s.output(shortcut->forward(upsample(x)));  // [B, out, 2H, 2W]
    }
    auto h = torch::relu(run_layer(path_ + ".bn1", bn1, x));  // [B, in, H, W]
    {
      LayerScope s(path_ + ".conv1");
      h = s.output(conv1->forward(upsample(h)));  // [B, out, 2H, 2W]
    }
    h = torch::relu(run_layer(path_ + ".bn2", bn2, h));
    h = run_layer(path_ + ".conv2", conv2, h);  // [B, out, 2H, 2W]
    return scope.output(skip + h);
  }

  std::string path_;
  nn::Conv2d shortcut;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv2;
};
TORCH_MODULE(UpBlock);

// Critic residual block with 2x2 mean-pool down-sampling (ResidualBlock(..., resample='down')
// of gan_64x64.py, with its critic-side layer norms).
struct DownBlockImpl : nn::Module {
  DownBlockImpl(std::string path, int64_t in, int64_t out)
      : path_(std::move(path)),
        shortcut(
            register_module("shortcut", conv2d(in, out, 1, 1, same_padding(1), /*bias=*/true))),
        ln1(register_module("ln1", nn::GroupNorm(nn::GroupNormOptions(1, in).eps(1e-5)))),
        conv1(register_module("conv1", conv2d(in, in, 3, 1, same_padding(3), /*bias=*/false))),
        ln2(register_module("ln2", nn::GroupNorm(nn::GroupNormOptions(1, in).eps(1e-5)))),
        conv2(register_module("conv2", conv2d(in, out, 3, 1, same_padding(3), /*bias=*/true))) {}

  // x: [B, in, H, W] -> [B, out, H/2, W/2]
  torch::Tensor forward(const torch::Tensor& x) {
    LayerScope scope(path_);
    torch::Tensor skip;
    {
      LayerScope s(path_ + ".shortcut");  // MeanPoolConv
      skip = s.output(shortcut->forward(F::avg_pool2d(x, F::AvgPool2dFuncOptions(2))));
    }
    auto h = torch::relu(run_layer(path_ + ".ln1", ln1, x));  // [B, in, H, W]
    h = run_layer(path_ + ".conv1", conv1, h);                // [B, in, H, W]
    h = torch::relu(run_layer(path_ + ".ln2", ln2, h));
    {
      LayerScope s(path_ + ".conv2");  // ConvMeanPool
      h = s.output(F::avg_pool2d(conv2->forward(h), F::AvgPool2dFuncOptions(2)));
    }
    return scope.output(skip + h);  // [B, out, H/2, W/2]
  }

  std::string path_;
  nn::Conv2d shortcut;
  nn::GroupNorm ln1;
  nn::Conv2d conv1;
  nn::GroupNorm ln2;
  nn::Conv2d conv2;
};
TORCH_MODULE(DownBlock);

struct GeneratorImpl : nn::Module {
  GeneratorImpl(int64_t noise, int64_t dim)
      : top_(8 * dim),
        input(register_module("input", nn::Linear(noise, kBaseSize * kBaseSize * 8 * dim))),
        output_bn(register_module("output_bn", nn::BatchNorm2d(dim))),
        output(register_module("output", conv2d(dim, 3, 3, 1, same_padding(3), /*bias=*/true))) {
    const std::vector<int64_t> widths = {8 * dim, 8 * dim, 4 * dim, 2 * dim, dim};
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      const std::string name = "res" + std::to_string(i + 1);
      blocks.push_back(
          register_module(name, UpBlock("generator." + name, widths[i], widths[i + 1])));
    }
  }

  // z: [B, noise] -> images [B, 3, 64, 64] in (-1, 1)
  torch::Tensor forward(const torch::Tensor& z) {
    auto h = run_layer("generator.input", input, z)
                 .view({-1, top_, kBaseSize, kBaseSize});  // [B, 8*DIM, 4, 4]
    for (auto& block : blocks) h = block->forward(h);      // [B, DIM, 64, 64]
    h = torch::relu(run_layer("generator.output_bn", output_bn, h));
    LayerScope scope("generator.output");
    return scope.output(torch::tanh(output->forward(h)));  // [B, 3, 64, 64]
  }

  int64_t top_;
  nn::Linear input;
  std::vector<UpBlock> blocks;
  nn::BatchNorm2d output_bn;
  nn::Conv2d output;
};
TORCH_MODULE(Generator);

struct CriticImpl : nn::Module {
  explicit CriticImpl(int64_t dim)
      : input(register_module("input", conv2d(3, dim, 3, 1, same_padding(3), /*bias=*/true))),
        output(register_module("output", nn::Linear(kBaseSize * kBaseSize * 8 * dim, 1))) {
    const std::vector<int64_t> widths = {dim, 2 * dim, 4 * dim, 8 * dim, 8 * dim};
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      const std::string name = "res" + std::to_string(i + 1);
      blocks.push_back(
          register_module(name, DownBlock("critic." + name, widths[i], widths[i + 1])));
    }
  }

  // x: [B, 3, 64, 64] -> critic values [B]
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = run_layer("critic.input", input, x);                        // [B, DIM, 64, 64]
    for (auto& block : blocks) h = block->forward(h);                    // [B, 8*DIM, 4, 4]
    return run_layer("critic.output", output, h.flatten(1)).view({-1});  // [B]
  }

  nn::Conv2d input;
  std::vector<DownBlock> blocks;
  nn::Linear output;
};
TORCH_MODULE(Critic);

struct WganGpImpl : nn::Module {
  WganGpImpl(int64_t noise, int64_t dim)
      : generator(register_module("generator", Generator(noise, dim))),
        critic(register_module("critic", Critic(dim))) {}
  Generator generator;
  Critic critic;
};
TORCH_MODULE(WganGp);

// Batch layout: tensors[0] = noise [B, 128] (what inference consumes); in training mode also
// tensors[1] = real images [critic_iters * B, 3, 64, 64] in [-1, 1], one slice of B per
// critic update. Units: training counts the real images the step consumes (critic_iters * B,
// as data-set epochs count them); inference counts generated images (B).
class WganGpModel : public Model {
 public:
  WganGpModel(const Config& c, const torch::Device& device)
      : net_(c.get_int("noise"), c.get_int("dim")),
        batch_(c.get_int("batch")),
        noise_(c.get_int("noise")),
        critic_iters_(c.get_int("critic_iters")),
        lambda_(c.get_double("gp_lambda")),
        device_(device) {
    net_->to(device);
    auto adam = torch::optim::AdamOptions(c.get_double("lr"))
                    .betas({c.get_double("beta1"), c.get_double("beta2")});
    g_optimizer_ = std::make_unique<torch::optim::Adam>(net_->generator->parameters(), adam);
    d_optimizer_ = std::make_unique<torch::optim::Adam>(net_->critic->parameters(), adam);
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override {
    auto noise = torch::randn({batch_, noise_}, device_);
    if (!net_->is_training()) return {{noise}, static_cast<double>(batch_)};
    // 8-bit pixels mapped to [-1, 1] as the reference's 2 * (x / 255 - 0.5).
    auto pixels = torch::randint(0, 256, {critic_iters_ * batch_, 3, kImageSize, kImageSize},
                                 torch::TensorOptions().device(device_).dtype(torch::kFloat));
    return {{noise, pixels.mul_(2.0 / 255.0).sub_(1.0)},
            static_cast<double>(critic_iters_ * batch_)};
  }

  // Returns the critic loss averaged over the step's critic updates: it is the quantity the
  // reference logs ('train disc cost'), and it is the one that falls on a fixed batch: the
  // critic starts near-constant with input gradients far from unit norm, so the penalty
  // dominates; Adam first removes the penalty and then learns to score the (fixed) real
  // images above the generator's samples, driving -W and the loss down. (The generator loss
  // rises as the critic improves, so it would not serve.)
  double train_step(const Batch& batch) override {
    if (batch.tensors.size() < 2)
      throw UsageError("wgan_gp: training needs a batch made in training mode (real images)");
    const auto& real_all = batch.tensors[1];  // [critic_iters * B, 3, 64, 64]
    double critic_loss_sum = 0;
    for (int64_t i = 0; i < critic_iters_; ++i)
      critic_loss_sum += critic_step(real_all.narrow(0, i * batch_, batch_));
    generator_step();
    return critic_loss_sum / static_cast<double>(critic_iters_);
  }

  double infer_step(const Batch& batch) override {
    return net_->generator->forward(batch.tensors[0]).sum().item<double>();  // [B, 3, 64, 64]
  }

  // Generated images [B, 3, 64, 64].
  torch::Tensor infer_output(const Batch& batch) override {
    return net_->generator->forward(batch.tensors[0]);
  }

 private:
  double critic_step(const torch::Tensor& real) {  // real: [B, 3, 64, 64]
    {
      LayerScope scope("optimizer");
      d_optimizer_->zero_grad();
    }
    torch::Tensor fake;  // [B, 3, 64, 64]
    {
      // Only the critic's variables are updated: no graph through the generator.
      torch::NoGradGuard no_grad;
      fake = net_->generator->forward(torch::randn({batch_, noise_}, device_));
    }
    auto d_real = net_->critic->forward(real);  // [B]
    auto d_fake = net_->critic->forward(fake);  // [B]
    torch::Tensor x_hat;                        // [B, 3, 64, 64]
    {
      LayerScope scope("gradient_penalty");
      auto alpha = torch::rand({batch_, 1, 1, 1}, device_);
      x_hat = scope.output((real + alpha * (fake - real)).requires_grad_(true));
    }
    auto d_hat = net_->critic->forward(x_hat);  // [B]
    torch::Tensor loss;
    {
      LayerScope scope("gradient_penalty");
      // grad_x D(x_hat) with a graph of its own, so the penalty can be differentiated again.
      auto grad = torch::autograd::grad({d_hat}, {x_hat}, {torch::ones_like(d_hat)},
                                        /*retain_graph=*/true, /*create_graph=*/true)[0];
      auto slopes = grad.square().sum({1, 2, 3}).sqrt();  // [B]
      auto penalty = (slopes - 1).square().mean();
      loss = scope.output(d_fake.mean() - d_real.mean() + lambda_ * penalty);
    }
    loss.backward();  // includes the double backward of the penalty through the critic
    {
      LayerScope scope("optimizer");
      d_optimizer_->step();
    }
    return loss.item<double>();
  }

  void generator_step() {
    {
      LayerScope scope("optimizer");
      g_optimizer_->zero_grad();
    }
    auto critic_params = net_->critic->parameters();
    for (auto& p : critic_params) p.requires_grad_(false);
    auto fake = net_->generator->forward(torch::randn({batch_, noise_}, device_));
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      loss = scope.output(-net_->critic->forward(fake).mean());
    }
    loss.backward();
    for (auto& p : critic_params) p.requires_grad_(true);
    {
      LayerScope scope("optimizer");
      g_optimizer_->step();
    }
  }

  WganGp net_;
  int64_t batch_, noise_, critic_iters_;
  double lambda_;
  torch::Device device_;
  std::unique_ptr<torch::optim::Optimizer> g_optimizer_, d_optimizer_;
};

}  // namespace

Workload make_wgan_gp() {
  Workload w;
  w.info.name = "wgan_gp";
  w.info.suites = {"tbd"};
  w.info.domain = "adversarial learning (image generation)";
  w.info.description =
      "WGAN-GP, 64x64 ResNet generator (4 up-sampling residual blocks, batch norm) and critic "
      "(4 down-sampling residual blocks, layer norm), DIM 64; one step = 5 critic updates with "
      "gradient penalty (double backward) + 1 generator update";
  w.info.source =
      "Gulrajani et al., Improved Training of Wasserstein GANs, NIPS 2017 (64x64 ResNet of its "
      "gan_64x64.py: batch 64, lambda 10, 5 critic iterations, Adam 1e-4, betas (0, 0.9)); TBD "
      "(IISWC 2018) WGAN on downsampled ImageNet 64x64";
  w.info.throughput_unit = "images/s";
  w.info.small_batch = 1;
  w.info.tiny_config = {"batch=1", "dim=4"};
  // One critic update per step keeps every layer at its published size; five of them at batch
  // 1 take ~10 s on one core, over the main job's budget.
  w.info.suite_settings = {"critic_iters=1"};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 64, "mini-batch size per critic/generator update (gan_64x64.py)");
    c.add_int("dim", 64,
              "model width DIM: generator 8/8/4/2/1 x DIM channels, critic 1/2/4/8/8 x DIM "
              "(gan_64x64.py)");
    c.add_int("noise", 128, "noise vector length z (gan_64x64.py: 128, N(0, 1))");
    c.add_int("critic_iters", 5,
              "critic updates per generator update, all in one train step (paper: n_critic 5)");
    c.add_double("gp_lambda", 10.0, "gradient penalty coefficient lambda (paper: 10)");
    c.add_double("lr", 1e-4, "Adam learning rate of both networks (gan_64x64.py: 1e-4)");
    c.add_double("beta1", 0.0, "Adam beta1 (paper: 0)");
    c.add_double("beta2", 0.9, "Adam beta2 (paper: 0.9)");
    return c;
  };
  w.build = build_model<WganGpModel>;
  return w;
}

}  // namespace plumb::workloads
