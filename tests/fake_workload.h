// A scripted fake workload for runner and profiler tests: a cold start, then constant steps,
// and optionally a NaN loss, an exception or an out-of-memory at a chosen step.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
#include <new>
#include <stdexcept>

#include "plumb/core/workload.h"
#include "plumb/run/runner.h"
#include "workload_test_util.h"

namespace plumb::testing {

enum class Behaviour { kSteady, kNaN, kThrow, kBadAlloc };

class FakeModel : public Model {
 public:
  FakeModel(Behaviour b, int fail_at)
      : behaviour_(b), fail_at_(fail_at), net_(torch::nn::Linear(2, 2)) {}
  torch::nn::Module& module() override { return *net_; }
  Batch make_batch() override { return {{torch::zeros({1})}, 4.0}; }
  double train_step(const Batch&) override { return step(); }
  double infer_step(const Batch&) override { return step(); }

 private:
  double step() {
    ++calls_;
    // The first iterations are slow (a cold start), then constant: what warm-up must skip.
    const int micros = calls_ <= 3 ? 6000 : 2000;
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    while (std::chrono::steady_clock::now() < until) {
    }
    if (behaviour_ == Behaviour::kNaN && calls_ == fail_at_) return std::nan("");
    if (behaviour_ == Behaviour::kThrow && calls_ == fail_at_) throw std::runtime_error("boom");
    if (behaviour_ == Behaviour::kBadAlloc && calls_ == fail_at_) throw std::bad_alloc();
    return 1.0;
  }
  Behaviour behaviour_;
  int fail_at_;  // the step (1-based) at which the scripted failure happens
  int calls_ = 0;
  torch::nn::Linear net_;
};

// fail_at: the step that fails (default: 20 for kNaN, 5 for the others).
inline Workload fake_workload(Behaviour b, int fail_at = 0) {
  if (fail_at == 0) fail_at = b == Behaviour::kNaN ? 20 : 5;
  Workload w = test_workload_shell("fake", "scripted steps", 4);
  w.build = [b, fail_at](const Config&, const torch::Device&) -> std::unique_ptr<Model> {
    return std::make_unique<FakeModel>(b, fail_at);
  };
  return w;
}

// Run options for a fake workload: one thread, a loose 5% CI target, a 5 s budget.
inline run::RunOptions fake_run_options(const Workload& w) {
  run::RunOptions o;
  o.workload = w.info.name;
  o.config = w.default_config();
  o.threads = 1;
  o.target_ci = 0.05;
  o.max_time_s = 5;
  return o;
}

}  // namespace plumb::testing
