// Test helper: writes a hand-made operator profile into a results store, so analyses of stored
// profiles (similarity) can be tested on exact shares without running a workload.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plumb/platform/environment.h"
#include "plumb/profile/profiler.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"

namespace plumb::testing {

// Constructors rather than aggregates: brace-initialising only some members of an aggregate
// warns under -Wextra.
struct FakeOp {
  FakeOp(std::string name_, std::string category_, double self_s_, std::string scope_ = "forward")
      : name(std::move(name_)),
        category(std::move(category_)),
        self_s(self_s_),
        scope(std::move(scope_)) {}
  std::string name;
  std::string category;
  double self_s;
  std::string scope;
};

struct FakeProfile {
  FakeProfile(std::string workload_, std::string mode_, int threads_, std::vector<FakeOp> ops_)
      : workload(std::move(workload_)),
        mode(std::move(mode_)),
        threads(threads_),
        ops(std::move(ops_)) {}
  std::string workload;
  std::string mode;
  int threads;
  std::vector<FakeOp> ops;
  std::string tag;
  std::string group = "g";
  run::RunStatus status = run::RunStatus::kOk;
  int64_t batch = 8;
  double learning_step_s = 0;
  int replayed_steps = 0;
};

// Stores `p` (step time = operator time + 10% overhead); returns its id.
inline int64_t save_fake_profile(store::ResultsStore& store, const FakeProfile& p) {
  run::RunOptions o;
  o.workload = p.workload;
  o.mode = p.mode == "train" ? Mode::kTrain : Mode::kInfer;
  o.config.add_int("batch", p.batch, "mini-batch size");
  o.threads = p.threads;
  o.device = "cpu";
  profile::ProfileResult r;
  r.status = p.status;
  r.threads = p.threads;
  r.command = "plumb profile " + p.workload;
  r.started_at = "2026-01-01T00:00:00Z";
  r.profile.steps = 3;
  r.learning_step_s = p.learning_step_s;
  r.replayed_steps = p.replayed_steps;
  for (const FakeOp& f : p.ops) {
    profile::OpStat s;
    s.name = f.name;
    s.category = f.category;
    s.scope = f.scope;
    s.kind = profile::kCosted;
    s.calls = 1;
    s.self_s = s.inclusive_s = f.self_s;
    r.profile.ops.push_back(s);
    r.profile.op_self_s += f.self_s;
  }
  r.profile.step_s = r.profile.op_self_s * 1.1;
  r.profile.overhead_s = r.profile.step_s - r.profile.op_self_s;
  return store.save_profile(o, r, platform::Environment{}, p.group, p.tag);
}

}  // namespace plumb::testing
