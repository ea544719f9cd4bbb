// a3c: Asynchronous Advantage Actor-Critic (Mnih et al., Asynchronous Methods for Deep
// Reinforcement Learning, ICML 2016), TBD's reinforcement-learning benchmark, learning from a
// synthetic Atari-like environment (common/synthetic_env.h).
//
// Network (the paper's feed-forward Atari agent, Sec. 8 of its supplement; also both of TBD's
// implementations): input 84x84x4 uint8 frames scaled to [0, 1], conv 16 8x8 stride 4, conv
// 32 4x4 stride 2, fully connected 256, ReLU after each; a softmax policy over the actions
// and a linear value, both on the 256 features. 4 actions: Breakout, the game TBD's MXNet
// and TensorFlow A3C both train on. Parameters, term by term:
//   conv1 4*16*8*8+16 = 4,112   conv2 16*32*4*4+32 = 8,224   fc 2592*256+256 = 663,808
//   (2592 = 32 x 9 x 9)   policy 256*4+4 = 1,028   value 256+1 = 257   total 677,429.
// (The paper's optional LSTM-256 variant is not built: TBD ran the feed-forward network.)
//
// Algorithm (the paper's Algorithm S3, Hogwild!): `actors` actor-learner threads, each with
// its own environment and a local copy of the network. One training step = every actor, in
// parallel on its own std::thread: copy the shared parameters into its local network, act
// t_max = 5 steps (sampling from its policy), compute n-step returns R bootstrapped from
// V(s_t_max) (0 after a terminal state), compute on the local copy the loss
//   sum_t [ -log pi(a_t|s_t) (R_t - V(s_t)) ] + 0.5 sum_t (R_t - V(s_t))^2 - 0.01 H(pi(.|s_t))
// (advantage held constant in the policy term), backpropagate it, and apply the local
// gradients to the SHARED parameters with the paper's shared RMSProp (statistics g shared by
// all threads, no locks): g = 0.99 g + 0.01 d^2, theta -= 7e-4 * d / sqrt(g + 0.1).
// (torch::optim::RMSprop would put eps outside the square root; written out here.)
// The update pass re-runs the 5 states as one [5, 4, 84, 84] batch, as TBD's TensorFlow
// worker does (acting forwards are batch-1 and keep no graph).
//
// Threads: each actor thread runs with max(1, T / actors) intra-op threads, T being the
// caller's torch thread count, and inherits the caller's thread-local state (grad mode and
// the profiler's RecordFunction callbacks) through at::ThreadLocalStateGuard.
#include "plumb/workloads/tbd/a3c.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <ATen/autocast_mode.h>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/layers.h"
#include "plumb/workloads/common/model_builder.h"
#include "plumb/workloads/common/synthetic_env.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

struct PolicyValue {
  torch::Tensor logits;  // [B, actions]
  torch::Tensor value;   // [B, 1]
};

struct ActorCriticImpl : nn::Module {
  explicit ActorCriticImpl(const Config& c)
      : conv1(register_module(
            "conv1",
            nn::Conv2d(nn::Conv2dOptions(c.get_int("history"), c.get_int("conv1"), 8).stride(4)))),
        conv2(register_module(
            "conv2",
            nn::Conv2d(nn::Conv2dOptions(c.get_int("conv1"), c.get_int("conv2"), 4).stride(2)))),
        fc(register_module(
            "fc", nn::Linear(c.get_int("conv2") * spatial(c) * spatial(c), c.get_int("hidden")))),
        policy(register_module("policy", nn::Linear(c.get_int("hidden"), c.get_int("actions")))),
        value(register_module("value", nn::Linear(c.get_int("hidden"), 1))) {}

  // Spatial size after the two convolutions: 84 -> 20 -> 9.
  static int64_t spatial(const Config& c) {
    return conv_out(conv_out(c.get_int("frame_size"), 8, 4), 4, 2);
  }

  // frames: [B, 4, 84, 84] uint8
  PolicyValue forward(const torch::Tensor& frames) {
    torch::Tensor x;
    {
      LayerScope scope("preprocess");
      x = scope.output(frames.to(torch::kFloat).div_(255.0));  // [B, 4, 84, 84] in [0, 1]
    }
    x = hidden_layer("conv1", conv1, x);       // [B, 16, 20, 20]
    x = hidden_layer("conv2", conv2, x);       // [B, 32, 9, 9]
    x = hidden_layer("fc", fc, x.flatten(1));  // [B, 256]
    return {run_layer("policy", policy, x),    // [B, actions] (softmax in the loss)
            run_layer("value", value, x)};     // [B, 1]
  }

  template <typename Layer>
  torch::Tensor hidden_layer(const char* name, Layer& layer, const torch::Tensor& x) {
    LayerScope scope(name);
    return scope.output(torch::relu(layer->forward(x)));
  }

  nn::Conv2d conv1, conv2;
  nn::Linear fc, policy, value;
};
TORCH_MODULE(ActorCritic);

// Persistent actor threads: run() wakes every thread once to do work(i) and waits for all.
// Each run carries the caller's thread-local state (grad mode, RecordFunction callbacks, so
// a profiler attached on the caller's thread observes the actors too).
class ActorThreads {
 public:
  ActorThreads(int64_t count, std::function<void(int64_t)> work) : work_(std::move(work)) {
    for (int64_t i = 0; i < count; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  ~ActorThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ActorThreads(const ActorThreads&) = delete;
  ActorThreads& operator=(const ActorThreads&) = delete;

  void run() {
    const int64_t count = static_cast<int64_t>(threads_.size());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      state_ = std::make_shared<at::ThreadLocalState>();
      autocast_cache_ = at::autocast::is_autocast_cache_enabled();
      intra_op_threads_ = std::max<int64_t>(1, at::get_num_threads() / count);
      pending_ = count;
      error_ = nullptr;
      ++generation_;
    }
    start_.notify_all();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void loop(int64_t i) {
    uint64_t seen = 0;
    int64_t threads_set = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      auto state = state_;
      const bool autocast_cache = autocast_cache_;
      const int64_t threads = intra_op_threads_;
      lock.unlock();
      try {
        // Intra-op threads are per calling thread (OpenMP); set once per change.
        if (threads != threads_set) at::set_num_threads(static_cast<int>(threads));
        threads_set = threads;
        at::ThreadLocalStateGuard guard(*state);
        // Autocast's cache switch is not part of ThreadLocalState: carried by hand (bf16
        // training turns the cache off, precision_session.h).
        at::autocast::set_autocast_cache_enabled(autocast_cache);
        work_(i);
      } catch (...) {
        std::lock_guard<std::mutex> error_lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::function<void(int64_t)> work_;
  std::mutex mutex_, error_mutex_;
  std::condition_variable start_, done_;
  std::shared_ptr<at::ThreadLocalState> state_;
  bool autocast_cache_ = true;
  int64_t intra_op_threads_ = 1, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

class A3cModel : public Model {
 public:
  A3cModel(const Config& c, const torch::Device& device)
      : shared_(c),
        device_(device),
        env_options_(env_options_from(c)),
        actors_(c.get_int("actors")),
        t_max_(c.get_int("batch")),
        gamma_(c.get_double("gamma")),
        entropy_beta_(c.get_double("entropy_beta")),
        value_coef_(c.get_double("value_coef")),
        lr_(c.get_double("lr")),
        alpha_(c.get_double("alpha")),
        eps_(c.get_double("eps")) {
    shared_->to(device);
    shared_params_ = shared_->parameters();
    {
      // The shared RMSProp squares; under this scope the memory profiler files them as
      // optimizer state.
      LayerScope scope("optimizer");
      for (const auto& p : shared_params_) square_avg_.push_back(torch::zeros_like(p));
    }
    for (int64_t i = 0; i < actors_; ++i) {
      Actor a{ActorCritic(c), nullptr, std::mt19937_64(draw_seed()), 0.0, 0};
      a.local->to(device);
      a.env = std::make_unique<SyntheticAtariEnv>(env_options_, draw_seed(), device);
      actors_state_.push_back(std::move(a));
    }
    threads_ = std::make_unique<ActorThreads>(actors_, [this](int64_t i) { actor_step(i); });
  }

  nn::Module& module() override { return *shared_; }

  // tensors[0]: states [actors * t_max, 4, 84, 84] uint8, the frames one training step
  // processes (inference input: the policy for each); tensors[1]: [actors] int64 seeds, the
  // start of each actor's rollout in the training step (see actor_step). Units: frames
  // (agent steps), actors * t_max per training step, one per state in inference.
  Batch make_batch() override {
    auto states = synthetic_env_states(env_options_, actors_ * t_max_, device_);
    auto seeds = torch::randint(0, int64_t{1} << 62, {actors_}, torch::kLong);
    current_ = nullptr;
    return {{states, seeds}, static_cast<double>(actors_ * t_max_)};
  }

  double train_step(const Batch& batch) override {
    current_ = &batch;
    threads_->run();
    current_ = nullptr;
    double loss = 0;
    for (const auto& a : actors_state_) loss += a.loss;
    return loss / static_cast<double>(actors_);  // mean of the actors' rollout losses
  }

  double infer_step(const Batch& batch) override {
    auto out = shared_->forward(batch.tensors[0]);  // [B, actions], [B, 1]
    auto probs = torch::softmax(out.logits, 1);     // [B, actions]
    return (std::get<0>(probs.max(1)).sum() + out.value.sum()).item<double>();
  }

 private:
  struct Actor {
    ActorCritic local;
    std::unique_ptr<SyntheticAtariEnv> env;
    std::mt19937_64 rng;
    double loss;
    uint64_t seed;
  };

  // One actor-learner iteration of Algorithm S3 (runs on actor thread i).
  void actor_step(int64_t i) {
    Actor& a = actors_state_[static_cast<size_t>(i)];
    auto local_params = a.local->parameters();
    {
      LayerScope scope("sync");  // theta' <- theta
      torch::NoGradGuard no_grad;
      for (size_t j = 0; j < local_params.size(); ++j) local_params[j].copy_(shared_params_[j]);
    }
    // The rollout starts from the batch's seed for this actor, so one Batch always replays
    // the same episode start (the test's 16 steps on one Batch fit the same experience);
    // the work is that of any 5 steps of an episode.
    const auto seed = static_cast<uint64_t>(current_->tensors[1][i].item<int64_t>());
    a.env->reset(seed);
    a.rng.seed(seed);
    std::vector<torch::Tensor> states;
    std::vector<int64_t> actions;
    std::vector<float> rewards;
    bool terminal = false;
    for (int64_t t = 0; t < t_max_ && !terminal; ++t) {
      states.push_back(a.env->observation());  // [4, 84, 84]
      std::vector<float> probs;
      {
        LayerScope scope("act");
        torch::NoGradGuard no_grad;
        // Read as fp32 whatever the run's precision (bf16 logits under autocast).
        auto p = torch::softmax(a.local->forward(states.back().unsqueeze(0)).logits, 1)
                     .to(torch::kCPU, torch::kFloat)
                     .contiguous();  // [1, actions]
        probs.assign(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
      }
      std::discrete_distribution<int64_t> pick(probs.begin(), probs.end());
      actions.push_back(pick(a.rng));
      const EnvStep r = a.env->step(actions.back());
      rewards.push_back(r.reward);
      terminal = r.done;
    }
    // n-step returns, bootstrapped from V(s_t_max) unless the episode ended.
    double ret = 0;
    if (!terminal) {
      LayerScope scope("bootstrap");
      torch::NoGradGuard no_grad;
      ret = a.local->forward(a.env->observation().unsqueeze(0)).value.item<double>();
    }
    const int64_t n = static_cast<int64_t>(states.size());
    std::vector<float> returns(static_cast<size_t>(n));
    for (int64_t t = n - 1; t >= 0; --t) {
      ret = rewards[static_cast<size_t>(t)] + gamma_ * ret;
      returns[static_cast<size_t>(t)] = static_cast<float>(ret);
    }
    // Loss and gradients on the local copy.
    a.local->zero_grad();
    auto out = a.local->forward(torch::stack(states, 0));  // [n, actions], [n, 1]
    torch::Tensor loss;
    {
      LayerScope scope("loss");
      auto target = torch::tensor(returns, torch::TensorOptions().device(device_));  // [n]
      auto taken = torch::tensor(actions, torch::TensorOptions().device(device_));   // [n]
      auto log_probs = torch::log_softmax(out.logits, 1);                            // [n, A]
      auto advantage = target - out.value.squeeze(1);                                // [n]
      auto policy_loss =
          -(log_probs.gather(1, taken.unsqueeze(1)).squeeze(1) * advantage.detach()).sum();
      auto value_loss = advantage.pow(2).sum();
      auto entropy = -(log_probs.exp() * log_probs).sum();
      loss = scope.output(policy_loss + value_coef_ * value_loss - entropy_beta_ * entropy);
    }
    loss.backward();
    {
      // Shared RMSProp, Hogwild: no lock around the shared statistics and parameters.
      LayerScope scope("optimizer");
      torch::NoGradGuard no_grad;
      for (size_t j = 0; j < local_params.size(); ++j) {
        const auto& d = local_params[j].grad();
        square_avg_[j].mul_(alpha_).addcmul_(d, d, 1 - alpha_);
        shared_params_[j].addcdiv_(d, square_avg_[j].add(eps_).sqrt_(), -lr_);
      }
    }
    a.loss = loss.item<double>();
  }

  ActorCritic shared_;
  torch::Device device_;
  SyntheticEnvOptions env_options_;
  int64_t actors_, t_max_;
  double gamma_, entropy_beta_, value_coef_, lr_, alpha_, eps_;
  std::vector<torch::Tensor> shared_params_, square_avg_;
  std::vector<Actor> actors_state_;
  const Batch* current_ = nullptr;         // the batch of the running training step
  std::unique_ptr<ActorThreads> threads_;  // last: joined before the actors are destroyed
};

}  // namespace

Workload make_a3c() {
  Workload w;
  w.info = {"a3c",
            {"tbd"},
            "reinforcement learning",
            "A3C, feed-forward Atari agent: conv 16x8x8/4, 32x4x4/2, FC 256, softmax policy "
            "(4 actions) + value; 16 Hogwild actor-learner threads, 5-step rollouts in a "
            "synthetic 84x84x4 Atari-like environment, shared RMSProp",
            "Mnih et al., Asynchronous Methods for Deep Reinforcement Learning, ICML 2016 "
            "(network, Algorithm S3, shared RMSProp, t_max 5, entropy 0.01); TBD (IISWC 2018) "
            "A3C benchmark on Atari (Breakout, 4x84x84 inputs)",
            "frames/s",
            5,
            {"actors=2", "frame_size=36", "conv1=4", "conv2=8", "hidden=16"},
            {},
            true};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 5, "rollout length t_max: states per actor update (paper: 5)");
    c.add_int("actors", 16, "asynchronous actor-learner threads (paper: 16)");
    c.add_int("actions", 4, "policy outputs: Breakout's action set (TBD's game)");
    c.add_int("frame_size", 84, "preprocessed frame height and width (paper: 84)", 20);
    c.add_int("history", 4, "frames stacked into a state (paper: 4)");
    c.add_int("conv1", 16, "filters of conv1, 8x8 stride 4 (paper: 16)");
    c.add_int("conv2", 32, "filters of conv2, 4x4 stride 2 (paper: 32)");
    c.add_int("hidden", 256, "units of the fully connected layer (paper: 256)");
    c.add_double("gamma", 0.99, "discount factor (paper: 0.99)");
    c.add_double("entropy_beta", 0.01, "entropy regularisation weight (paper: 0.01)");
    c.add_double("value_coef", 0.5, "weight of the squared-advantage value loss (0.5)");
    c.add_double("lr", 7e-4,
                 "shared RMSProp learning rate (paper: sampled from LogUniform(1e-4, 1e-2); "
                 "7e-4 is the common fixed choice)");
    c.add_double("alpha", 0.99, "shared RMSProp decay (paper: 0.99)");
    c.add_double("eps", 0.1, "shared RMSProp epsilon, under the square root (paper: 0.1)");
    return c;
  };
  w.build = build_model<A3cModel>;
  return w;
}

}  // namespace plumb::workloads
