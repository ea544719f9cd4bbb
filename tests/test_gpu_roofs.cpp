// A GPU's roofs from the probe's "gpu" part (platform/gpu_probe.h), on a synthetic document so
// the CPU-only CI covers it: every GEMM peak the GPU ran becomes a dtype roof, the copy
// bandwidth the one memory roof; an operator is placed on them like a CPU one; a probe without
// a GPU, or without the dtype, says why.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"
#include "plumb/core/errors.h"

namespace plumb::analysis {
namespace {

// A probe document of a machine with a GPU: 50 TFLOP/s fp32, 400 tf32, 800 fp16, no bf16,
// 4 TB/s device copies; its CPU part has a 1 TFLOP/s fp32 GEMM and 100 GB/s of DRAM.
nlohmann::json probe_with_gpu() {
  return nlohmann::json::parse(R"({
    "peaks": {"fp32": {"supported": true, "engine": "vector", "isa": "avx2", "reason": "",
                       "by_threads": [{"threads": 1, "flops": 1e12}],
                       "gemm": [{"threads": 1, "flops": 1e12, "supported": true,
                                 "library": "openblas"}]}},
    "bandwidth": {"levels": [{"level": "dram", "threads": 1, "triad": 100e9, "read": 120e9,
                              "capacity_bytes": 0, "merged_into": ""}]},
    "gpu": {
      "available": true, "device": "Test GPU", "device_count": 1,
      "peaks": {
        "fp32": {"supported": true, "gemm_flops": 50e12, "size": 4096},
        "tf32": {"supported": true, "gemm_flops": 400e12, "size": 4096},
        "fp16": {"supported": true, "gemm_flops": 800e12, "size": 4096},
        "bf16": {"supported": false, "reason": "no bf16 GEMM on this GPU"}
      },
      "bandwidth": {"copy": 4e12, "bytes": 268435456}
    }
  })");
}

TEST(GpuRoofs, EveryGemmPeakIsADtypeRoofAndTheCopyTheMemoryRoof) {
  const Ceilings c = gpu_ceilings_from_probe(probe_with_gpu(), "fp32");
  EXPECT_DOUBLE_EQ(c.peak_flops, 50e12);
  EXPECT_NE(c.peak_source.find("fp32 cuBLAS GEMM"), std::string::npos) << c.peak_source;
  EXPECT_NE(c.peak_source.find("Test GPU"), std::string::npos) << c.peak_source;
  ASSERT_EQ(c.by_dtype.size(), 3u);  // bf16 was not supported
  EXPECT_DOUBLE_EQ(c.by_dtype.at("tf32").flops, 400e12);
  EXPECT_DOUBLE_EQ(c.by_dtype.at("fp16").flops, 800e12);
  ASSERT_EQ(c.memory.size(), 1u);
  EXPECT_EQ(c.memory[0].level, "device memory");
  EXPECT_DOUBLE_EQ(c.memory[0].bytes_per_s, 4e12);
  EXPECT_EQ(c.memory[0].capacity_bytes, 0);  // holds any footprint
  // The run's own dtype sets the peak.
  EXPECT_DOUBLE_EQ(gpu_ceilings_from_probe(probe_with_gpu(), "fp16").peak_flops, 800e12);
}

TEST(GpuRoofs, OperatorsArePlacedOnTheGpusRoofs) {
  const Ceilings c = gpu_ceilings_from_probe(probe_with_gpu(), "fp32");
  // A convolution: 100 GFLOP from 1 GB (100 FLOP/B) in 4 ms. The fp32 ridge is 12.5 FLOP/B:
  // compute-bound, at 25 TFLOP/s = half the roof.
  const Placement conv = place({"conv", 100e9, 1e9, 1e9, 4e-3, "fp32"}, c);
  EXPECT_EQ(conv.bound, "compute");
  EXPECT_EQ(conv.level, "device memory");
  EXPECT_DOUBLE_EQ(conv.utilisation, 0.5);
  // An elementwise add: 1 FLOP per 12 bytes, memory-bound on the device's bandwidth; at
  // 1 GB in 0.5 ms it streams at half of it.
  const Placement add = place({"add", 1e9 / 12, 1e9, 1e9, 0.5e-3, "fp32"}, c);
  EXPECT_EQ(add.bound, "memory:device memory");
  EXPECT_NEAR(add.roof_fraction, 0.5, 1e-12);
  // The same intensity as the convolution in fp16 sits under fp16's roof, whose ridge
  // (200 FLOP/B) it does not reach: memory-bound by prediction, and at 25 of the 400 TFLOP/s
  // its bandwidth allows, below a tenth of its roof: overhead.
  const Placement half = place({"conv", 100e9, 1e9, 1e9, 4e-3, "fp16"}, c);
  EXPECT_DOUBLE_EQ(half.peak_flops, 800e12);
  EXPECT_EQ(half.predicted_bound, "memory:device memory");
  EXPECT_EQ(half.bound, "overhead");
}

TEST(GpuRoofs, TheDeviceDecidesWhichPartOfTheProbeGivesTheRoofs) {
  // A GPU run reads the "gpu" part, a CPU run the CPU's.
  for (const char* gpu : {"cuda", "cuda:0"}) {
    const Ceilings c =
        device_ceilings_from_probe(probe_with_gpu(), gpu, "fp32", 2, PeakKind::kGemm);
    EXPECT_DOUBLE_EQ(c.peak_flops, 50e12) << gpu;
    EXPECT_EQ(c.memory.at(0).level, "device memory") << gpu;
  }
  const Ceilings cpu =
      device_ceilings_from_probe(probe_with_gpu(), "cpu", "fp32", 2, PeakKind::kGemm);
  EXPECT_DOUBLE_EQ(cpu.peak_flops, 1e12);
  EXPECT_EQ(cpu.memory.at(0).level, "dram");
}

TEST(GpuRoofs, AProbeWithoutTheGpuOrTheDtypeSaysWhy) {
  auto message = [](const nlohmann::json& probe, const std::string& dtype) {
    try {
      gpu_ceilings_from_probe(probe, dtype);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json none = probe_with_gpu();
  none["gpu"] = {{"available", false}, {"reason", "no CUDA device visible to LibTorch"}};
  EXPECT_NE(message(none, "fp32").find("no CUDA device visible"), std::string::npos);
  none.erase("gpu");  // a probe stored before plumb probed GPUs
  EXPECT_NE(message(none, "fp32").find("predates GPU probing"), std::string::npos);
  EXPECT_NE(message(probe_with_gpu(), "bf16").find("no bf16 GEMM on this GPU"), std::string::npos);
  EXPECT_NE(message(probe_with_gpu(), "int8").find("no int8 GEMM peak"), std::string::npos);
  nlohmann::json no_copy = probe_with_gpu();
  no_copy["gpu"].erase("bandwidth");
  EXPECT_NE(message(no_copy, "fp32").find("no memory bandwidth"), std::string::npos);
}

}  // namespace
}  // namespace plumb::analysis
