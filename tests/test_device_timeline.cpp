// A GPU step on the device clock (profile/device_timeline.h), from synthetic operator
// intervals: device-busy time and utilisation, each operator's device time, exposed transfers,
// and the idle time split by what the host was doing. Times are in milliseconds written as
// seconds / 1000, so every expected figure can be read off the timeline drawn above each case.
#include <gtest/gtest.h>

#include <vector>

#include "plumb/profile/device_timeline.h"

namespace plumb {
namespace {

using profile::DeviceOpInterval;
using profile::DeviceStepBreakdown;
using profile::DeviceWork;

constexpr double kMs = 1e-3;

DeviceOpInterval op(const char* name, DeviceWork work, double host_start, double host_end,
                    double device_start, double device_end) {
  return {name, work, host_start * kMs, host_end * kMs, device_start * kMs, device_end * kMs};
}

// The parts partition the step, whatever the timeline.
void expect_parts_sum_to_step(const DeviceStepBreakdown& b) {
  EXPECT_NEAR(b.compute_s + b.transfer_s + b.idle_host_bound_s + b.idle_synchronization_s +
                  b.idle_data_movement_s + b.idle_launch_s,
              b.step_s, 1e-12);
}

// host   [conv][relu][conv]          (launches, 1 ms each, ahead of the device)
// device  [ conv 0-4 ][relu 4-6][conv 6-10]
TEST(DeviceTimeline, BackToBackKernelsKeepTheDeviceBusy) {
  const std::vector<DeviceOpInterval> ops = {op("aten::conv2d", DeviceWork::kCompute, 0, 1, 0, 4),
                                             op("aten::relu", DeviceWork::kCompute, 1, 2, 4, 6),
                                             op("aten::conv2d", DeviceWork::kCompute, 2, 3, 6, 10)};
  const auto b = profile::device_step_breakdown(0, 10 * kMs, ops);
  EXPECT_NEAR(b.busy_s, 10 * kMs, 1e-12);
  EXPECT_NEAR(b.utilization(), 1.0, 1e-12);
  EXPECT_NEAR(b.op_device_sum_s, b.busy_s, 1e-12);
  ASSERT_EQ(b.op_device_s.size(), 3u);
  EXPECT_NEAR(b.op_device_s[0], 4 * kMs, 1e-12);
  EXPECT_NEAR(b.op_device_s[1], 2 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_host_bound_s + b.idle_launch_s, 0, 1e-12);
  expect_parts_sum_to_step(b);
}

// host   [a 0-1]      [b 3-6]        (b launched late: the host was busy until 6)
// device     [a 1-2]          [b 6.5-8]  idle 0-1 and 2-6 waiting for launches, 6-6.5 the
//                                        launch of b, 8-10 after the last work: the host's
TEST(DeviceTimeline, IdleBeforeALateLaunchIsHostBoundAndAfterItIsTheLaunch) {
  const std::vector<DeviceOpInterval> ops = {op("a", DeviceWork::kCompute, 0, 1, 1, 2),
                                             op("b", DeviceWork::kCompute, 3, 6, 6.5, 8)};
  const auto b = profile::device_step_breakdown(0, 10 * kMs, ops);
  EXPECT_NEAR(b.busy_s, 2.5 * kMs, 1e-12);
  EXPECT_NEAR(b.utilization(), 0.25, 1e-12);
  EXPECT_NEAR(b.idle_host_bound_s, (1 + 4 + 2) * kMs, 1e-12);
  EXPECT_NEAR(b.idle_launch_s, 0.5 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_synchronization_s + b.idle_data_movement_s, 0, 1e-12);
  expect_parts_sum_to_step(b);
}

// host   [k 0-1][item 1-----5][k2 5-6]
// device     [k 1-3]                [k2 6-8]   idle 3-5: the host waited in item(); 5-6 it
//                                              launched k2 (host-bound), as 0-1 for k
TEST(DeviceTimeline, IdleWhileTheHostSynchronisesIsSynchronisation) {
  const std::vector<DeviceOpInterval> ops = {
      op("k", DeviceWork::kCompute, 0, 1, 1, 3),
      op("aten::item", profile::device_work_of("aten::item", false), 1, 5, 0, 0),
      op("k2", DeviceWork::kCompute, 5, 6, 6, 8)};
  const auto b = profile::device_step_breakdown(0, 8 * kMs, ops);
  EXPECT_NEAR(b.idle_synchronization_s, 2 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_host_bound_s, 2 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_launch_s, 0, 1e-12);
  EXPECT_NEAR(b.op_device_s[1], 0, 1e-12);  // no work of its own on the device
  expect_parts_sum_to_step(b);
}

// A host-to-device copy: its device time is transfer, exposed where no compute overlaps it.
// host   [copy 0-----4][copy2 4-4.5][k 4.5-5]
// device [copy 0-3]            [k 5-7]       copy2 on another stream at 5.5-6.5, under k
TEST(DeviceTimeline, CopiesAreExposedOnlyWhereNoComputeOverlapsThem) {
  const std::vector<DeviceOpInterval> ops = {
      op("aten::copy_", profile::device_work_of("aten::copy_", true), 0, 4, 0, 3),
      op("aten::copy_", DeviceWork::kTransfer, 4, 4.5, 5.5, 6.5),
      op("k", DeviceWork::kCompute, 4.5, 5, 5, 7)};
  const auto b = profile::device_step_breakdown(0, 7 * kMs, ops);
  EXPECT_NEAR(b.busy_s, 5 * kMs, 1e-12);
  EXPECT_NEAR(b.compute_s, 2 * kMs, 1e-12);
  EXPECT_NEAR(b.transfer_s, 3 * kMs, 1e-12);
  // Overlapping streams: the operators' device times sum to more than the busy time.
  EXPECT_NEAR(b.op_device_sum_s, 6 * kMs, 1e-12);
  // Idle 3-5 until k's launch: the host was in copies until 4.5, then launching k.
  EXPECT_NEAR(b.idle_data_movement_s, 1.5 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_host_bound_s, 0.5 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_launch_s, 0, 1e-12);
  expect_parts_sum_to_step(b);
}

// Work outside the step is clipped to it: a kernel still running from the last step, and one
// running past this step's end.
TEST(DeviceTimeline, IntervalsAreClippedToTheStep) {
  const std::vector<DeviceOpInterval> ops = {op("old", DeviceWork::kCompute, -3, -2, -1, 2),
                                             op("late", DeviceWork::kCompute, 2, 3, 8, 14)};
  const auto b = profile::device_step_breakdown(0, 10 * kMs, ops);
  EXPECT_NEAR(b.op_device_s[0], 2 * kMs, 1e-12);
  EXPECT_NEAR(b.op_device_s[1], 2 * kMs, 1e-12);
  EXPECT_NEAR(b.busy_s, 4 * kMs, 1e-12);
  EXPECT_NEAR(b.idle_host_bound_s, 1 * kMs, 1e-12);  // 2-3: late not launched yet
  EXPECT_NEAR(b.idle_launch_s, 5 * kMs, 1e-12);      // 3-8
  expect_parts_sum_to_step(b);
  EXPECT_THROW(profile::device_step_breakdown(1, 0, ops), std::invalid_argument);
}

TEST(DeviceTimeline, OperatorsAreTransfersSynchronisationsOrCompute) {
  EXPECT_EQ(profile::device_work_of("aten::_to_copy", true), DeviceWork::kTransfer);
  EXPECT_EQ(profile::device_work_of("aten::_local_scalar_dense", false),
            DeviceWork::kSynchronization);
  EXPECT_EQ(profile::device_work_of("aten::nonzero", false), DeviceWork::kSynchronization);
  EXPECT_EQ(profile::device_work_of("aten::copy_", false), DeviceWork::kCompute);
  EXPECT_EQ(profile::device_work_of("aten::addmm", false), DeviceWork::kCompute);
  // TBD's FP32 utilisation: 5 TFLOP in 0.5 s on a 20 TFLOP/s device is half its peak.
  EXPECT_NEAR(profile::dtype_utilization(5e12, 0.5, 20e12), 0.5, 1e-12);
  EXPECT_EQ(profile::dtype_utilization(1e9, 0, 1e12), 0);
}

// TBD's three utilisations of one step: host [a 0-1][b 1-2], device [a 1-4][b 4-5] in a
// 10 ms step; 4 GFLOP of work on a 1 TFLOP/s GPU; the host process used 5 ms of CPU on 4 cores.
TEST(DeviceTimeline, StepUtilizationIsTbdsThree) {
  const std::vector<DeviceOpInterval> ops = {op("a", DeviceWork::kCompute, 0, 1, 1, 4),
                                             op("b", DeviceWork::kCompute, 1, 2, 4, 5)};
  const auto b = profile::device_step_breakdown(0, 10 * kMs, ops);
  const profile::StepUtilization u = profile::step_utilization(b, 4e9, 1e12, 5 * kMs, 4);
  EXPECT_NEAR(u.gpu_compute, 0.4, 1e-12);  // busy 1-5 of 10 ms
  EXPECT_NEAR(u.dtype, 0.4, 1e-12);        // 4 GFLOP in 10 ms = 0.4 TFLOP/s
  EXPECT_NEAR(u.cpu, 0.125, 1e-12);        // 5 ms of 4 x 10 ms
  // A host thread spinning on the device for the whole step keeps one core busy.
  EXPECT_NEAR(profile::cpu_utilization(10 * kMs, 10 * kMs, 16), 1.0 / 16, 1e-12);
  EXPECT_EQ(profile::cpu_utilization(1, 0, 4), 0);
  EXPECT_EQ(profile::cpu_utilization(1, 1, 0), 0);
}

}  // namespace
}  // namespace plumb
