// Intel AMX (Advanced Matrix Extensions) kernels: the matrix engine's register-resident peak
// per dtype (tdpbf16ps for bf16, tdpbusd u8 x s8 for int8), the core clock while the engine is
// busy, and one tile product on given data so that a test can check the op count against a
// product computed by hand. Written in inline assembly (binutils knows the AMX mnemonics), not
// with the compiler's intrinsics, whose tile loads and stores do not tell the compiler that
// they read and write memory.
//
// Tiles: 16 rows of 64 bytes each (palette 1, the largest shape). One tile product C += A x B:
//   bf16: A 16 x 32 bf16, B 16 rows of 16 bf16 pairs (VNNI layout), C 16 x 16 fp32:
//         16 x 16 x 32 = 8192 multiply-adds = 16384 FLOPs
//   int8: A 16 x 64 u8,   B 16 rows of 16 s8 quadruples,            C 16 x 16 s32:
//         16 x 16 x 64 = 16384 multiply-adds = 32768 ops
// Linux (5.16+) grants the tile state only after the process asks for it (arch_prctl
// ARCH_REQ_XCOMP_PERM); amx_usable() asks once and says why when it is refused.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/platform/cpu_features.h"

namespace plumb::platform {

// The signature every register-resident peak and clock kernel shares: `iterations` loop trips,
// then a value depending on all the work written to `sink` so that nothing can be dropped.
using PeakKernel = void (*)(uint64_t iterations, volatile double* sink);

inline constexpr int kTileRows = 16;
inline constexpr int kTileRowBytes = 64;

// True when this CPU has AMX for `dtype` (bf16: amx_bf16, int8: amx_int8, both with amx_tile
// and the OS saving the tile state) and the kernel granted this process the tile data
// permission; otherwise false with the reason. Other dtypes: false ("no AMX instruction for
// fp32", ...).
bool amx_usable(const CpuFeatures& cpu, Dtype dtype, std::string* reason);

// Operations of one tile product of `dtype` with the full tile shape: 2 x M x N x K.
double tile_ops_per_instruction(Dtype dtype);

// The peak kernel (six independent accumulator tiles, sources in two more) and the clock
// kernel (a dependent chain of register adds with a tile product every 20 of them, so the
// core runs at the clock it has while the matrix engine is busy and the adds set the pace:
// kClockChainCyclesPerIteration cycles per trip). nullptr for dtypes without an AMX kernel.
// Only call them after amx_usable() said true.
PeakKernel tile_peak_kernel(Dtype dtype);
PeakKernel tile_clock_kernel(Dtype dtype);

// One tile product on the matrix engine, C = A x B with C zeroed first, in the layouts above
// (a: 16 rows x 64 bytes, b: 16 rows x 64 bytes, c: 16 x 16). false when AMX is not usable.
bool tile_product_bf16(const uint16_t* a, const uint16_t* b, float* c);
bool tile_product_int8(const uint8_t* a, const int8_t* b, int32_t* c);

}  // namespace plumb::platform
