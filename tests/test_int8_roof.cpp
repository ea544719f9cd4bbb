// The int8 roof on CPUs without VNNI: which sequences the probe times for a CPU's features (a
// pure function, so AVX2-only and AVX-512-without-VNNI CPUs are tested here on any machine),
// the fastest of them becoming the roof and named, the kernels themselves on this CPU, and the
// probe's rule that a library GEMM above the roof means the roof is wrong, on made-up rates.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plumb/platform/cpu_features.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/platform/peak_theory.h"

namespace plumb::platform {
namespace {

const std::string kOneDnnAvx2 = "avx2 vpmaddubsw+vpmaddwd+vpaddd (oneDNN's order)";
const std::string kLoopAvx2 = "avx2 vpmaddubsw+vpmaddwd+vpaddd (4-chain loop)";

// An AMD Zen 3 as cpuid describes it: AVX2 and FMA, no AVX-512, no VNNI.
CpuFeatures zen3() {
  CpuFeatures cpu;
  cpu.vendor = "AuthenticAMD";
  cpu.family = 25;
  cpu.model = 1;
  cpu.sse2 = cpu.avx = cpu.avx2 = cpu.fma = true;
  return cpu;
}

TEST(Int8Roof, EachCpuTimesTheSequencesItsEnginesRun) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "needs an x86-64 build (the instruction-peak kernels are x86-64 only)";
#endif
  // AVX2 without VNNI: oneDNN's order and plumb's loop of the same three instructions.
  EXPECT_EQ(vector_sequences(Dtype::kInt8, zen3()),
            (std::vector<std::string>{kOneDnnAvx2, kLoopAvx2}));
  // AVX-512 without VNNI (Skylake-SP): oneDNN's avx512_core kernels, on zmm registers.
  CpuFeatures skx = zen3();
  skx.avx512f = skx.avx512bw = skx.avx512vl = true;
  EXPECT_EQ(vector_sequences(Dtype::kInt8, skx),
            std::vector<std::string>{"avx512bw vpmaddubsw+vpmaddwd+vpaddd (oneDNN's order)"});
  // VNNI: one instruction does the three's work, and every engine uses it.
  CpuFeatures vnni = skx;
  vnni.avx512_vnni = true;
  EXPECT_EQ(vector_sequences(Dtype::kInt8, vnni), std::vector<std::string>{"avx512_vnni vpdpbusd"});
  CpuFeatures alder = zen3();
  alder.avx_vnni = true;
  EXPECT_EQ(vector_sequences(Dtype::kInt8, alder), std::vector<std::string>{"avx_vnni vpdpbusd"});
  // Nothing to run int8 on: no sequence, and why.
  CpuFeatures sse2;
  sse2.sse2 = true;
  std::string reason;
  EXPECT_TRUE(vector_sequences(Dtype::kInt8, sse2, &reason).empty());
  EXPECT_NE(reason.find("avx2"), std::string::npos) << reason;
  // Other dtypes keep their one sequence.
  EXPECT_EQ(vector_sequences(Dtype::kFp32, zen3()), std::vector<std::string>{"avx2 vfmadd231ps"});
}

InstructionPeak synthetic(const std::string& isa, double ops_per_s, int threads) {
  InstructionPeak p;
  p.dtype = "int8";
  p.outcome = Outcome::success();
  p.isa = isa;
  p.best_ops_per_s = ops_per_s;
  p.best_threads = threads;
  return p;
}

TEST(Int8Roof, TheFastestSequenceIsTheEnginesPeakAndEveryOneIsListed) {
  // The Zen 3's figures: plumb's loop 196 GOP/s; oneDNN's order as fast as its GEMM, 270.
  const InstructionPeak peak =
      fastest_sequence({synthetic(kOneDnnAvx2, 270e9, 2), synthetic(kLoopAvx2, 196e9, 2)});
  EXPECT_EQ(peak.isa, kOneDnnAvx2);
  EXPECT_DOUBLE_EQ(peak.best_ops_per_s, 270e9);
  ASSERT_EQ(peak.sequences.size(), 2u);
  EXPECT_EQ(peak.sequences[1].isa, kLoopAvx2);
  EXPECT_DOUBLE_EQ(peak.sequences[1].ops_per_s, 196e9);
  // Whichever comes first.
  EXPECT_EQ(
      fastest_sequence({synthetic(kOneDnnAvx2, 150e9, 1), synthetic(kLoopAvx2, 196e9, 2)}).isa,
      kLoopAvx2);
  // An unsupported engine stays unsupported, with nothing listed.
  InstructionPeak none;
  none.dtype = "int8";
  none.outcome.reason = "no avx2";
  const InstructionPeak unsupported = fastest_sequence({none});
  EXPECT_FALSE(unsupported.outcome.ok());
  EXPECT_EQ(unsupported.outcome.reason, "no avx2");
  EXPECT_TRUE(unsupported.sequences.empty());
}

TEST(Int8Roof, AGemmAboveTheRoofMeansTheRoofIsWrong) {
  // The Zen 3 before: oneDNN's int8 GEMM 269.8 GOP/s over a 195.9 roof is flagged and said.
  const GemmAgainstRoof zen3_before =
      gemm_against_roof("int8", 195.9e9, kLoopAvx2, 269.8e9, "onednn matmul", "gemm:jit");
  EXPECT_TRUE(zen3_before.above);
  EXPECT_NEAR(zen3_before.ratio, 1.377, 1e-3);
  EXPECT_NE(zen3_before.note.find("1.38x the int8 roof (" + kLoopAvx2 + ")"), std::string::npos)
      << zen3_before.note;
  EXPECT_NE(zen3_before.note.find("misses an engine or a faster sequence"), std::string::npos);
  // Within the noise between two measurements of one roof: not flagged.
  for (double gemm : {200e9, 263e9, 270e9 * 1.05}) {
    const GemmAgainstRoof near = gemm_against_roof("int8", 270e9, kOneDnnAvx2, gemm, "onednn", "x");
    EXPECT_FALSE(near.above) << gemm;
    EXPECT_TRUE(near.note.empty()) << gemm;
  }
  EXPECT_TRUE(gemm_against_roof("int8", 270e9, kOneDnnAvx2, 270e9 * 1.051, "onednn", "x").above);
  // A GEMM where no roof was measured: the roof misses an engine, without a made-up ratio.
  const GemmAgainstRoof no_roof = gemm_against_roof("bf16", 0, "", 50e9, "onednn matmul", "ref");
  EXPECT_TRUE(no_roof.above);
  EXPECT_EQ(no_roof.ratio, 0);
  EXPECT_NE(no_roof.note.find("no bf16 roof"), std::string::npos) << no_roof.note;
  // No GEMM ran: nothing to say.
  EXPECT_FALSE(gemm_against_roof("fp16", 0, "", 0, "onednn matmul", "").above);
}

// A kernel that counts work it does not do shows as more bits per cycle than any engine moves.
void expect_plausible(const InstructionPeak& p) {
  const InferredTheory t = infer_theory(theory_input(p));
  if (!t.inferred) return;  // every clock run preempted
  EXPECT_LE(t.measured_instructions_per_cycle * p.instruction_bits, 1024 * kRateSlack) << p.isa;
}

TEST(Int8Roof, TheAvx2SequencesRunHereAndTheFasterIsTheRoof) {
  // This CPU's int8 as an AVX2-only CPU would time it (VNNI and AVX-512 hidden).
  CpuFeatures avx2 = detect_cpu_features();
  if (!avx2.avx2) GTEST_SKIP() << "needs AVX2";
  avx2.avx512f = avx2.avx512bw = avx2.avx512vl = false;
  avx2.avx512_vnni = avx2.avx_vnni = avx2.avx512_bf16 = avx2.avx512_fp16 = false;
  const InstructionPeak p = measure_instruction_peak(Dtype::kInt8, 1, 0.05, avx2);
  ASSERT_TRUE(p.outcome.ok()) << p.outcome.reason;
  ASSERT_EQ(p.sequences.size(), 2u);
  double fastest = 0;
  for (const SequencePeak& s : p.sequences) {
    EXPECT_GT(s.ops_per_s, 0) << s.isa;
    EXPECT_EQ(s.threads, 1) << s.isa;
    fastest = std::max(fastest, s.ops_per_s);
  }
  EXPECT_DOUBLE_EQ(p.best_ops_per_s, fastest);
  EXPECT_TRUE(p.isa == kOneDnnAvx2 || p.isa == kLoopAvx2) << p.isa;
  EXPECT_EQ(p.instruction_bits, 256);
  EXPECT_DOUBLE_EQ(p.ops_per_instruction, 64);  // 8 lanes x 8 ops: one vpdpbusd's work
  expect_plausible(p);
}

TEST(Int8Roof, TheAvx512SequenceRunsWhereTheCpuHasIt) {
  CpuFeatures skx = detect_cpu_features();
  if (!skx.avx512f || !skx.avx512bw) GTEST_SKIP() << "needs AVX-512F and BW";
  skx.avx512_vnni = skx.avx_vnni = false;
  const InstructionPeak p = measure_instruction_peak(Dtype::kInt8, 1, 0.05, skx);
  ASSERT_TRUE(p.outcome.ok()) << p.outcome.reason;
  EXPECT_EQ(p.isa, "avx512bw vpmaddubsw+vpmaddwd+vpaddd (oneDNN's order)");
  EXPECT_EQ(p.instruction_bits, 512);
  EXPECT_GT(p.best_ops_per_s, 0);
  expect_plausible(p);
}

}  // namespace
}  // namespace plumb::platform
