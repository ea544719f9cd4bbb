// The operator timer of a device-clock profile (profile/device_op_timer.h) on the CPU, where
// the device's clock is the host's: a training step's outermost calls (forward operators and
// backward nodes, never the operators inside them), their host and device intervals agreeing,
// their kinds (a dtype conversion is compute, .item() a synchronisation), and the step's
// breakdown from them. On a GPU the same callbacks mark CUDA events instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "plumb/core/errors.h"
#include "plumb/profile/device_op_timer.h"

namespace plumb {
namespace {

using profile::DeviceOpInterval;
using profile::DeviceWork;

const DeviceOpInterval* find(const std::vector<DeviceOpInterval>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

TEST(DeviceOpTimer, ATrainingStepsOutermostCallsOnTheCpuClock) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
  const auto x = torch::randn({8, 16});
  const auto y = torch::randint(4, {8});
  profile::DeviceOpTimer timer(torch::kCPU);
  timer.begin_step();
  // [8, 16] -> [8, 32] -> [8, 4]; the loss in double precision.
  const auto logits = net->forward(x).to(torch::kFloat64);
  const auto loss = torch::nn::functional::cross_entropy(logits, y);
  loss.backward();
  const double loss_value = loss.item<double>();
  timer.end_step();
  const std::vector<DeviceOpInterval> ops = timer.intervals();
  const double step = timer.step_seconds();
  ASSERT_TRUE(std::isfinite(loss_value));
  ASSERT_FALSE(ops.empty());
  std::string names;
  for (const auto& op : ops) names += op.name + " ";
  SCOPED_TRACE(names);

  // Outermost only: the loss, not the log_softmax and nll_loss inside it (the C++ frontend's
  // linear layers call addmm themselves); the backward nodes by their own names, not the
  // engine's wrapper nor the mm inside them.
  EXPECT_NE(find(ops, "aten::addmm"), nullptr);
  EXPECT_NE(find(ops, "aten::cross_entropy_loss"), nullptr);
  EXPECT_EQ(find(ops, "aten::log_softmax"), nullptr);
  EXPECT_EQ(find(ops, "aten::nll_loss_nd"), nullptr);
  EXPECT_NE(find(ops, "AddmmBackward0"), nullptr);
  EXPECT_EQ(find(ops, "aten::mm"), nullptr);
  for (const auto& op : ops)
    EXPECT_EQ(op.name.find("evaluate_function"), std::string::npos) << op.name;

  // A dtype conversion stays on the device: compute. Reading the loss is a synchronisation.
  const DeviceOpInterval* to = find(ops, "aten::to");
  ASSERT_NE(to, nullptr);
  EXPECT_EQ(to->work, DeviceWork::kCompute);
  const DeviceOpInterval* item = find(ops, "aten::item");
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->work, DeviceWork::kSynchronization);

  // On the CPU the device's clock is the host's: both intervals agree (each mark is read next
  // to its host time; the tolerance only allows for the thread being preempted between the
  // two reads), in the step, in order, one call after another (this step runs on one thread).
  double previous_end = 0;
  for (const auto& op : ops) {
    EXPECT_NEAR(op.device_start_s, op.host_start_s, 5e-3) << op.name;
    EXPECT_NEAR(op.device_end_s, op.host_end_s, 5e-3) << op.name;
    EXPECT_GE(op.device_end_s, op.device_start_s) << op.name;
    EXPECT_GE(op.device_start_s, previous_end - 1e-9) << op.name << " overlaps the call before";
    EXPECT_LE(op.device_end_s, step + 1e-9) << op.name;
    previous_end = op.device_end_s;
  }

  // Outermost calls never overlap, so their device times add up to the busy time.
  const auto b = profile::device_step_breakdown(0, step, ops);
  EXPECT_NEAR(b.op_device_sum_s, b.busy_s, 1e-9);
  EXPECT_GT(b.utilization(), 0);
  EXPECT_LE(b.utilization(), 1 + 1e-9);
}

TEST(DeviceOpTimer, CallsOutsideAStepAreNotKept) {
  profile::DeviceOpTimer timer(torch::kCPU);
  timer.begin_step();
  const auto a = torch::ones({4}) + 1;  // [4]
  timer.end_step();
  const auto b = a * 2;  // after the step
  const auto ops = timer.intervals();
  ASSERT_EQ(ops.size(), 2u) << "ones and add";
  EXPECT_EQ(ops[0].name, "aten::ones");
  EXPECT_EQ(ops[1].name, "aten::add");
  EXPECT_EQ(b.sum().item<double>(), 16);
  // A new step forgets the last one's calls.
  timer.begin_step();
  timer.end_step();
  EXPECT_TRUE(timer.intervals().empty());
}

// A copy whose source and destination are on different devices is a transfer. LibTorch's meta
// device (shapes without storage) stands in for a GPU here; a copy within the CPU is compute.
TEST(DeviceOpTimer, ACopyBetweenDevicesIsATransfer) {
  profile::DeviceOpTimer timer(torch::kCPU);
  const auto x = torch::ones({4, 4});  // [4, 4]
  timer.begin_step();
  const auto on_meta = x.to(torch::Device(torch::kMeta));
  const auto doubled = x.to(torch::kFloat64);
  timer.end_step();
  EXPECT_TRUE(on_meta.is_meta());
  const auto ops = timer.intervals();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "aten::to");
  EXPECT_EQ(ops[0].work, DeviceWork::kTransfer);
  EXPECT_EQ(ops[1].name, "aten::to");
  EXPECT_EQ(ops[1].work, DeviceWork::kCompute);
  EXPECT_EQ(doubled.scalar_type(), torch::kFloat64);
}

#ifndef PLUMB_WITH_CUDA
TEST(DeviceOpTimer, AGpuNeedsACudaBuild) {
  EXPECT_THROW(profile::DeviceOpTimer(torch::Device(torch::kCUDA, 0)), UsageError);
}
#endif

}  // namespace
}  // namespace plumb
