// deepq: Fathom's deep Q-network, the Nature DQN (Mnih et al., Human-level control through
// deep reinforcement learning, Nature 2015), learning from a synthetic Atari-like environment
// (common/synthetic_env.h).
//
// Network (the paper's "Methods", Model architecture): input 84x84x4 (the last 4 preprocessed
// frames, uint8, scaled to [0, 1] by the network), conv 32 8x8 stride 4, conv 64 4x4 stride 2,
// conv 64 3x3 stride 1, fully connected 512, linear output with one Q-value per action; ReLU
// after every hidden layer. 18 actions: the full Atari action set (the paper used each game's
// minimal set, 4 to 18). Parameters, term by term:
//   conv1 4*32*8*8+32 = 8,224   conv2 32*64*4*4+64 = 32,832   conv3 64*64*3*3+64 = 36,928
//   fc 3136*512+512 = 1,606,144 (3136 = 64 x 7 x 7)   out 512*18+18 = 9,234   total 1,693,362.
//
// One training step is what the paper does per parameter update ("Algorithm 1", update
// frequency 4): act 4 times (epsilon-greedy with the online network, one environment step,
// store the transition in the replay memory), sample a minibatch of 32 transitions uniformly
// from the replay memory, compute targets y = r + 0.99 * max_a' Q_target(s', a') (0 past a
// terminal), one Huber-loss update of the online network with the paper's RMSProp, and copy
// the online network into the target network every C = 10,000 updates.
//
// RMSProp as DeepMind's released code (the paper's Extended Data Table 1: lr 0.00025,
// gradient momentum 0.95, squared gradient momentum 0.95, min squared gradient 0.01):
//   g = 0.95 g + 0.05 dw;  n = 0.95 n + 0.05 dw^2;  w -= lr * dw / sqrt(n - g^2 + 0.01).
// torch::optim::RMSprop(alpha = 0.95, eps = 0.01, centered = true) is the same recurrence
// except that it adds eps OUTSIDE the square root (sqrt(n - g^2) + 0.01), which makes steps
// up to 10x larger when gradients are small, so the update is written out here.
// Error clipping (the paper clips the TD error to [-1, 1]) is the Huber loss with delta 1,
// summed over the minibatch as DeepMind's code accumulates it.
#include "plumb/workloads/fathom/deepq.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/layers.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/synthetic_env.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

struct DqnNetImpl : nn::Module {
  DqnNetImpl(const Config& c, std::string layer_prefix)
      : prefix(std::move(layer_prefix)),
        conv1(register_module(
            "conv1",
            nn::Conv2d(nn::Conv2dOptions(c.get_int("history"), c.get_int("conv1"), 8).stride(4)))),
        conv2(register_module(
            "conv2",
            nn::Conv2d(nn::Conv2dOptions(c.get_int("conv1"), c.get_int("conv2"), 4).stride(2)))),
        conv3(register_module(
            "conv3",
            nn::Conv2d(nn::Conv2dOptions(c.get_int("conv2"), c.get_int("conv3"), 3).stride(1)))),
        fc(register_module(
            "fc", nn::Linear(c.get_int("conv3") * spatial(c) * spatial(c), c.get_int("hidden")))),
        out(register_module("out", nn::Linear(c.get_int("hidden"), c.get_int("actions")))) {}

  // Spatial size after the three convolutions: 84 -> 20 -> 9 -> 7.
  static int64_t spatial(const Config& c) {
    return conv_out(conv_out(conv_out(c.get_int("frame_size"), 8, 4), 4, 2), 3, 1);
  }

  // frames: [B, 4, 84, 84] uint8 -> Q-values [B, actions]
  torch::Tensor forward(const torch::Tensor& frames) {
    torch::Tensor x;
    {
      LayerScope scope(prefix + "preprocess");
      x = scope.output(frames.to(torch::kFloat).div_(255.0));  // [B, 4, 84, 84] in [0, 1]
    }
    x = hidden_layer("conv1", conv1, x);       // [B, 32, 20, 20]
    x = hidden_layer("conv2", conv2, x);       // [B, 64, 9, 9]
    x = hidden_layer("conv3", conv3, x);       // [B, 64, 7, 7]
    x = hidden_layer("fc", fc, x.flatten(1));  // [B, 512]
    LayerScope scope(prefix + "out");
    return scope.output(out->forward(x));  // [B, actions]
  }

  template <typename Layer>
  torch::Tensor hidden_layer(const char* name, Layer& layer, const torch::Tensor& x) {
    LayerScope scope(prefix + name);
    return scope.output(torch::relu(layer->forward(x)));
  }

  std::string prefix;  // "" for the online network, "target." for the target network
  nn::Conv2d conv1, conv2, conv3;
  nn::Linear fc, out;
};
TORCH_MODULE(DqnNet);

// DeepMind's RMSProp (see the top of the file).
class DeepMindRmsProp {
 public:
  DeepMindRmsProp(std::vector<torch::Tensor> params, const Config& c)
      : params_(std::move(params)),
        lr_(c.get_double("lr")),
        grad_momentum_(c.get_double("gradient_momentum")),
        sq_momentum_(c.get_double("squared_gradient_momentum")),
        min_sq_(c.get_double("min_squared_gradient")) {
    for (const auto& p : params_) {
      mean_grad_.push_back(torch::zeros_like(p));
      mean_sq_.push_back(torch::zeros_like(p));
    }
  }

  void zero_grad() {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
  }

  void step() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& dw = params_[i].grad();
      if (!dw.defined()) continue;
      mean_grad_[i].mul_(grad_momentum_).add_(dw, 1 - grad_momentum_);
      mean_sq_[i].mul_(sq_momentum_).addcmul_(dw, dw, 1 - sq_momentum_);
      auto denom = mean_sq_[i].addcmul(mean_grad_[i], mean_grad_[i], -1).add_(min_sq_).sqrt_();
      params_[i].addcdiv_(dw, denom, -lr_);
    }
  }

 private:
  std::vector<torch::Tensor> params_, mean_grad_, mean_sq_;
  double lr_, grad_momentum_, sq_momentum_, min_sq_;
};

// Replay memory of single frames: a transition stores the frame slots of its state and next
// state (4 each), so a frame is stored once (84*84 bytes) rather than 8 times, as DeepMind's
// replay memory does. Frames live on the model's device; the small index tables on the CPU.
class ReplayMemory {
 public:
  ReplayMemory(int64_t capacity, int64_t history, int64_t frame_size, const torch::Device& device)
      : capacity_(capacity),
        history_(history),
        frame_capacity_(capacity + history + 1),  // a live transition's frames are never reused
        frames_(torch::empty({capacity + history + 1, frame_size, frame_size},
                             torch::TensorOptions().dtype(torch::kUInt8).device(device))),
        state_slots_(torch::empty({capacity, history}, torch::kLong)),
        next_slots_(torch::empty({capacity, history}, torch::kLong)),
        actions_(torch::empty({capacity}, torch::kLong)),
        rewards_(torch::empty({capacity}, torch::kFloat)),
        not_done_(torch::empty({capacity}, torch::kFloat)) {}

  // The first frame the acting environment shows (episode start: repeated `history` times).
  void start(const torch::Tensor& frame) {
    recent_.assign(static_cast<size_t>(history_), store_frame(frame));
  }

  // The transition (current state, action, reward, next state) where the next state ends in
  // `next_frame`; after a terminal transition `next_frame` starts the next episode.
  void push(int64_t action, float reward, bool done, const torch::Tensor& next_frame) {
    LayerScope scope("replay.push");
    const int64_t i = next_;
    std::copy(recent_.begin(), recent_.end(), state_slots_.data_ptr<int64_t>() + i * history_);
    const int64_t f = store_frame(next_frame);
    if (done) {
      std::fill(recent_.begin(), recent_.end(), f);
    } else {
      std::rotate(recent_.begin(), recent_.begin() + 1, recent_.end());
      recent_.back() = f;
    }
    std::copy(recent_.begin(), recent_.end(), next_slots_.data_ptr<int64_t>() + i * history_);
    actions_.data_ptr<int64_t>()[i] = action;
    rewards_.data_ptr<float>()[i] = reward;
    not_done_.data_ptr<float>()[i] = done ? 0.0f : 1.0f;
    next_ = (next_ + 1) % capacity_;
    size_ = std::min(size_ + 1, capacity_);
  }

  struct Minibatch {
    torch::Tensor states, actions, rewards, next_states, not_done;
  };

  // Gathers the transitions at `index` ([B] int64, CPU).
  Minibatch gather(const torch::Tensor& index) {
    LayerScope scope("replay.sample");
    const auto device = frames_.device();
    const int64_t b = index.size(0), s = frames_.size(1);
    auto frames_of = [&](const torch::Tensor& slots) {
      auto rows = slots.index_select(0, index).flatten().to(device);   // [B * history]
      return frames_.index_select(0, rows).view({b, history_, s, s});  // [B, history, S, S]
    };
    return {frames_of(state_slots_), actions_.index_select(0, index).to(device),
            rewards_.index_select(0, index).to(device), frames_of(next_slots_),
            not_done_.index_select(0, index).to(device)};
  }

  int64_t size() const { return size_; }

 private:
  int64_t store_frame(const torch::Tensor& frame) {
    const int64_t f = frames_pushed_++ % frame_capacity_;
    frames_.select(0, f).copy_(frame);
    return f;
  }

  int64_t capacity_, history_, frame_capacity_;
  torch::Tensor frames_;                    // [capacity + history + 1, S, S] uint8
  torch::Tensor state_slots_, next_slots_;  // [capacity, history] int64 frame slots
  torch::Tensor actions_, rewards_, not_done_;
  std::vector<int64_t> recent_;  // frame slots of the acting environment's current state
  int64_t next_ = 0, size_ = 0, frames_pushed_ = 0;
};

class DeepQModel : public Model {
 public:
  DeepQModel(const Config& c, const torch::Device& device)
      : online_(c, ""),
        target_(c, "target."),
        device_(device),
        env_options_(env_options_from(c)),
        batch_(c.get_int("batch")),
        actions_(c.get_int("actions")),
        update_frequency_(c.get_int("update_frequency")),
        target_update_(c.get_int("target_update")),
        gamma_(c.get_double("gamma")),
        epsilon_(c.get_double("epsilon")),
        rng_(draw_seed()),
        replay_(c.get_int("replay_capacity"), c.get_int("history"), c.get_int("frame_size"),
                device) {
    online_->to(device);
    target_->to(device);
    for (auto& p : target_->parameters()) p.set_requires_grad(false);
    sync_target();
    {
      // The RMSProp averages are allocated here; under this scope the memory profiler files
      // them as optimizer state.
      LayerScope scope("optimizer");
      optimizer_ = std::make_unique<DeepMindRmsProp>(online_->parameters(), c);
    }
    env_ = std::make_unique<SyntheticAtariEnv>(env_options_, draw_seed(), device);
    // Replay start: the paper fills the memory with a uniform random policy before learning.
    replay_.start(env_->frame());
    const int64_t start = std::min(c.get_int("replay_start"), c.get_int("replay_capacity"));
    std::uniform_int_distribution<int64_t> random_action(0, actions_ - 1);
    for (int64_t i = 0; i < start; ++i) {
      const int64_t a = random_action(rng_);
      const EnvStep r = env_->step(a);
      replay_.push(a, r.reward, r.done, env_->frame());
    }
  }

  nn::Module& module() override { return *online_; }

  // tensors[0]: states [B, 4, 84, 84] uint8 (inference input: greedy actions for B states);
  // tensors[1]: [1] int64 seed of the training step's minibatch sampling (see train_step).
  // One unit (sample) per state / minibatch transition.
  Batch make_batch() override {
    auto states = synthetic_env_states(env_options_, batch_, device_);
    auto seed = torch::full({1}, static_cast<int64_t>(draw_seed()), torch::kLong);
    return {{states, seed}, static_cast<double>(batch_)};
  }

  double train_step(const Batch& batch) override {
    // 1) Act `update_frequency` times with the epsilon-greedy online network. The greedy
    //    forward runs on every action (also when the coin says "random") so every step does
    //    the same work.
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    std::uniform_int_distribution<int64_t> random_action(0, actions_ - 1);
    for (int64_t k = 0; k < update_frequency_; ++k) {
      int64_t greedy = 0;
      {
        LayerScope scope("act");
        torch::NoGradGuard no_grad;
        greedy = online_->forward(env_->observation().unsqueeze(0)).argmax(1).item<int64_t>();
      }
      const int64_t a = coin(rng_) < epsilon_ ? random_action(rng_) : greedy;
      const EnvStep r = env_->step(a);
      replay_.push(a, r.reward, r.done, env_->frame());
    }
    // 2) A uniform minibatch from the replay memory. The indices come from the batch's seed,
    //    so one Batch always names the same replay slots: the test's 16 steps on one Batch
    //    then fit the same transitions (except slots the new actions overwrite), and the
    //    runner's batch pool cycles a few index sets. The gather cost is that of any sample.
    torch::Tensor index;
    {
      LayerScope scope("replay.sample");
      auto gen = at::make_generator<at::CPUGeneratorImpl>(
          static_cast<uint64_t>(batch.tensors[1].item<int64_t>()));
      index = torch::randint(0, replay_.size(), {batch_}, gen, torch::kLong);  // [B]
    }
    auto mb = replay_.gather(index);
    // 3) Targets from the target network: y = r + gamma * max_a' Q_target(s', a').
    torch::Tensor y;
    {
      torch::NoGradGuard no_grad;
      auto next_q = target_->forward(mb.next_states);  // [B, actions]
      LayerScope scope("target");
      y = scope.output(mb.rewards + gamma_ * mb.not_done * std::get<0>(next_q.max(1)));  // [B]
    }
    // 4) One RMSProp update of the online network on the Huber (clipped-error) loss.
    {
      LayerScope scope("optimizer");
      optimizer_->zero_grad();
    }
    auto q = online_->forward(mb.states);  // [B, actions]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto q_taken = q.gather(1, mb.actions.unsqueeze(1)).squeeze(1);  // [B]
      loss = scope.output(torch::huber_loss(q_taken, y, at::Reduction::Sum, 1.0));
    }
    loss.backward();
    {
      LayerScope scope("optimizer");
      optimizer_->step();
    }
    // 5) Target network update every C parameter updates.
    if (++updates_ % target_update_ == 0) sync_target();
    return loss.item<double>();
  }

  double infer_step(const Batch& batch) override {
    // Greedy action selection: argmax_a Q(s, a) for each state; the checksum adds the
    // chosen actions' values.
    auto q = online_->forward(batch.tensors[0]);  // [B, actions]
    return std::get<0>(q.max(1)).sum().item<double>();
  }

  // Q-values of each state [B, actions] (their argmax is the greedy action).
  torch::Tensor infer_output(const Batch& batch) override {
    return online_->forward(batch.tensors[0]);
  }

 private:
  void sync_target() {
    LayerScope scope("target_sync");
    torch::NoGradGuard no_grad;
    auto src = online_->parameters();
    auto dst = target_->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }

  DqnNet online_, target_;
  torch::Device device_;
  SyntheticEnvOptions env_options_;
  int64_t batch_, actions_, update_frequency_, target_update_;
  double gamma_, epsilon_;
  std::mt19937_64 rng_;
  ReplayMemory replay_;
  std::unique_ptr<DeepMindRmsProp> optimizer_;
  std::unique_ptr<SyntheticAtariEnv> env_;
  int64_t updates_ = 0;
};

}  // namespace

Workload make_deepq() {
  Workload w;
  w.info = {"deepq",
            {"fathom"},
            "reinforcement learning",
            "Nature DQN: conv 32x8x8/4, 64x4x4/2, 64x3x3/1, FC 512, 18 Q-values; per step 4 "
            "epsilon-greedy actions in a synthetic 84x84x4 Atari-like environment, replay "
            "sampling (32), target network, Huber loss, DeepMind RMSProp",
            "Mnih et al., Human-level control through deep reinforcement learning, Nature 2015 "
            "(architecture, Algorithm 1 and Extended Data Table 1 hyperparameters); Fathom's "
            "deepq workload",
            "samples/s",
            32,
            {"batch=4", "frame_size=36", "conv1=4", "conv2=8", "conv3=8", "hidden=16",
             "replay_capacity=4096", "replay_start=4096"},
            {},
            true};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 32, "minibatch size: transitions sampled per update (paper: 32)");
    c.add_int("actions", 18, "Q-values / legal actions (full Atari set; paper: per game, 4-18)");
    c.add_int("frame_size", 84, "preprocessed frame height and width (paper: 84)", 36);
    c.add_int("history", 4, "frames stacked into a state (paper: agent history length 4)");
    c.add_int("conv1", 32, "filters of conv1, 8x8 stride 4 (paper: 32)");
    c.add_int("conv2", 64, "filters of conv2, 4x4 stride 2 (paper: 64)");
    c.add_int("conv3", 64, "filters of conv3, 3x3 stride 1 (paper: 64)");
    c.add_int("hidden", 512, "units of the fully connected hidden layer (paper: 512)");
    c.add_int("update_frequency", 4, "actions between parameter updates (paper: 4)");
    c.add_int("target_update", 10000, "updates between target network copies (paper: C = 10,000)");
    c.add_int("replay_capacity", 100000,
              "replay memory in transitions (paper: 1,000,000 = 7.1 GB of 84x84 frames; "
              "CPU-sized default 100,000 = 0.7 GB)");
    c.add_int("replay_start", 50000,
              "random-policy transitions stored before learning, at build (paper: 50,000)", 0);
    c.add_double("gamma", 0.99, "discount factor (paper: 0.99)");
    c.add_double("epsilon", 0.1,
                 "exploration rate while acting (paper: final epsilon 0.1 after annealing "
                 "from 1.0 over the first million frames)");
    c.add_double("lr", 0.00025, "RMSProp learning rate (paper: 0.00025)");
    c.add_double("gradient_momentum", 0.95, "RMSProp gradient momentum (paper: 0.95)");
    c.add_double("squared_gradient_momentum", 0.95,
                 "RMSProp squared gradient momentum (paper: 0.95)");
    c.add_double("min_squared_gradient", 0.01,
                 "RMSProp constant added under the square root (paper: 0.01)");
    return c;
  };
  w.build = build_model<DeepQModel>;
  return w;
}

}  // namespace plumb::workloads
