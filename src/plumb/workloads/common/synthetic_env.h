// A synthetic Atari-like environment for the reinforcement-learning workloads (deepq, a3c).
//
// No emulator is available (and none is needed to measure the learner): what the network and
// the replay memory see is what the Arcade Learning Environment delivers after the standard
// DQN preprocessing (Mnih et al. 2015, "Methods"): 84x84 single-channel uint8 frames, the last
// `history` (4) of them stacked into the agent's state. The frame source is cheap,
// deterministic per seed and has moving structure, so consecutive frames differ the way game
// frames do: a textured background that scrolls one pixel per step, a ball that bounces off
// the walls, the bricks and the paddle, and a paddle at the bottom moved by the action
// (Breakout-like). Reward: +1 when the ball hits the bricks and +1 when the paddle catches it
// (sparse: about 0.01-0.02 per step for random play at 84x84; the catches depend on the
// actions, so a learner has something to learn). Each episode serves the ball just below
// the bricks, moving up. Episodes end after a length drawn uniformly from
// [min_episode, max_episode] agent steps; the next observation is then the first state of a
// new episode (its first frame repeated `history` times, as frame-stacking wrappers do).
//
// Cost: rendering and frame stacking are LibTorch ops (roll, fill_, cat) under the layer
// "env.step", so the profiler costs them like any other op; the game logic (a few integer
// updates per step) is plain C++ and far below 1% of a step.
#pragma once

#include <cstdint>
#include <random>

#include <torch/torch.h>

#include "plumb/core/config.h"

namespace plumb::workloads {

struct SyntheticEnvOptions {
  int64_t frame_size = 84;     // frames are frame_size x frame_size (DQN preprocessing: 84)
  int64_t history = 4;         // frames stacked into one state (DQN: 4)
  int64_t actions = 18;        // legal actions; action % 3 moves the paddle (stay/left/right)
  int64_t min_episode = 200;   // episode length in agent steps, uniform in [min, max]
  int64_t max_episode = 2000;  //
};

// The environment a DQN-family workload's config describes (its frame_size, history and
// actions); episode lengths keep their defaults.
SyntheticEnvOptions env_options_from(const Config& c);

struct EnvStep {
  float reward = 0;   // 0 or +1 (within DQN's reward clipping range [-1, 1])
  bool done = false;  // the episode ended; observation() is the new episode's first state
};

class SyntheticAtariEnv {
 public:
  SyntheticAtariEnv(const SyntheticEnvOptions& options, uint64_t seed, const torch::Device& device);

  // Starts a new episode stream from `seed` (background, dynamics and lengths all follow it).
  void reset(uint64_t seed);

  // One agent step with `action` in [0, actions).
  EnvStep step(int64_t action);

  const torch::Tensor& observation() const { return observation_; }  // [history, S, S] uint8
  const torch::Tensor& frame() const { return frame_; }              // [S, S] uint8, latest
  const SyntheticEnvOptions& options() const { return options_; }

 private:
  void new_episode();
  void render();  // draws frame_ from the game state

  SyntheticEnvOptions options_;
  torch::Device device_;
  std::mt19937_64 rng_;
  uint64_t seed_ = 0;
  torch::Tensor background_;   // [S, S] uint8 texture of this seed
  torch::Tensor frame_;        // [S, S] uint8
  torch::Tensor observation_;  // [history, S, S] uint8
  int64_t t_ = 0, length_ = 0, scroll_ = 0;
  int64_t ball_x_ = 0, ball_y_ = 0, ball_vx_ = 1, ball_vy_ = 1, paddle_x_ = 0;
};

// `count` states [count, history, S, S] uint8 from independent environments seeded from
// torch's global generator, each advanced a random number of steps with random actions:
// states as a learner sees them (inference inputs).
torch::Tensor synthetic_env_states(const SyntheticEnvOptions& options, int64_t count,
                                   const torch::Device& device);

// A 63-bit seed drawn from torch's global generator (so the runner's seed fixes it).
uint64_t draw_seed();

}  // namespace plumb::workloads
