// The sequences whose throughput is an engine's instruction peak (peak_kernels.h): the
// register-resident vector kernels (FMA, dot-product and int8 sequences per ISA) and AMX's tile
// kernels (tile_kernels.h), with what one trip of each does, and which of them an engine on a
// given CPU runs. Private to the platform layer: peak_kernels.cpp times them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/platform/cpu_features.h"  // CpuFeatures; Dtype (core/dtype.h)
#include "plumb/platform/peak_theory.h"   // EngineKind
#include "plumb/platform/tile_kernels.h"  // PeakKernel

namespace plumb::platform {

// The plain dependent add chain (run_clock_chain), the clock kernel where no engine-specific
// one exists (SSE2).
void plain_clock_kernel(uint64_t iterations, volatile double* sink);

struct PeakVariant {
  std::string isa;     // "" = unsupported
  std::string reason;  // why unsupported
  PeakKernel kernel = nullptr;
  double ops_per_iteration = 0;  // chains x ops per instruction (header's convention)
  double ops_per_instruction = 0;
  int instruction_bits = 0;  // 0 for tiles
  EngineKind engine = EngineKind::kVector;
  // The clock kernel that keeps the same engine busy (kClockChainCyclesPerIteration cycles a
  // trip); the plain add chain where there is none (SSE2).
  PeakKernel clock = plain_clock_kernel;
};

// The vector sequences an engine on `cpu` runs `dtype` with, each to be timed (the fastest is
// the engine's peak): one, except int8 without VNNI on AVX2, where the three-instruction form
// is timed in oneDNN's order and in plumb's 4-chain loop. One unsupported PeakVariant with the
// reason when there is none.
std::vector<PeakVariant> select_vector_variants(Dtype dtype, const CpuFeatures& cpu);

// The matrix engine's sequence for `dtype` (AMX tiles, bf16 and int8), unsupported with the
// reason where the CPU has none.
PeakVariant select_matrix_variant(Dtype dtype, const CpuFeatures& cpu);

}  // namespace plumb::platform
