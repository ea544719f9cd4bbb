// Synthetic Atari-like environment (see synthetic_env.h).
#include "plumb/workloads/common/synthetic_env.h"

#include <algorithm>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>

#include "plumb/core/layer_scope.h"

namespace plumb::workloads {

SyntheticEnvOptions env_options_from(const Config& c) {
  SyntheticEnvOptions o;
  o.frame_size = c.get_int("frame_size");
  o.history = c.get_int("history");
  o.actions = c.get_int("actions");
  return o;
}

namespace {

int64_t ball_size(int64_t s) {
  return std::max<int64_t>(1, s / 28);
}  // 3 px at 84
int64_t paddle_width(int64_t s) {
  return std::max<int64_t>(2, s / 8);
}  // 10 px at 84
int64_t paddle_row(int64_t s) {
  return s - 4;
}  // 2 rows high
int64_t brick_bottom(int64_t s) {
  return s / 4;
}  // bricks fill rows [s/8, s/4)

}  // namespace

SyntheticAtariEnv::SyntheticAtariEnv(const SyntheticEnvOptions& options, uint64_t seed,
                                     const torch::Device& device)
    : options_(options), device_(device) {
  TORCH_CHECK(options_.frame_size >= 8 && options_.history >= 1 && options_.actions >= 1 &&
                  options_.min_episode >= 1 && options_.max_episode >= options_.min_episode,
              "invalid synthetic environment options");
  reset(seed);
}

void SyntheticAtariEnv::reset(uint64_t seed) {
  LayerScope scope("env.reset");
  rng_.seed(seed);
  scroll_ = 0;
  if (background_.defined() && seed == seed_) {  // same stream: keep this seed's texture
    new_episode();
    return;
  }
  seed_ = seed;
  const int64_t s = options_.frame_size;
  // Background texture of this seed: dim noise plus two bright bands ("bricks"), drawn on
  // the CPU with a private generator (the global one stays untouched) and moved once.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto texture = torch::randint(0, 48, {s, s}, gen, torch::TensorOptions().dtype(torch::kUInt8));
  const int64_t band = brick_bottom(s) - s / 8;  // two rows of bricks, two shades
  texture.narrow(0, s / 8, band / 2).add_(120);
  texture.narrow(0, s / 8 + band / 2, band - band / 2).add_(80);
  background_ = texture.to(device_);
  new_episode();
}

void SyntheticAtariEnv::new_episode() {
  const int64_t s = options_.frame_size;
  std::uniform_int_distribution<int64_t> length(options_.min_episode, options_.max_episode);
  std::uniform_int_distribution<int64_t> x(0, s - ball_size(s));
  std::uniform_int_distribution<int64_t> speed(1, 2);
  length_ = length(rng_);
  t_ = 0;
  ball_x_ = x(rng_);
  ball_y_ = brick_bottom(s) + 2;  // serve just below the bricks, moving up
  ball_vx_ = speed(rng_) * (rng_() % 2 == 0 ? 1 : -1);
  ball_vy_ = -speed(rng_);
  paddle_x_ = (s - paddle_width(s)) / 2;
  render();
  observation_ = frame_.unsqueeze(0).repeat({options_.history, 1, 1});  // [history, S, S]
}

void SyntheticAtariEnv::render() {
  const int64_t s = options_.frame_size, b = ball_size(s);
  frame_ = torch::roll(background_, {scroll_}, {1});  // [S, S] scrolled background
  frame_.narrow(0, paddle_row(s), 2).narrow(1, paddle_x_, paddle_width(s)).fill_(200);
  frame_.narrow(0, ball_y_, b).narrow(1, ball_x_, b).fill_(255);
}

EnvStep SyntheticAtariEnv::step(int64_t action) {
  LayerScope scope("env.step");
  const int64_t s = options_.frame_size, b = ball_size(s), w = paddle_width(s);
  EnvStep result;
  // Game logic (plain C++, a few integer operations).
  const int64_t move = action % 3;  // 0 stay, 1 left, 2 right
  paddle_x_ = std::clamp<int64_t>(paddle_x_ + (move == 1 ? -2 : move == 2 ? 2 : 0), 0, s - w);
  ball_x_ += ball_vx_;
  ball_y_ += ball_vy_;
  if (ball_x_ < 0 || ball_x_ > s - b) {
    ball_vx_ = -ball_vx_;
    ball_x_ = std::clamp<int64_t>(ball_x_, 0, s - b);
  }
  if (ball_y_ < brick_bottom(s)) {  // hit the bricks: +1, bounce down
    result.reward = 1.0f;
    ball_vy_ = -ball_vy_;
    ball_y_ = brick_bottom(s);
  }
  if (ball_y_ >= paddle_row(s) - b) {  // reached the paddle row: a catch scores +1, bounce
    const bool caught = ball_x_ + b > paddle_x_ && ball_x_ < paddle_x_ + w;
    result.reward += caught ? 1.0f : 0.0f;
    ball_vy_ = -ball_vy_;
    ball_y_ = paddle_row(s) - b - 1;
  }
  scroll_ = (scroll_ + 1) % s;
  if (++t_ >= length_) {
    result.done = true;
    new_episode();
    return result;
  }
  render();
  // Frame stacking: drop the oldest frame, append the new one.
  observation_ = torch::cat({observation_.narrow(0, 1, options_.history - 1), frame_.unsqueeze(0)},
                            0);  // [history, S, S]
  return result;
}

torch::Tensor synthetic_env_states(const SyntheticEnvOptions& options, int64_t count,
                                   const torch::Device& device) {
  const uint64_t seed = draw_seed();
  SyntheticAtariEnv env(options, seed, device);
  std::mt19937_64 rng(seed);
  std::vector<torch::Tensor> states;
  states.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t skip = 1 + static_cast<int64_t>(rng() % 8);
    for (int64_t k = 0; k < skip; ++k)
      env.step(static_cast<int64_t>(rng() % static_cast<uint64_t>(options.actions)));
    states.push_back(env.observation());
  }
  return torch::stack(states, 0);  // [count, history, S, S]
}

uint64_t draw_seed() {
  return static_cast<uint64_t>(
      torch::randint(0, int64_t{1} << 62, {1}, torch::kLong).item<int64_t>());
}

}  // namespace plumb::workloads
