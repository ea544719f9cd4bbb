// Benchmark/cross-check: the int8 vector roof a CPU without VNNI gets (this CPU's int8 kernels
// chosen as if it had AVX2 only, or AVX-512BW without VNNI with --avx512) against oneDNN's
// int8 GEMM, both through the probe's own code. Run it with oneDNN held to the same ISA, e.g.
//   ONEDNN_MAX_CPU_ISA=AVX2 ./build/bench/plumb_bench_int8_roof
//   ONEDNN_MAX_CPU_ISA=AVX512_CORE ./build/bench/plumb_bench_int8_roof --avx512
// It prints each timed sequence, the roof (the fastest), the GEMM per thread count and the
// probe's verdict (a GEMM more than 5% above the roof means the roof misses a sequence).
#include <cstdio>
#include <cstring>
#include <vector>

#include "plumb/platform/cpu_features.h"
#include "plumb/platform/gemm_peaks.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/platform/peak_theory.h"

int main(int argc, char** argv) {
  using namespace plumb::platform;
  using plumb::Dtype;
  const bool avx512 = argc > 1 && std::strcmp(argv[1], "--avx512") == 0;
  CpuFeatures cpu = detect_cpu_features();
  cpu.avx512_vnni = cpu.avx_vnni = cpu.avx512_bf16 = cpu.avx512_fp16 = false;
  if (!avx512) cpu.avx512f = cpu.avx512bw = cpu.avx512vl = false;
  const int threads = static_cast<int>(allowed_cpus().size());
  const InstructionPeak roof = measure_instruction_peak(Dtype::kInt8, threads, 0.4, cpu);
  if (!roof.outcome.ok()) {
    std::printf("int8 roof unsupported: %s\n", roof.outcome.reason.c_str());
    return 1;
  }
  for (const SequencePeak& s : roof.sequences)
    std::printf("sequence %-56s %8.1f GOP/s at %d thread(s)\n", s.isa.c_str(), s.ops_per_s / 1e9,
                s.threads);
  std::vector<int> counts;
  for (const PeakPoint& p : roof.by_threads) counts.push_back(p.threads);
  const std::vector<GemmPeak> gemms = measure_gemm_peaks(1024, counts, 0.5);
  for (const PeakPoint& p : roof.by_threads) {
    std::printf("%d thread(s): roof %.1f GOP/s (%s%s)\n", p.threads, p.ops_per_s / 1e9,
                roof.isa.c_str(), p.disturbed ? ", disturbed" : "");
    for (const GemmPeak& g : gemms) {
      if (g.dtype != "int8" || g.threads != p.threads || !g.outcome.ok()) continue;
      const GemmAgainstRoof check = gemm_against_roof("int8", p.ops_per_s, roof.isa, g.ops_per_s,
                                                      g.library, g.implementation);
      std::printf("  %s (%s) 1024^3: %.1f GOP/s = %.2fx the roof%s\n", g.library.c_str(),
                  g.implementation.c_str(), g.ops_per_s / 1e9, check.ratio,
                  check.above ? ": ABOVE (the roof misses a sequence)" : "");
    }
  }
  return 0;
}
