// autoenc: Fathom's variational autoencoder (Kingma & Welling, Auto-Encoding Variational
// Bayes, ICLR 2014) on MNIST-shaped data.
//
// Configuration: the paper's MNIST model (its Appendix C): a Gaussian MLP encoder with one
// tanh hidden layer of 500 units producing the mean and log-variance of a 20-dimensional
// latent, the reparameterised sample z = mu + sigma * eps (also at inference: a VAE samples
// when it encodes), and a Bernoulli MLP decoder 20 -> 500 (tanh) -> 784 (sigmoid). Loss: the
// negative ELBO = binary cross-entropy summed over pixels + KL(q(z|x) || N(0, I)), averaged
// over the batch; optimiser Adagrad with step size 0.01 and mini-batch 100 as in the paper.
// Parameters: 784*500+500 + 2*(500*20+20) + 20*500+500 + 500*784+784 = 815,824.
//
// (Fathom's own TensorFlow code used a linear 784 -> 200 encoder without a hidden layer and a
// squared-error loss; we follow the paper it cites, which is the published architecture.)
#include "plumb/workloads/fathom/autoenc.h"

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/synthetic_data.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

struct VaeOutput {
  torch::Tensor logits;   // [B, 784] decoder pre-sigmoid
  torch::Tensor mu;       // [B, latent]
  torch::Tensor log_var;  // [B, latent]
};

struct VaeImpl : nn::Module {
  VaeImpl(int64_t pixels, int64_t hidden, int64_t latent)
      : encoder(register_module("encoder", nn::Linear(pixels, hidden))),
        mu(register_module("mu", nn::Linear(hidden, latent))),
        log_var(register_module("log_var", nn::Linear(hidden, latent))),
        decoder(register_module("decoder", nn::Linear(latent, hidden))),
        output(register_module("output", nn::Linear(hidden, pixels))) {}

  // x: [B, 784] in [0, 1]
  VaeOutput forward(const torch::Tensor& x) {
    auto h = torch::tanh(run_layer("encoder", encoder, x));  // [B, hidden]
    auto m = run_layer("mu", mu, h);                         // [B, latent]
    auto lv = run_layer("log_var", log_var, h);              // [B, latent]
    torch::Tensor z;
    {
      LayerScope scope("sample");
      // Reparameterisation: z = mu + exp(log_var / 2) * eps, eps ~ N(0, I). eps is drawn in
      // fp32 whatever the precision, so every precision decodes the same noise for one seed.
      auto eps = torch::randn(m.sizes(), m.options().dtype(torch::kFloat)).to(m.scalar_type());
      z = scope.output(m + torch::exp(0.5 * lv) * eps);  // [B, latent]
    }
    auto g = torch::tanh(run_layer("decoder", decoder, z));  // [B, hidden]
    return {run_layer("output", output, g), m, lv};          // logits [B, 784]
  }

  nn::Linear encoder, mu, log_var, decoder, output;
};
TORCH_MODULE(Vae);

class VaeModel : public Model {
 public:
  VaeModel(const Config& c, const torch::Device& device)
      : net_(c.get_int("pixels"), c.get_int("hidden"), c.get_int("latent")),
        batch_(c.get_int("batch")),
        pixels_(c.get_int("pixels")),
        device_(device) {
    net_->to(device);
    // Under the optimizer scope: Adagrad allocates its accumulators up front, and the memory
    // profiler files what is made in that scope as optimizer state.
    LayerScope scope("optimizer");
    optimizer_ = std::make_unique<torch::optim::Adagrad>(
        net_->parameters(), torch::optim::AdagradOptions(c.get_double("lr")));
  }

  nn::Module& module() override { return *net_; }

  Batch make_batch() override {
    return {{mnist_like_pixels(batch_, pixels_, device_)}, static_cast<double>(batch_)};
  }

  double train_step(const Batch& batch) override {
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    const auto& x = batch.tensors[0];  // [B, 784]
    auto out = net_->forward(x);
    torch::Tensor loss;
    {
      // -ELBO per example: BCE summed over pixels + KL(N(mu, sigma^2) || N(0, 1)).
      LayerScope scope("loss");
      auto bce = torch::binary_cross_entropy_with_logits(out.logits, x, {}, {},
                                                         at::Reduction::None)
                     .sum(1);                                                         // [B]
      auto kl = -0.5 * (1 + out.log_var - out.mu.pow(2) - out.log_var.exp()).sum(1);  // [B]
      loss = scope.output((bce + kl).mean());
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    return infer_output(batch).sum().item<double>();
  }

  // Reconstruction: encode, sample, decode to Bernoulli means [B, pixels].
  torch::Tensor infer_output(const Batch& batch) override {
    return torch::sigmoid(net_->forward(batch.tensors[0]).logits);
  }

 private:
  Vae net_;
  int64_t batch_, pixels_;
  torch::Device device_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

Workload make_autoenc() {
  Workload w;
  w.info = {"autoenc",
            {"fathom"},
            "unsupervised generative model",
            "variational autoencoder, MLP 784-500-(20,20) encoder, 20-500-784 Bernoulli "
            "decoder, tanh, reparameterised sampling in train and infer",
            "Kingma & Welling, Auto-Encoding Variational Bayes, ICLR 2014 (MNIST model of "
            "Appendix C, Adagrad 0.01, batch 100); Fathom's autoenc workload",
            "images/s",
            100,
            {"batch=8", "hidden=32", "latent=4"}};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 100, "mini-batch size (paper: M = 100)");
    c.add_int("pixels", 784, "input size: 28x28 MNIST images, flattened");
    c.add_int("hidden", 500, "hidden units of encoder and decoder MLPs (paper: 500 for MNIST)");
    c.add_int("latent", 20, "latent dimensions (paper sweeps 3..200; 20 is its common choice)");
    c.add_double("lr", 0.01, "Adagrad step size (paper: chosen from {0.01, 0.02, 0.1})");
    return c;
  };
  w.build = build_model<VaeModel>;
  return w;
}

}  // namespace plumb::workloads
