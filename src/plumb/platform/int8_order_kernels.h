// int8 instruction-peak kernels that issue the three-instruction dot product of CPUs without
// VNNI (vpmaddubsw + vpmaddwd + vpaddd) in the order and registers oneDNN's JIT kernels do
// (peak_kernels.h times them beside its own loop and keeps the faster). Each runs `iterations`
// trips of register-resident work and writes a value to `sink`; a trip is 8 dot products of
// 256 bits (int8_avx2_onednn) or 16 of 512 bits (int8_avx512bw_onednn). x86-64 only; the
// caller checks the CPU has AVX2, or AVX-512F and BW.
#pragma once

#include <cstdint>

namespace plumb::platform {

#if defined(__x86_64__)
void int8_avx2_onednn(uint64_t iterations, volatile double* sink);
void int8_avx512bw_onednn(uint64_t iterations, volatile double* sink);
#endif

}  // namespace plumb::platform
