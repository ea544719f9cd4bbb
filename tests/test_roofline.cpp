// Unit tests for roofline placement (plumb/analysis/roofline.h), Facebook Table 1 arithmetic
// intensities (intensity.h) and the Fig. 3 accelerator projection (projection.h), on small
// hand-built inputs whose answers are computed by hand in the comments.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/analysis/intensity.h"
#include "plumb/analysis/projection.h"
#include "plumb/analysis/roofline.h"
#include "plumb/core/errors.h"
#include "usage_error_check.h"

namespace plumb::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Roofline

// 100 GFLOP/s; L1 1000 GB/s (32 KiB), L2 400 GB/s (1 MiB), DRAM 20 GB/s.
// Ridges (FLOP/byte): L1 0.1, L2 0.25, DRAM 5.
Ceilings sample_ceilings() {
  Ceilings c;
  c.peak_flops = 100e9;
  c.peak_source = "fp32 instruction";
  c.memory = {{"l1", 1000e9, 32768}, {"l2", 400e9, 1048576}, {"dram", 20e9, 0}};
  return c;
}

WorkItem item(const std::string& name, double flops, double bytes, double footprint,
              double seconds) {
  return WorkItem{name, flops, bytes, footprint, seconds, ""};
}

// Ceilings with a real CPU's proportions: 115.4 GFLOP/s; L1 281.4 GB/s (32 KiB), L2 112.2 GB/s
// (1 MiB), L3 61.4 GB/s (32 MiB), DRAM 19.1 GB/s. Ridges (FLOP/byte) = 115.4 / bandwidth:
// L1 0.410, L2 1.029, L3 1.879, DRAM 6.042.
Ceilings cpu_ceilings() {
  Ceilings c;
  c.peak_flops = 115.4e9;
  c.peak_source = "fp32 instruction";
  c.memory = {{"l1", 281.4e9, 32768},
              {"l2", 112.2e9, 1048576},
              {"l3", 61.4e9, 33554432},
              {"dram", 19.1e9, 0}};
  return c;
}

TEST(Roofline, RidgeIsPeakOverBandwidth) {
  const Ceilings c = sample_ceilings();
  EXPECT_DOUBLE_EQ(ridge_intensity(c, "l1"), 0.1);
  EXPECT_DOUBLE_EQ(ridge_intensity(c, "l2"), 0.25);
  EXPECT_DOUBLE_EQ(ridge_intensity(c, "dram"), 5.0);
  expect_usage_error([&] { ridge_intensity(c, "l3"); }, {"'l3'", "l1, l2, dram"});
}

TEST(Roofline, FootprintLevelIsTheSmallestThatHoldsTheFootprint) {
  const Ceilings c = sample_ceilings();
  auto level = [&](double footprint) {
    return place(item("x", 1, 1, footprint, 1), c).footprint_level;
  };
  EXPECT_EQ(level(0), "l1");
  EXPECT_EQ(level(32768), "l1");  // exactly the capacity still fits
  EXPECT_EQ(level(32769), "l2");
  EXPECT_EQ(level(1048576), "l2");
  EXPECT_EQ(level(1048577), "dram");
  EXPECT_EQ(level(1e15), "dram");

  // By capacity, not by list position.
  Ceilings shuffled = c;
  shuffled.memory = {c.memory[2], c.memory[1], c.memory[0]};
  EXPECT_EQ(place(item("x", 1, 1, 100, 1), shuffled).footprint_level, "l1");
  EXPECT_EQ(place(item("x", 1, 1, 1e9, 1), shuffled).footprint_level, "dram");

  // No unlimited level: an oversized footprint lands in the largest one.
  Ceilings caches_only = c;
  caches_only.memory.pop_back();
  EXPECT_EQ(place(item("x", 1, 1, 1e9, 1), caches_only).footprint_level, "l2");

  // Reported for every item, measured or not, with or without work.
  EXPECT_EQ(place(item("x", 1, 1, 100, 0), c).footprint_level, "l1");
  EXPECT_EQ(place(item("x", 0, 0, 1e6, 1), c).footprint_level, "l2");
}

TEST(Roofline, ComputeBoundItem) {
  // 2 GFLOP over 0.1 GB: intensity 20 >= DRAM ridge 5. 25 ms -> 80 GFLOP/s of 100.
  const Placement p = place(item("gemm", 2e9, 1e8, 5e7, 0.025), sample_ceilings());
  EXPECT_EQ(p.name, "gemm");
  EXPECT_DOUBLE_EQ(p.intensity, 20.0);
  EXPECT_EQ(p.level, "dram");
  EXPECT_DOUBLE_EQ(p.achieved_flops, 80e9);
  EXPECT_DOUBLE_EQ(p.achieved_bytes_per_s, 4e9);
  ASSERT_EQ(p.roofs.size(), 3u);
  for (const RoofAt& r : p.roofs) EXPECT_DOUBLE_EQ(r.attainable_flops, 100e9) << r.level;
  EXPECT_DOUBLE_EQ(p.roof, 100e9);  // min(100e9, 20 * 20e9)
  EXPECT_EQ(p.bound, "compute");
  EXPECT_DOUBLE_EQ(p.roof_fraction, 0.8);
  EXPECT_DOUBLE_EQ(p.utilisation, 0.8);
}

TEST(Roofline, MemoryBoundItemHasARoofAtEveryLevel) {
  // 0.1 GFLOP over 0.1 GB (intensity 1) in 10 ms: 10 GB/s, which only DRAM (20 GB/s) is slow
  // enough to explain, and 1 < DRAM ridge 5.
  const Placement p = place(item("bn", 1e8, 1e8, 1e8, 0.01), sample_ceilings());
  EXPECT_DOUBLE_EQ(p.intensity, 1.0);
  EXPECT_EQ(p.roofs[0].level, "l1");
  EXPECT_DOUBLE_EQ(p.roofs[0].attainable_flops, 100e9);
  EXPECT_EQ(p.roofs[1].level, "l2");
  EXPECT_DOUBLE_EQ(p.roofs[1].attainable_flops, 100e9);
  EXPECT_EQ(p.roofs[2].level, "dram");
  EXPECT_DOUBLE_EQ(p.roofs[2].attainable_flops, 20e9);
  EXPECT_EQ(p.level, "dram");
  EXPECT_DOUBLE_EQ(p.roof, 20e9);
  EXPECT_EQ(p.bound, "memory:dram");
  EXPECT_DOUBLE_EQ(p.roof_fraction, 0.5);  // 10 GB/s of 20 = 10 GFLOP/s of 20
  EXPECT_DOUBLE_EQ(p.utilisation, 0.1);    // 10 of 100 GFLOP/s
}

TEST(Roofline, ResNet50FcComesFromDramNotTheL3ItsFootprintFits) {
  // ResNet-50's FC layer at batch 4: 4 * 2 * 2048 * 1000 = 16.384 MFLOP over 8.28 MB (fp32
  // weights and activations), an 8.28 MB footprint that fits the 32 MiB L3, in 1.58 ms. By
  // footprint it would be compute bound at L3 (intensity 1.98 >= ridge 1.88); its weights were
  // evicted by the other layers', and the measured 5.24 GB/s is below even DRAM's 19.1 GB/s.
  const double flops = 16.384e6, bytes = 8.28e6, seconds = 1.58e-3;
  const Placement p = place(item("fc", flops, bytes, bytes, seconds), cpu_ceilings());
  EXPECT_EQ(p.footprint_level, "l3");
  EXPECT_EQ(p.level, "dram");
  EXPECT_NEAR(p.intensity, 1.97874, 1e-5);  // 16.384 / 8.28, below the DRAM ridge 6.04
  EXPECT_EQ(p.bound, "memory:dram");
  // 8.28e6 / 1.58e-3 = 5.2405e9 B/s of 19.1e9 = 0.2744 of the DRAM roof.
  EXPECT_DOUBLE_EQ(p.achieved_bytes_per_s, bytes / seconds);
  EXPECT_DOUBLE_EQ(p.roof_fraction, bytes / seconds / 19.1e9);
  EXPECT_NEAR(p.roof_fraction, 0.2744, 1e-4);
  EXPECT_DOUBLE_EQ(p.roof, flops / bytes * 19.1e9);  // 37.8 GFLOP/s
  // 16.384e6 / 1.58e-3 = 10.37 GFLOP/s of 115.4: 9% of peak.
  EXPECT_NEAR(p.utilisation, 0.0899, 1e-4);
}

TEST(Roofline, ConvolutionsAreComputeBoundFromDram) {
  // 1x1 conv: intensity 16 (16 MFLOP over 1 MB) at 65 GFLOP/s -> 4.06 GB/s, below DRAM's
  // 19.1, so DRAM; 16 >= DRAM ridge 6.04: compute, 65 of 115.4 GFLOP/s.
  const Placement c1 = place(item("1x1", 16e6, 1e6, 1e6, 16e6 / 65e9), cpu_ceilings());
  EXPECT_EQ(c1.footprint_level, "l2");
  EXPECT_EQ(c1.level, "dram");
  EXPECT_NEAR(c1.achieved_bytes_per_s, 4.0625e9, 1);
  EXPECT_EQ(c1.bound, "compute");
  EXPECT_DOUBLE_EQ(c1.roof, 115.4e9);
  EXPECT_NEAR(c1.roof_fraction, 65 / 115.4, 1e-12);
  // 3x3 conv: intensity 140 at 107 GFLOP/s -> 0.76 GB/s: DRAM, compute, 107 of 115.4.
  const Placement c3 = place(item("3x3", 140e6, 1e6, 1e6, 140e6 / 107e9), cpu_ceilings());
  EXPECT_EQ(c3.level, "dram");
  EXPECT_EQ(c3.bound, "compute");
  EXPECT_NEAR(c3.roof_fraction, 107 / 115.4, 1e-12);
}

TEST(Roofline, MeasuredLevelIsTheSlowestFastEnoughForTheAchievedRate) {
  // Intensity 1 at 40 GB/s (40 MB in 1 ms): DRAM (19.1) is too slow, L3 (61.4) is the slowest
  // level fast enough. 1 < L3 ridge 1.88: memory bound, 40 of 61.4 GB/s. The 1 GB footprint
  // (DRAM) is not used.
  const Placement p = place(item("x", 40e6, 40e6, 1e9, 1e-3), cpu_ceilings());
  EXPECT_EQ(p.footprint_level, "dram");
  EXPECT_EQ(p.level, "l3");
  EXPECT_EQ(p.bound, "memory:l3");
  EXPECT_DOUBLE_EQ(p.roof, 61.4e9);
  EXPECT_NEAR(p.roof_fraction, 40 / 61.4, 1e-12);

  // One second each, so bytes / seconds is exactly the bandwidth. A rate equal to a level's
  // bandwidth is explained by that level; anything above needs the next faster one.
  auto level = [](double bytes_per_s, const Ceilings& c) {
    return place(item("x", bytes_per_s, bytes_per_s, 0, 1), c).level;
  };
  const Ceilings c = cpu_ceilings();
  EXPECT_EQ(level(1, c), "dram");
  EXPECT_EQ(level(19.1e9, c), "dram");
  EXPECT_EQ(level(19.2e9, c), "l3");
  EXPECT_EQ(level(61.4e9, c), "l3");
  EXPECT_EQ(level(61.5e9, c), "l2");
  EXPECT_EQ(level(112.2e9, c), "l2");
  EXPECT_EQ(level(112.3e9, c), "l1");
  EXPECT_EQ(level(281.4e9, c), "l1");

  // By bandwidth, not list position.
  Ceilings shuffled = c;
  shuffled.memory = {c.memory[2], c.memory[0], c.memory[3], c.memory[1]};
  EXPECT_EQ(level(1, shuffled), "dram");
  EXPECT_EQ(level(40e9, shuffled), "l3");
  EXPECT_EQ(level(100e9, shuffled), "l2");
  EXPECT_EQ(level(200e9, shuffled), "l1");
  EXPECT_EQ(level(1e12, shuffled), "l1");

  // Equal bandwidths: the first in Ceilings order.
  Ceilings tied = c;
  tied.memory[2].bytes_per_s = 112.2e9;  // l3 as fast as l2
  EXPECT_EQ(level(100e9, tied), "l2");
}

TEST(Roofline, FasterThanTheFastestLevelIsPlacedThereAboveItsRoof) {
  // 400 GB/s at intensity 0.1: beyond L1's 281.4 GB/s, so L1; 0.1 < L1 ridge 0.41: memory
  // bound at 400 / 281.4 = 1.42 of the roof (the L1 bandwidth measured too low).
  const Placement p = place(item("x", 40e6, 400e6, 1e9, 1e-3), cpu_ceilings());
  EXPECT_EQ(p.level, "l1");
  EXPECT_EQ(p.bound, "memory:l1");
  EXPECT_NEAR(p.roof_fraction, 400 / 281.4, 1e-12);
  EXPECT_GT(p.roof_fraction, 1.0);
}

TEST(Roofline, UnmeasuredItemIsPlacedByItsFootprint) {
  // No time, so no rate: the footprint predicts the level. The ResNet-50 FC layer's 8.28 MB
  // fits L3, where intensity 1.98 >= ridge 1.88 predicts compute; a 1 GB footprint means
  // DRAM, where 1.98 < 6.04 predicts memory.
  const Placement fits = place(item("fc", 16.384e6, 8.28e6, 8.28e6, 0), cpu_ceilings());
  EXPECT_EQ(fits.level, "l3");
  EXPECT_EQ(fits.footprint_level, "l3");
  EXPECT_EQ(fits.bound, "compute");
  EXPECT_DOUBLE_EQ(fits.roof, 115.4e9);
  const Placement big = place(item("fc", 16.384e6, 8.28e6, 1e9, 0), cpu_ceilings());
  EXPECT_EQ(big.level, "dram");
  EXPECT_EQ(big.bound, "memory:dram");
  // A footprint that fits L1 predicts L1.
  EXPECT_EQ(place(item("x", 1e6, 1e6, 1000, 0), cpu_ceilings()).level, "l1");
}

TEST(Roofline, IntensityAtTheRidgeIsComputeBound) {
  // 0.5 GFLOP over 0.1 GB = 5 FLOP/byte = the DRAM ridge; 10 ms -> 50 of 100 GFLOP/s.
  const Placement at = place(item("x", 5e8, 1e8, 1e9, 0.01), sample_ceilings());
  EXPECT_EQ(at.bound, "compute");
  EXPECT_DOUBLE_EQ(at.roof_fraction, 0.5);
  // Just below the ridge: memory bound, fraction from bandwidth (10 of 20 GB/s).
  const Placement below = place(item("x", 4.99e8, 1e8, 1e9, 0.01), sample_ceilings());
  EXPECT_EQ(below.bound, "memory:dram");
  EXPECT_DOUBLE_EQ(below.roof_fraction, 0.5);
}

TEST(Roofline, FarBelowTheRoofIsOverhead) {
  // Compute-bound work at 2 of 100 GFLOP/s: 0.02 < 0.1.
  const Placement slow = place(item("tiny gemm", 2e9, 1e8, 5e7, 1.0), sample_ceilings());
  EXPECT_EQ(slow.bound, "overhead");
  EXPECT_DOUBLE_EQ(slow.roof_fraction, 0.02);
  EXPECT_DOUBLE_EQ(slow.utilisation, 0.02);
  // A lower threshold accepts it as compute bound.
  EXPECT_EQ(place(item("tiny gemm", 2e9, 1e8, 5e7, 1.0), sample_ceilings(), 0.01).bound, "compute");
  // Memory-bound work at 1 of 20 GB/s: 0.05 < 0.1.
  const Placement idle = place(item("small add", 1e8, 1e8, 1e9, 0.1), sample_ceilings());
  EXPECT_EQ(idle.bound, "overhead");
  EXPECT_DOUBLE_EQ(idle.roof_fraction, 0.05);
  // Threshold 0: nothing is overhead.
  EXPECT_EQ(place(item("small add", 1e8, 1e8, 1e9, 0.1), sample_ceilings(), 0.0).bound,
            "memory:dram");
  // Exactly at the threshold is not overhead. Memory bound (intensity 0.5): 2 of 20 GB/s = 0.1;
  // compute bound (intensity 20, 0.5 GB/s from DRAM): 10 of 100 GFLOP/s = 0.1.
  const Placement edge = place(item("add", 1e9, 2e9, 1e9, 1.0), sample_ceilings());
  EXPECT_DOUBLE_EQ(edge.roof_fraction, 0.1);
  EXPECT_EQ(edge.bound, "memory:dram");
  const Placement gemm_edge = place(item("gemm", 1e10, 5e8, 1e9, 1.0), sample_ceilings());
  EXPECT_DOUBLE_EQ(gemm_edge.roof_fraction, 0.1);
  EXPECT_EQ(gemm_edge.bound, "compute");
}

TEST(Roofline, PureDataMovementIsMemoryBoundByBandwidth) {
  // A copy: 0 FLOPs, 0.4 GB in 40 ms = 10 GB/s of DRAM's 20. Its FLOP roof is 0 everywhere,
  // so the fraction is measured on bandwidth.
  const Placement p = place(item("copy", 0, 4e8, 2e8, 0.04), sample_ceilings());
  EXPECT_DOUBLE_EQ(p.intensity, 0.0);
  for (const RoofAt& r : p.roofs) EXPECT_DOUBLE_EQ(r.attainable_flops, 0.0) << r.level;
  EXPECT_EQ(p.bound, "memory:dram");
  EXPECT_DOUBLE_EQ(p.achieved_bytes_per_s, 1e10);
  EXPECT_DOUBLE_EQ(p.roof_fraction, 0.5);
  EXPECT_DOUBLE_EQ(p.utilisation, 0.0);
}

TEST(Roofline, NoWorkIsOverheadWithoutNaN) {
  for (double seconds : {0.001, 0.0}) {
    const Placement p = place(item("view", 0, 0, 0, seconds), sample_ceilings());
    EXPECT_EQ(p.bound, "overhead") << seconds;
    EXPECT_EQ(p.level, "l1");  // no rate: the footprint level
    EXPECT_EQ(place(item("view", 0, 0, 1e6, seconds), sample_ceilings()).level, "l2");
    EXPECT_DOUBLE_EQ(p.intensity, 0.0);
    EXPECT_DOUBLE_EQ(p.achieved_flops, 0.0);
    EXPECT_DOUBLE_EQ(p.achieved_bytes_per_s, 0.0);
    EXPECT_DOUBLE_EQ(p.roof, 0.0);
    EXPECT_DOUBLE_EQ(p.roof_fraction, 0.0);
    EXPECT_DOUBLE_EQ(p.utilisation, 0.0);
  }
}

TEST(Roofline, NoBytesMeansInfiniteIntensityAndComputeBound) {
  // Register-resident arithmetic: 1 GFLOP, no traffic, 20 ms -> 50 of 100 GFLOP/s.
  // 0 B/s is explained by the slowest level (DRAM), though the empty footprint fits L1.
  const Placement p = place(item("fma loop", 1e9, 0, 0, 0.02), sample_ceilings());
  EXPECT_EQ(p.intensity, kInf);
  EXPECT_EQ(p.level, "dram");
  EXPECT_EQ(p.footprint_level, "l1");
  EXPECT_DOUBLE_EQ(p.roof, 100e9);
  for (const RoofAt& r : p.roofs) EXPECT_DOUBLE_EQ(r.attainable_flops, 100e9) << r.level;
  EXPECT_EQ(p.bound, "compute");
  EXPECT_DOUBLE_EQ(p.roof_fraction, 0.5);
  EXPECT_DOUBLE_EQ(p.achieved_bytes_per_s, 0.0);
}

TEST(Roofline, UnmeasuredTimeLeavesRatesUndefinedAndKeepsThePredictedBound) {
  const Placement gemm = place(item("gemm", 2e9, 1e8, 5e7, 0), sample_ceilings());
  EXPECT_EQ(gemm.bound, "compute");  // not "overhead": no measurement says it was slow
  EXPECT_TRUE(std::isnan(gemm.achieved_flops));
  EXPECT_TRUE(std::isnan(gemm.achieved_bytes_per_s));
  EXPECT_TRUE(std::isnan(gemm.roof_fraction));
  EXPECT_TRUE(std::isnan(gemm.utilisation));
  EXPECT_DOUBLE_EQ(gemm.intensity, 20.0);  // the work-only figures are still there
  EXPECT_DOUBLE_EQ(gemm.roof, 100e9);
  EXPECT_EQ(place(item("add", 1e8, 1e8, 1e9, 0), sample_ceilings()).bound, "memory:dram");
}

TEST(Roofline, RejectsInvalidCeilingsAndItems) {
  const WorkItem ok = item("x", 1, 1, 1, 1);
  auto with = [](auto change) {
    Ceilings c = sample_ceilings();
    change(c);
    return c;
  };
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.peak_flops = 0; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.peak_flops = kInf; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory.clear(); })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory[1].bytes_per_s = -1; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory[1].bytes_per_s = 0; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory[0].capacity_bytes = -1; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory[1].level = "l1"; })), UsageError);
  EXPECT_THROW(place(ok, with([](Ceilings& c) { c.memory[1].level = ""; })), UsageError);
  EXPECT_THROW(ridge_intensity(with([](Ceilings& c) { c.peak_flops = -5; }), "l1"), UsageError);

  const Ceilings c = sample_ceilings();
  EXPECT_THROW(place(item("x", -1, 1, 1, 1), c), UsageError);
  EXPECT_THROW(place(item("x", 1, -1, 1, 1), c), UsageError);
  EXPECT_THROW(place(item("x", 1, 1, -1, 1), c), UsageError);
  EXPECT_THROW(place(item("x", 1, 1, 1, -1), c), UsageError);
  EXPECT_THROW(place(item("x", std::nan(""), 1, 1, 1), c), UsageError);
  EXPECT_THROW(place(item("x", 1, 1, 1, kInf), c), UsageError);
  EXPECT_THROW(place(ok, c, -0.1), UsageError);
  EXPECT_THROW(place(ok, c, 1.5), UsageError);
  EXPECT_THROW(place_all({ok, item("bad", 1, 1, 1, -1)}, c), UsageError);
}

TEST(Roofline, SumItemsAddsWorkAndTimeAndKeepsTheLargestFootprint) {
  const std::vector<WorkItem> items = {item("conv", 2e9, 1e8, 5e7, 0.025),
                                       item("relu", 1e7, 8e7, 4e7, 0.005),
                                       item("fc", 4e6, 8e6, 8e6, 0.001)};
  const WorkItem model = sum_items(items, "model");
  EXPECT_EQ(model.name, "model");
  EXPECT_DOUBLE_EQ(model.flops, 2.014e9);
  EXPECT_DOUBLE_EQ(model.bytes, 1.88e8);
  EXPECT_DOUBLE_EQ(model.seconds, 0.031);
  EXPECT_DOUBLE_EQ(model.footprint_bytes, 5e7);  // not the sum 9.8e7

  // 2.014e9 / 1.88e8 = 10.71 FLOP/byte >= 5: compute bound at 2.014e9 / 0.031 = 64.97 GFLOP/s.
  const Placement p = place(model, sample_ceilings());
  EXPECT_EQ(p.bound, "compute");
  EXPECT_NEAR(p.utilisation, 0.649677419355, 1e-12);

  const WorkItem none = sum_items({}, "empty");
  EXPECT_EQ(none.name, "empty");
  EXPECT_DOUBLE_EQ(none.flops + none.bytes + none.seconds + none.footprint_bytes, 0.0);
}

TEST(Roofline, PlaceAllKeepsOrder) {
  const std::vector<Placement> all = place_all(
      {item("a", 2e9, 1e8, 5e7, 0.025), item("b", 1e8, 1e8, 1e9, 0.01)}, sample_ceilings());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[0].bound, "compute");
  EXPECT_EQ(all[1].name, "b");
  EXPECT_EQ(all[1].bound, "memory:dram");
  EXPECT_TRUE(place_all({}, sample_ceilings()).empty());
}

// ---------------------------------------------------------------------------------------------
// Intensity (Facebook Table 1: operations per element of traffic)

// 3x3 convolution, 64 -> 64 channels, 56x56 output, stride 1, pad 1, batch 1, no bias (as in
// ResNet, where batch norm follows):
//   ops     = 2 * 64 * 64 * 9 * 56 * 56 = 2 * 36864 * 3136 = 231,211,008
//   weights = 64 * 64 * 9               = 36,864
//   acts    = 64*56*56 in + 64*56*56 out = 200,704 + 200,704 = 401,408
LayerTraffic conv3x3() {
  return {"layer1.0.conv2", 231211008, 36864, 401408, 4};
}
// Fully connected 2048 -> 1000 with bias at batch `batch`:
//   ops     = batch * 2 * 2048 * 1000   = batch * 4,096,000
//   weights = 2048 * 1000 + 1000 (bias) = 2,049,000
//   acts    = batch * (2048 + 1000)     = batch * 3,048
LayerTraffic fc(double batch) {
  return {"fc", batch * 4096000, 2049000, batch * 3048, 4};
}
// ReLU on the conv output: 1 op per element, no weights, 200,704 in + 200,704 out.
LayerTraffic relu() {
  return {"layer1.0.relu", 200704, 0, 401408, 4};
}
// Flatten of a 2048-vector: no ops, no weights, 2048 in + 2048 out.
LayerTraffic flatten() {
  return {"flatten", 0, 0, 4096, 4};
}

TEST(Intensity, ConvLayerByHand) {
  const IntensitySummary s = summarize_intensity({conv3x3()});
  ASSERT_EQ(s.layers.size(), 1u);
  const LayerIntensity& l = s.layers[0];
  EXPECT_EQ(l.layer, "layer1.0.conv2");
  EXPECT_DOUBLE_EQ(l.ops, 231211008.0);
  EXPECT_DOUBLE_EQ(l.per_weight, 6272.0);  // 231,211,008 / 36,864 = 2 * 56 * 56
  // 231,211,008 / (36,864 + 401,408) = 231,211,008 / 438,272 = 527.551401869...
  EXPECT_NEAR(l.per_weight_and_activation, 527.551401869, 1e-9);
  EXPECT_DOUBLE_EQ(l.per_weight_byte, 1568.0);  // fp32: 6272 / 4
  EXPECT_NEAR(l.per_weight_and_activation_byte, 131.887850467, 1e-9);
  EXPECT_DOUBLE_EQ(s.model_per_weight, 6272.0);
  EXPECT_DOUBLE_EQ(s.min_per_weight, 6272.0);
  EXPECT_DOUBLE_EQ(s.mean_per_weight, 6272.0);
}

TEST(Intensity, FullyConnectedLayerAtBatch1And8) {
  // Batch 1: 4,096,000 / 2,049,000 = 1.9990239141; / (2,049,000 + 3,048) = 1.99605467319.
  const LayerIntensity b1 = summarize_intensity({fc(1)}).layers[0];
  EXPECT_NEAR(b1.per_weight, 1.9990239141, 1e-10);
  EXPECT_NEAR(b1.per_weight_and_activation, 1.99605467319, 1e-10);
  // Batch 8 reuses every weight 8 times: 32,768,000 / 2,049,000 = 15.9921913128;
  // / (2,049,000 + 24,384) = 32,768,000 / 2,073,384 = 15.8041153978.
  const LayerIntensity b8 = summarize_intensity({fc(8)}).layers[0];
  EXPECT_NEAR(b8.per_weight, 15.9921913128, 1e-9);
  EXPECT_NEAR(b8.per_weight_and_activation, 15.8041153978, 1e-9);
}

TEST(Intensity, ModelFiguresAndWhichLayersEnterTheStatistics) {
  const IntensitySummary s = summarize_intensity({conv3x3(), relu(), flatten(), fc(1)});
  ASSERT_EQ(s.layers.size(), 4u);
  EXPECT_EQ(s.layers[1].per_weight, kInf);                       // relu: ops, no weights
  EXPECT_DOUBLE_EQ(s.layers[1].per_weight_and_activation, 0.5);  // 200,704 / 401,408
  EXPECT_DOUBLE_EQ(s.layers[2].per_weight, 0.0);                 // flatten: no ops
  EXPECT_DOUBLE_EQ(s.layers[2].per_weight_and_activation, 0.0);

  // Totals: ops 231,211,008 + 200,704 + 0 + 4,096,000 = 235,507,712;
  // weights 36,864 + 2,049,000 = 2,085,864; acts 401,408 + 401,408 + 4,096 + 3,048 = 809,960.
  // 235,507,712 / 2,085,864 = 112.906551913; / 2,895,824 = 81.3266662615.
  EXPECT_NEAR(s.model_per_weight, 112.906551913, 1e-8);
  EXPECT_NEAR(s.model_per_weight_and_activation, 81.3266662615, 1e-9);
  EXPECT_NEAR(s.model_per_weight_byte, 28.2266379783, 1e-9);  // fp32: / 4
  EXPECT_NEAR(s.model_per_weight_and_activation_byte, 20.3316665654, 1e-9);

  // Per weight: layers with weights only (conv, fc): mean (6272 + 1.9990239141) / 2.
  EXPECT_EQ(s.layers_with_weights, 2);
  EXPECT_NEAR(s.mean_per_weight, 3136.99951196, 1e-7);
  EXPECT_NEAR(s.min_per_weight, 1.9990239141, 1e-10);
  // Weights + activations: layers with ops (conv, relu, fc; not flatten):
  // mean (527.551401869 + 0.5 + 1.99605467319) / 3 = 176.682485514; min = relu's 0.5.
  EXPECT_EQ(s.layers_with_ops, 3);
  EXPECT_NEAR(s.mean_per_weight_and_activation, 176.682485514, 1e-8);
  EXPECT_DOUBLE_EQ(s.min_per_weight_and_activation, 0.5);
}

TEST(Intensity, WeightedLayerWithoutOpsCountsAtZero) {
  // A plain embedding gather: 1M weights, 0 FLOPs. It sets the per-weight minimum to 0 (its
  // weights are traffic that does no arithmetic) but stays out of the per-element statistics.
  const IntensitySummary s = summarize_intensity({conv3x3(), {"embedding", 0, 1e6, 64, 4}});
  EXPECT_EQ(s.layers_with_weights, 2);
  EXPECT_DOUBLE_EQ(s.min_per_weight, 0.0);
  EXPECT_DOUBLE_EQ(s.mean_per_weight, 3136.0);
  EXPECT_EQ(s.layers_with_ops, 1);
  EXPECT_NEAR(s.min_per_weight_and_activation, 527.551401869, 1e-9);
}

TEST(Intensity, PerByteFiguresUseEachLayersElementSize) {
  // 100 ops on 10 fp32 weights and 100 ops on 10 int8 weights:
  // per element 200 / 20 = 10; per byte 200 / (40 + 10) = 4.
  const IntensitySummary s =
      summarize_intensity({{"fp32", 100, 10, 0, 4}, {"int8", 100, 10, 0, 1}});
  EXPECT_DOUBLE_EQ(s.model_per_weight, 10.0);
  EXPECT_DOUBLE_EQ(s.model_per_weight_byte, 4.0);
  EXPECT_DOUBLE_EQ(s.layers[0].per_weight_byte, 2.5);
  EXPECT_DOUBLE_EQ(s.layers[1].per_weight_byte, 10.0);
}

TEST(Intensity, EmptyAndWeightlessModels) {
  const IntensitySummary empty = summarize_intensity({});
  EXPECT_TRUE(empty.layers.empty());
  EXPECT_DOUBLE_EQ(empty.model_per_weight, 0.0);
  EXPECT_DOUBLE_EQ(empty.min_per_weight, 0.0);
  EXPECT_DOUBLE_EQ(empty.mean_per_weight_and_activation, 0.0);
  EXPECT_EQ(empty.layers_with_weights, 0);

  const IntensitySummary weightless = summarize_intensity({relu()});
  EXPECT_EQ(weightless.model_per_weight, kInf);
  EXPECT_DOUBLE_EQ(weightless.mean_per_weight, 0.0);  // no layer qualifies
  EXPECT_DOUBLE_EQ(weightless.model_per_weight_and_activation, 0.5);
}

TEST(Intensity, RejectsInvalidCounts) {
  EXPECT_THROW(summarize_intensity({{"x", -1, 1, 1, 4}}), UsageError);
  EXPECT_THROW(summarize_intensity({{"x", 1, -1, 1, 4}}), UsageError);
  EXPECT_THROW(summarize_intensity({{"x", 1, 1, std::nan(""), 4}}), UsageError);
  EXPECT_THROW(summarize_intensity({{"x", 1, 1, 1, 0}}), UsageError);
  EXPECT_THROW(summarize_intensity({{"x", kInf, 1, 1, 4}}), UsageError);
  expect_usage_error([] { summarize_intensity({conv3x3(), {"lost", 10, 0, 0, 4}}); }, {"'lost'"});
}

// ---------------------------------------------------------------------------------------------
// Projection (Facebook Fig. 3)

// 100 TOP/s, 100 GB/s DRAM, 1 TB/s on-chip, as in the paper.
Accelerator accelerator(double onchip_bytes) {
  return {100e12, 100e9, onchip_bytes, 1e12};
}

const LayerProjection& layer_named(const Projection& p, const std::string& name) {
  for (const LayerProjection& l : p.layers) {
    if (l.layer == name) return l;
  }
  ADD_FAILURE() << "no layer " << name;
  static const LayerProjection kMissing;
  return kMissing;
}

TEST(Projection, NoOnChipMemoryReadsEverythingFromDram) {
  // a: 1e9 ops = 10 us; (1e6 + 1e5) bytes / 100 GB/s = 11 us -> 11 us, dram.
  // b: 1e12 ops = 10 ms; 2e6 bytes = 20 us -> 10 ms, compute.
  const std::vector<LayerDemand> layers = {{"a", 1e9, 1e6, 1e5}, {"b", 1e12, 1e6, 1e6}};
  const Projection p = project(layers, accelerator(0));
  ASSERT_EQ(p.layers.size(), 2u);
  const LayerProjection& a = p.layers[0];
  EXPECT_FALSE(a.weights_onchip);
  EXPECT_FALSE(a.activations_onchip);
  EXPECT_DOUBLE_EQ(a.compute_s, 1e-5);
  EXPECT_DOUBLE_EQ(a.dram_s, 1.1e-5);
  EXPECT_DOUBLE_EQ(a.onchip_s, 0.0);
  EXPECT_DOUBLE_EQ(a.time_s, 1.1e-5);
  EXPECT_EQ(a.bound, "dram");
  const LayerProjection& b = p.layers[1];
  EXPECT_DOUBLE_EQ(b.time_s, 0.01);
  EXPECT_EQ(b.bound, "compute");
  EXPECT_DOUBLE_EQ(p.time_s, 0.010011);
  EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 0.0);
  EXPECT_NEAR(p.achieved_ops_per_s, 1.001e12 / 0.010011, 1e-3);
}

TEST(Projection, UnlimitedOnChipMemoryHoldsEverything) {
  // Small-batch FC layers (memory bound). All on-chip each takes max(ops / 100e12,
  // bytes / 1e12): fc1 max(2e-8, 3e-6) = 3 us, fc2 max(4e-8, 4.5e-6) = 4.5 us. (Activations
  // left in DRAM would take longer: fc1 1e6 / 1e11 = 10 us, fc2 5e5 / 1e11 = 5 us.)
  const std::vector<LayerDemand> layers = {{"fc1", 2e6, 2e6, 1e6}, {"fc2", 4e6, 4e6, 5e5}};
  for (double capacity : {kInf, 1e30}) {
    const Projection p = project(layers, accelerator(capacity));
    for (const LayerProjection& l : p.layers) {
      EXPECT_TRUE(l.weights_onchip) << l.layer;
      EXPECT_TRUE(l.activations_onchip) << l.layer;
      EXPECT_DOUBLE_EQ(l.dram_s, 0.0);
      EXPECT_EQ(l.bound, "onchip");
    }
    EXPECT_DOUBLE_EQ(p.layers[0].time_s, 3e-6);
    EXPECT_DOUBLE_EQ(p.layers[1].time_s, 4.5e-6);
    EXPECT_DOUBLE_EQ(p.time_s, 7.5e-6);
    EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 6e6);
  }
}

TEST(Projection, ActivationsStayInDramWhenSplittingTrafficIsFaster) {
  // 2 MB of pinned weights take 2 us on-chip. The 0.1 MB of activations take 1 us from DRAM in
  // parallel (max(2, 1) = 2 us) but would make it 2.1 us on-chip, so they stay in DRAM.
  const Projection p = project({{"fc", 2e6, 2e6, 1e5}}, accelerator(kInf));
  EXPECT_TRUE(p.layers[0].weights_onchip);
  EXPECT_FALSE(p.layers[0].activations_onchip);
  EXPECT_DOUBLE_EQ(p.layers[0].dram_s, 1e-6);
  EXPECT_DOUBLE_EQ(p.layers[0].onchip_s, 2e-6);
  EXPECT_DOUBLE_EQ(p.time_s, 2e-6);
  EXPECT_EQ(p.layers[0].bound, "onchip");
}

TEST(Projection, GreedyPinsTheMostTimeSavedPerByteFirst) {
  // Capacity 5 MB; each layer's weights fit alone, not both (6 MB).
  // p (first, larger): 3e9 ops = 30 us; 4 MB weights: from DRAM 40 us, on-chip max(30, 4) =
  //   30 us -> saves 10 us / 4e6 B = 2.5e-12 s/B.
  // q: no ops; 2 MB weights: from DRAM 20 us, on-chip 2 us -> saves 18 us / 2e6 B = 9e-12 s/B.
  // Greedy pins q; p (4 MB) no longer fits in the 3 MB left. Layer order or size would pick p
  // (total 30 + 20 = 50 us) instead of 40 + 2 = 42 us.
  const Projection p = project({{"p", 3e9, 4e6, 0}, {"q", 0, 2e6, 0}}, accelerator(5e6));
  const LayerProjection& lp = layer_named(p, "p");
  const LayerProjection& lq = layer_named(p, "q");
  EXPECT_FALSE(lp.weights_onchip);
  EXPECT_TRUE(lq.weights_onchip);
  EXPECT_DOUBLE_EQ(lp.time_s, 4e-5);
  EXPECT_EQ(lp.bound, "dram");
  EXPECT_DOUBLE_EQ(lq.time_s, 2e-6);
  EXPECT_EQ(lq.bound, "onchip");
  EXPECT_DOUBLE_EQ(p.time_s, 4.2e-5);
  EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 2e6);
}

TEST(Projection, GreedyRanksBySavingPerByteNotTotalSaving) {
  // Capacity 4 MB. a: no ops, 4 MB of weights: from DRAM 40 us, on-chip 4 us -> saves 36 us,
  // 9e-12 s/B. b and c: 2 MB of weights and 2 MB of activations each: from DRAM 4e6 / 1e11 =
  // 40 us, weights on-chip max(20, 2) = 20 us -> saves 20 us each, 1e-11 s/B.
  // Per byte pins b and c (4 MB, nothing left): 40 + 20 + 20 = 80 us. Ranking by total saving
  // would pin a and leave no room for b or c: 4 + 40 + 40 = 84 us.
  const Projection p =
      project({{"a", 0, 4e6, 0}, {"b", 0, 2e6, 2e6}, {"c", 0, 2e6, 2e6}}, accelerator(4e6));
  EXPECT_FALSE(layer_named(p, "a").weights_onchip);
  EXPECT_TRUE(layer_named(p, "b").weights_onchip);
  EXPECT_TRUE(layer_named(p, "c").weights_onchip);
  EXPECT_FALSE(layer_named(p, "b").activations_onchip);  // no capacity left
  EXPECT_DOUBLE_EQ(layer_named(p, "b").time_s, 2e-5);
  EXPECT_DOUBLE_EQ(p.time_s, 8e-5);
  EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 4e6);
}

TEST(Projection, EqualSavingsGoByLayerOrder) {
  // Three identical layers (1 MB of weights, no ops), room for one: the first one is pinned.
  const Projection p =
      project({{"x", 0, 1e6, 0}, {"y", 0, 1e6, 0}, {"z", 0, 1e6, 0}}, accelerator(1.5e6));
  EXPECT_TRUE(layer_named(p, "x").weights_onchip);
  EXPECT_FALSE(layer_named(p, "y").weights_onchip);
  EXPECT_FALSE(layer_named(p, "z").weights_onchip);
}

TEST(Projection, ALayerThatDoesNotFitIsSkippedAndSmallerOnesStillPinned) {
  // Capacity 3 MB. r: 4 MB of weights, no ops, 9e-12 s/B, ranks first but cannot fit.
  // s: 1e9 ops = 10 us; 2 MB: from DRAM 20 us, on-chip max(10, 2) = 10 us -> 5e-12 s/B: pinned.
  const Projection p = project({{"r", 0, 4e6, 0}, {"s", 1e9, 2e6, 0}}, accelerator(3e6));
  EXPECT_FALSE(layer_named(p, "r").weights_onchip);
  EXPECT_TRUE(layer_named(p, "s").weights_onchip);
  EXPECT_DOUBLE_EQ(layer_named(p, "s").time_s, 1e-5);
  EXPECT_EQ(layer_named(p, "s").bound, "compute");
  EXPECT_DOUBLE_EQ(p.time_s, 4e-5 + 1e-5);
}

TEST(Projection, ComputeBoundLayerIsNotPinned) {
  // c: 1e12 ops = 10 ms, 1 MB weights = 10 us from DRAM: compute bound either way, saves 0.
  // m: no ops, 1 MB weights: saves 9 us. Capacity 1.5 MB holds one of them: m, though c comes
  // first. With room to spare, c still is not pinned: pinning it gains nothing.
  const std::vector<LayerDemand> layers = {{"c", 1e12, 1e6, 0}, {"m", 0, 1e6, 0}};
  for (double capacity : {1.5e6, 1e9}) {
    const Projection p = project(layers, accelerator(capacity));
    EXPECT_FALSE(layer_named(p, "c").weights_onchip) << capacity;
    EXPECT_TRUE(layer_named(p, "m").weights_onchip) << capacity;
    EXPECT_DOUBLE_EQ(layer_named(p, "c").time_s, 0.01);
    EXPECT_EQ(layer_named(p, "c").bound, "compute");
    EXPECT_DOUBLE_EQ(layer_named(p, "m").time_s, 1e-6);
    EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 1e6);
  }
}

TEST(Projection, ActivationsGetTheCapacityLeftAfterPinnedWeightsLayerByLayer) {
  // Capacity 3 MB; w's 2 MB of weights are pinned, leaving 1 MB for each layer's activations.
  // x (1 MB) and z (1 MB) fit, each on its own, not summed; y (1.5 MB) goes to DRAM.
  const Projection p = project(
      {{"w", 0, 2e6, 0}, {"x", 0, 0, 1e6}, {"y", 0, 0, 1.5e6}, {"z", 0, 0, 1e6}}, accelerator(3e6));
  EXPECT_DOUBLE_EQ(p.onchip_weight_bytes, 2e6);
  EXPECT_TRUE(layer_named(p, "w").weights_onchip);
  EXPECT_FALSE(layer_named(p, "w").activations_onchip);  // it has none
  EXPECT_TRUE(layer_named(p, "x").activations_onchip);
  EXPECT_FALSE(layer_named(p, "x").weights_onchip);  // it has none
  EXPECT_DOUBLE_EQ(layer_named(p, "x").time_s, 1e-6);
  EXPECT_FALSE(layer_named(p, "y").activations_onchip);
  EXPECT_DOUBLE_EQ(layer_named(p, "y").time_s, 1.5e-5);
  EXPECT_EQ(layer_named(p, "y").bound, "dram");
  EXPECT_TRUE(layer_named(p, "z").activations_onchip);
  EXPECT_DOUBLE_EQ(p.time_s, 2e-6 + 1e-6 + 1.5e-5 + 1e-6);
}

TEST(Projection, SlowOnChipMemoryIsNotUsed) {
  // On-chip at 10 GB/s, slower than DRAM: neither weights nor activations move there.
  const Accelerator slow{100e12, 100e9, 1e9, 10e9};
  const Projection p = project({{"a", 0, 1e6, 1e6}}, slow);
  EXPECT_FALSE(p.layers[0].weights_onchip);
  EXPECT_FALSE(p.layers[0].activations_onchip);
  EXPECT_DOUBLE_EQ(p.time_s, 2e-5);
}

TEST(Projection, TiesNameComputeAndEmptyModelsTakeNoTime) {
  // 1e9 ops = 10 us and 1 MB from DRAM = 10 us: compute wins the tie.
  const Projection p = project({{"even", 1e9, 0, 1e6}}, accelerator(0));
  EXPECT_EQ(p.layers[0].bound, "compute");
  EXPECT_DOUBLE_EQ(p.time_s, 1e-5);

  const Projection empty = project({}, accelerator(1e6));
  EXPECT_TRUE(empty.layers.empty());
  EXPECT_DOUBLE_EQ(empty.time_s, 0.0);
  EXPECT_DOUBLE_EQ(empty.achieved_ops_per_s, 0.0);
}

TEST(Projection, RejectsInvalidAcceleratorsAndDemands) {
  const std::vector<LayerDemand> ok = {{"a", 1, 1, 1}};
  EXPECT_THROW(project(ok, {0, 100e9, 0, 1e12}), UsageError);
  EXPECT_THROW(project(ok, {100e12, -1, 0, 1e12}), UsageError);
  EXPECT_THROW(project(ok, {100e12, 100e9, 0, 0}), UsageError);
  EXPECT_THROW(project(ok, {100e12, 100e9, 0, kInf}), UsageError);
  EXPECT_THROW(project(ok, {100e12, 100e9, -1, 1e12}), UsageError);
  EXPECT_THROW(project(ok, {100e12, 100e9, std::nan(""), 1e12}), UsageError);
  EXPECT_THROW(project({{"a", -1, 1, 1}}, accelerator(0)), UsageError);
  EXPECT_THROW(project({{"a", 1, kInf, 1}}, accelerator(0)), UsageError);
  EXPECT_THROW(project({{"a", 1, 1, -1}}, accelerator(0)), UsageError);
  expect_usage_error([&] { project(ok, {100e12, 0, 0, 1e12}); }, {"--dram-gbs"});
}

}  // namespace
}  // namespace plumb::analysis
