// The alpha-beta model of a data-parallel step (analysis/dist_projection.h), worked by hand.
#include <gtest/gtest.h>

#include "plumb/analysis/dist_projection.h"
#include "plumb/core/errors.h"

namespace plumb {
namespace {

using analysis::DistWorldPoint;

// One worker: two 100 MB buckets launched 0.1 and 0.2 s into a 0.3 s backward, a 1 s step of
// 10 examples. Two workers over the loopback: each bucket's all-reduce takes 0.1 s (100 MB x
// 2(2-1)/2 at 1 GB/s) and ends as backward does; compute 1.05 s. Two workers over a 2 Gbit/s
// (250 MB/s) link: the all-reduces reach 125 MB/s (0.8 s each), half the rate.
std::vector<DistWorldPoint> worlds() {
  DistWorldPoint one;
  one.workers = 1;
  one.link = "none";
  one.step_s = one.compute_s = 1.0;
  one.backward_s = 0.3;
  one.throughput = 10;
  one.buckets = {{100e6, 0.1, 0.1}, {100e6, 0.2, 0.2}};
  DistWorldPoint loopback = one;
  loopback.workers = 2;
  loopback.compute_s = 1.05;
  loopback.step_s = 1.05;
  loopback.throughput = 20 / 1.05;
  loopback.buckets = {{100e6, 0.1, 0.2}, {100e6, 0.2, 0.3}};
  DistWorldPoint shaped = loopback;
  shaped.link = "2gbit";
  shaped.link_bytes_per_s = 250e6;
  shaped.buckets = {{100e6, 0.1, 0.9}, {100e6, 0.2, 1.7}};
  shaped.exposed_s = 1.4;
  shaped.step_s = 2.45;
  return {one, loopback, shaped};
}

TEST(DistProjection, FitsTheInStepBandwidthAndTheLinkEfficiency) {
  const auto w = worlds();
  EXPECT_NEAR(analysis::fit_step_bandwidth(w[1], 0), 1e9, 1);
  EXPECT_NEAR(analysis::fit_step_bandwidth(w[2], 0), 125e6, 1e-3);
  EXPECT_EQ(analysis::fit_step_bandwidth(w[0], 0), 0);
  const auto m = analysis::fit_dist_model(w, 0);
  EXPECT_NEAR(m.cpu_bytes_per_s, 1e9, 1);
  EXPECT_NEAR(m.link_efficiency, 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(m.compute_s, 1.05);
  EXPECT_DOUBLE_EQ(m.units_per_step, 10);
}

TEST(DistProjection, ReproducesTheWorldsItWasFittedOnAndScalesByHand) {
  const auto m = analysis::fit_dist_model(worlds(), 0);
  // The loopback world: the last all-reduce ends with backward, nothing exposed.
  const auto two = analysis::project_world(m, 2, 0, 0);
  EXPECT_NEAR(two.exposed_s, 0, 1e-12);
  EXPECT_NEAR(two.step_s, 1.05, 1e-12);
  EXPECT_NEAR(two.efficiency, 1 / 1.05, 1e-12);
  // The shaped world: 0.1 + 0.8 = 0.9, then 0.9 + 0.8 = 1.7, backward ended at 0.3.
  const auto slow = analysis::project_world(m, 2, 250e6, 0);
  EXPECT_NEAR(slow.exposed_s, 1.4, 1e-12);
  EXPECT_NEAR(slow.step_s, 2.45, 1e-12);
  EXPECT_FALSE(slow.cpu_bound);
  // Four workers over the loopback: each all-reduce moves 1.5x the bytes (0.15 s): 0.25, then
  // 0.40, so 0.1 s exposed; with 1 ms per ring step (6 steps) 6 ms more per bucket.
  EXPECT_NEAR(analysis::project_world(m, 4, 0, 0).exposed_s, 0.1, 1e-12);
  EXPECT_NEAR(analysis::project_world(m, 4, 0, 1e-3).exposed_s, 0.112, 1e-12);
  // A 100 Gbit/s link at half its rate would beat what the CPU moved here: capped by the CPU.
  const auto fast = analysis::project_world(m, 64, 12.5e9, 0);
  EXPECT_TRUE(fast.cpu_bound);
  EXPECT_DOUBLE_EQ(fast.beta_bytes_per_s, 1e9);
  EXPECT_NEAR(fast.communication_s, 2 * 100e6 * (2.0 * 63 / 64) / 1e9, 1e-12);
}

TEST(DistProjection, NeedsOneWorkerAndAMultiWorkerWorld) {
  auto w = worlds();
  EXPECT_THROW(analysis::fit_dist_model({w[1], w[2]}, 0), UsageError);
  EXPECT_THROW(analysis::fit_dist_model({w[0]}, 0), UsageError);
}

}  // namespace
}  // namespace plumb
