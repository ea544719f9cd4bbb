// Tests for theoretical peaks inferred from measured throughput (platform/peak_theory.h), the
// AMX tile kernels' op count against a tile product computed by hand (tile_kernels.h), and
// merging memory levels a machine cannot tell apart (indistinct_levels.h). The inference is
// tested on synthetic measurements of known cores (1x512, 2x512, 2x256 double-pumped, a model
// number masked by a hypervisor); the real-machine tests check only what holds on any x86 CPU.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/platform/indistinct_levels.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/platform/peak_theory.h"
#include "plumb/platform/tile_kernels.h"

namespace plumb::platform {
namespace {

// One thread of zmm FMAs (32 FLOPs each) measured at `per_cycle` instructions per cycle at
// 3 GHz, on a core whose table entry predicts `table_rate`.
TheoryInput zmm_fma(double per_cycle, double table_rate, const std::string& table) {
  TheoryInput in;
  in.engine = EngineKind::kVector;
  in.dtype = "fp32";
  in.instruction = "avx512 vfmadd231ps";
  in.instruction_bits = 512;
  in.ops_per_instruction = 32;
  in.clock_hz = 3e9;
  in.measured_ops_per_s = per_cycle * 32 * 3e9;
  in.table_instructions_per_cycle = table_rate;
  in.table_description = table;
  in.cpu_model_text = "0xA7";
  return in;
}

// One thread of AMX bf16 tile products measured at one per `cycles_per_instruction` cycles at
// 2 GHz, on a core the table gives one per 16.
TheoryInput amx_bf16(double cycles_per_instruction) {
  TheoryInput in;
  in.engine = EngineKind::kMatrix;
  in.dtype = "bf16";
  in.instruction = "amx tdpbf16ps";
  in.ops_per_instruction = tile_ops_per_instruction(Dtype::kBf16);
  in.clock_hz = 2e9;
  in.measured_ops_per_s = in.ops_per_instruction / cycles_per_instruction * 2e9;
  in.table_instructions_per_cycle = 1.0 / 16;
  in.table_description = "sapphirerapids: AMX, 1 tile instruction per 16 cycles";
  in.cpu_model_text = "0x8F";
  return in;
}

TEST(PeakTheory, OneUnitOf512Bits) {
  // Rocket Lake as it is: one 512-bit FMA unit, measured at 97% of it.
  const InferredTheory t = infer_theory(zmm_fma(0.97, 1, "rocketlake: 1x512 FMA"));
  ASSERT_TRUE(t.inferred);
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1);
  EXPECT_DOUBLE_EQ(t.ops_per_core_cycle, 32);
  EXPECT_EQ(t.description, "1x512");
  EXPECT_TRUE(t.agrees_with_table);
  EXPECT_NEAR(t.measured_fraction, 0.97, 1e-9);
  EXPECT_EQ(t.note, "");
}

TEST(PeakTheory, TwoUnitsOf512BitsBelowTheirClockStayTwoUnits) {
  // A Xeon measured at 1.41 zmm FMAs per cycle against a clock taken beside the kernel: a
  // two-unit core below its peak, not a one-unit core 41% above it.
  const InferredTheory t = infer_theory(zmm_fma(1.41, 2, "sapphirerapids: 2x512 FMA"));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 2);
  EXPECT_EQ(t.description, "2x512");
  EXPECT_TRUE(t.agrees_with_table);
  EXPECT_NEAR(t.measured_fraction, 0.705, 1e-9);
  EXPECT_EQ(t.note, "");
}

// An AVX-512 CPU as cpuid would describe it.
CpuFeatures avx512_cpu(const char* vendor, int family, int model) {
  CpuFeatures cpu;
  cpu.vendor = vendor;
  cpu.family = family;
  cpu.model = model;
  cpu.avx = cpu.fma = cpu.avx2 = cpu.avx512f = true;
  return cpu;
}

TEST(PeakTheory, DoublePumped256BitUnitsIssueOne512BitInstructionPerCycle) {
  // Zen 4: 2 x 256-bit pipes run a zmm FMA per cycle, the same throughput as 1 x 512.
  const CpuFeatures zen4 = avx512_cpu("AuthenticAMD", 25, 17);
  EXPECT_DOUBLE_EQ(table_vector_rate(zen4, 512), 1);
  EXPECT_DOUBLE_EQ(table_vector_rate(zen4, 256), 2);
  EXPECT_EQ(table_vector_description(zen4), "zen4: 2x256 FMA");
  const InferredTheory t =
      infer_theory(zmm_fma(0.99, table_vector_rate(zen4, 512), table_vector_description(zen4)));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1);
  EXPECT_TRUE(t.agrees_with_table);
  EXPECT_EQ(t.note, "");
}

TEST(PeakTheory, MaskedModelIsOverruledByMeasurementAndSaidSo) {
  // The hypervisor reports Rocket Lake (1 x 512); the core retires 1.9 zmm FMAs per cycle.
  const CpuFeatures masked = avx512_cpu("GenuineIntel", 6, 0xA7);
  EXPECT_EQ(table_vector_description(masked), "rocketlake: 1x512 FMA");
  const InferredTheory t =
      infer_theory(zmm_fma(1.9, table_vector_rate(masked, 512), table_vector_description(masked)));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 2);
  EXPECT_FALSE(t.agrees_with_table);
  EXPECT_EQ(t.note,
            "CPU reports model 0xA7 (rocketlake: 1x512 FMA); measured throughput shows 2x512; the "
            "hypervisor may mask the model");
  EXPECT_LE(t.measured_fraction, 1.0);
}

TEST(PeakTheory, SlowerThanTheTableAlsoNamesASharedCore) {
  // The table's AMX core retires a tile product every 16 cycles; a core shared with another
  // tenant's tiles was measured at one per 32 (the Xeon VM, in a busy minute).
  const InferredTheory t = infer_theory(amx_bf16(30));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1.0 / 32);
  EXPECT_NE(t.note.find("measured throughput shows 1 tile instruction per 32 cycles; the core "
                        "may have been shared while it ran"),
            std::string::npos)
      << t.note;
}

TEST(PeakTheory, UnknownModelIsInferredAndSaidSo) {
  const InferredTheory t = infer_theory(zmm_fma(1.95, 0, ""));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 2);
  EXPECT_FALSE(t.agrees_with_table);
  EXPECT_NE(t.note.find("not in plumb's table"), std::string::npos) << t.note;
  EXPECT_NE(t.note.find("2x512"), std::string::npos) << t.note;
}

TEST(PeakTheory, MeasuredAboveTheoryIsAlwaysExplained) {
  // 1.15 per cycle rounds to 1 (within the clock slack), so it sits 15% above its theory.
  InferredTheory t = infer_theory(zmm_fma(1.15, 1, "rocketlake: 1x512 FMA"));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1);
  EXPECT_GT(t.measured_fraction, 1 + kAboveTheoryTolerance);
  EXPECT_NE(t.note.find("one thread measured 115% of theory"), std::string::npos) << t.note;
  // Within the tolerance: nothing to explain.
  t = infer_theory(zmm_fma(1.03, 1, "rocketlake: 1x512 FMA"));
  EXPECT_EQ(t.note, "");
  // Above every engine there is: an op-count or clock error, said as such.
  t = infer_theory(zmm_fma(3.0, 2, "sapphirerapids: 2x512 FMA"));
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 2);
  EXPECT_NE(t.note.find("faster than any engine"), std::string::npos) << t.note;
}

TEST(PeakTheory, AnyThreadCountAboveTheoryIsNamedInItsLine) {
  // The probe explains every printed point, not only the one-thread point theory comes from.
  EXPECT_EQ(above_theory_line(1.04, 2, false), "");
  const std::string two = above_theory_line(1.07, 2, false);
  EXPECT_NE(two.find("2 threads measured 107% of theory"), std::string::npos) << two;
  EXPECT_NE(two.find("faster than the clock measured beside the kernel"), std::string::npos);
  EXPECT_NE(above_theory_line(2.5, 4, true).find("op count or the clock is wrong"),
            std::string::npos);
}

TEST(PeakTheory, AThreadCountFarBelowOneThreadsEfficiencyIsExplained) {
  // Seen on the Xeon VM: two threads of the AMX kernel at 54% of theory, one thread at 100%.
  const std::string line = shared_core_line(0.54, 1.0, 2);
  EXPECT_NE(line.find("2 threads reached 54% of theory against one thread's 100%"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("sibling hyperthread"), std::string::npos);
  // Ordinary spread between thread counts says nothing.
  EXPECT_EQ(shared_core_line(0.91, 1.0, 2), "");
  EXPECT_EQ(shared_core_line(0.5, 0.0, 2), "");
}

TEST(PeakTheory, OtherVectorInstructionsAreInferredOnTheirOwn) {
  // vpdpbusd zmm issuing once per cycle on a core with two FMA units: its own rate, and the
  // note names the instruction rather than blaming the model number.
  TheoryInput in = zmm_fma(0.98, 2, "icelake-server: 2x512 FMA");
  in.dtype = "int8";
  in.instruction = "avx512_vnni vpdpbusd";
  in.ops_per_instruction = 128;
  in.measured_ops_per_s = 0.98 * 128 * 3e9;
  const InferredTheory t = infer_theory(in);
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1);
  EXPECT_DOUBLE_EQ(t.ops_per_core_cycle, 128);
  EXPECT_NE(t.note.find("avx512_vnni vpdpbusd: measured throughput shows 1x512"), std::string::npos)
      << t.note;
  EXPECT_EQ(t.note.find("hypervisor"), std::string::npos) << t.note;
}

TEST(PeakTheory, MatrixEngineRatesArePowersOfTwoCycles) {
  const InferredTheory t = infer_theory(amx_bf16(16 / 0.9));  // 90% of 1 per 16 cycles
  EXPECT_DOUBLE_EQ(t.instructions_per_cycle, 1.0 / 16);
  EXPECT_DOUBLE_EQ(t.ops_per_core_cycle, 1024);  // bf16: 1024 FLOPs per cycle per core
  EXPECT_EQ(t.description, "1 tile instruction per 16 cycles");
  EXPECT_TRUE(t.agrees_with_table);
  EXPECT_NEAR(t.measured_fraction, 0.9, 1e-9);
  const std::vector<double> rates = valid_issue_rates(EngineKind::kMatrix, 0);
  EXPECT_DOUBLE_EQ(rates.front(), 1.0 / 64);
  EXPECT_DOUBLE_EQ(rates.back(), 1);
}

TEST(PeakTheory, NothingMeasuredInfersNothing) {
  TheoryInput in = zmm_fma(1, 1, "x");
  in.clock_hz = 0;
  EXPECT_FALSE(infer_theory(in).inferred);
  in = zmm_fma(0, 1, "x");
  EXPECT_FALSE(infer_theory(in).inferred);
}

TEST(PeakTheory, MeasuredFp32OnThisMachineIsAValidEngine) {
  // Whatever x86 CPU this is: one thread of FMAs at the clock measured under FMA load retires
  // no more than the widest engine there is (1024 bits per cycle, with the clock slack), and
  // the inferred theory is never exceeded without a note.
  const InstructionPeak peak = measure_instruction_peak(Dtype::kFp32, 1, 0.03);
#if !defined(__x86_64__)
  GTEST_SKIP() << "needs an x86-64 CPU (the instruction-peak kernels are x86-64 only)";
#endif
  ASSERT_TRUE(peak.outcome.ok()) << peak.outcome.reason;
  ASSERT_EQ(peak.by_threads.size(), 1u);
  const PeakPoint& one = peak.by_threads[0];
  ASSERT_GT(one.clock_hz, 0);
  EXPECT_GT(peak.ops_per_instruction, 0);
  const InferredTheory t = infer_theory(theory_input(peak));
  ASSERT_TRUE(t.inferred);
  EXPECT_LE(t.measured_instructions_per_cycle * peak.instruction_bits, 1024 * kRateSlack)
      << "more FMA bits per cycle than any core has: the op count or the clock is wrong";
  if (!one.disturbed) {
    EXPECT_GT(t.measured_fraction, 0.3);
  }
  if (t.measured_fraction > 1 + kAboveTheoryTolerance) {
    EXPECT_FALSE(t.note.empty());
  }
}

TEST(TileKernels, OpCountMatchesATileProductCountedByHand) {
  // C (16 x 16) += A (16 x K) x B, K = 32 bf16 or 64 int8 values per 64-byte row: count the
  // multiply-adds of the product written out as loops.
  for (Dtype dtype : {Dtype::kBf16, Dtype::kInt8}) {
    const int k = dtype == Dtype::kBf16 ? 32 : 64;
    double multiply_adds = 0;
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        for (int i = 0; i < k; ++i) multiply_adds += 1;
    EXPECT_DOUBLE_EQ(tile_ops_per_instruction(dtype), 2 * multiply_adds) << dtype_name(dtype);
  }
  EXPECT_EQ(tile_ops_per_instruction(Dtype::kFp32), 0);
}

// bf16 bits of a small integer-valued float (exact in bf16).
uint16_t bf16_of(float x) {
  uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

TEST(TileKernels, TileProductsMatchTheProductByHand) {
  const CpuFeatures cpu = detect_cpu_features();
  std::string reason;
  if (!amx_usable(cpu, Dtype::kBf16, &reason)) {
    EXPECT_FALSE(reason.empty());
    EXPECT_FALSE(tile_product_bf16(nullptr, nullptr, nullptr));  // refuses before touching them
    GTEST_SKIP() << "needs AMX: " << reason;
  }
  // bf16: A[m][k] = (m + k) % 5 - 2, B (VNNI pairs) row r holds B[2r][n], B[2r+1][n] for each n.
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  float ref[16 * 16] = {};
  auto av = [](int m, int k) { return static_cast<float>((m + k) % 5 - 2); };
  auto bv = [](int k, int n) { return static_cast<float>((2 * k + n) % 7 - 3); };
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 32; ++k) a[m * 32 + k] = bf16_of(av(m, k));
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n)
      for (int p = 0; p < 2; ++p) b[r * 32 + 2 * n + p] = bf16_of(bv(2 * r + p, n));
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n)
      for (int k = 0; k < 32; ++k) ref[m * 16 + n] += av(m, k) * bv(k, n);
  alignas(64) float c[16 * 16];
  ASSERT_TRUE(tile_product_bf16(a, b, c));
  for (int i = 0; i < 16 * 16; ++i) EXPECT_FLOAT_EQ(c[i], ref[i]) << i;

  if (!amx_usable(cpu, Dtype::kInt8, &reason)) GTEST_SKIP() << "needs AMX int8: " << reason;
  // int8: u8 A[m][k] = (m * 3 + k) % 11, s8 B (VNNI quadruples) row r holds B[4r..4r+3][n].
  alignas(64) uint8_t ua[16 * 64];
  alignas(64) int8_t sb[16 * 64];
  int32_t iref[16 * 16] = {};
  auto ai = [](int m, int k) { return (m * 3 + k) % 11; };
  auto bi = [](int k, int n) { return (k + 5 * n) % 9 - 4; };
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 64; ++k) ua[m * 64 + k] = static_cast<uint8_t>(ai(m, k));
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n)
      for (int p = 0; p < 4; ++p) sb[r * 64 + 4 * n + p] = static_cast<int8_t>(bi(4 * r + p, n));
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n)
      for (int k = 0; k < 64; ++k) iref[m * 16 + n] += ai(m, k) * bi(k, n);
  alignas(64) int32_t ic[16 * 16];
  ASSERT_TRUE(tile_product_int8(ua, sb, ic));
  for (int i = 0; i < 16 * 16; ++i) EXPECT_EQ(ic[i], iref[i]) << i;
}

TEST(TileKernels, MatrixPeakIsMeasuredOrRefusedWithTheReason) {
  for (Dtype dtype : {Dtype::kBf16, Dtype::kInt8}) {
    const InstructionPeak peak = measure_matrix_peak(dtype, 1, 0.02);
    EXPECT_EQ(peak.engine, EngineKind::kMatrix);
    std::string reason;
    if (!amx_usable(detect_cpu_features(), dtype, &reason)) {
      EXPECT_FALSE(peak.outcome.ok());
      EXPECT_EQ(peak.outcome.reason, reason);
      EXPECT_NE(reason.find("AMX"), std::string::npos) << reason;
      EXPECT_TRUE(peak.by_threads.empty());
      continue;
    }
    ASSERT_TRUE(peak.outcome.ok());
    ASSERT_EQ(peak.by_threads.size(), 1u);
    EXPECT_DOUBLE_EQ(peak.ops_per_instruction, tile_ops_per_instruction(dtype));
    // No tile engine retires more than one tile product per cycle.
    const PeakPoint& one = peak.by_threads[0];
    ASSERT_GT(one.clock_hz, 0);
    EXPECT_LT(one.ops_per_s / one.clock_hz / peak.ops_per_instruction, kRateSlack);
    EXPECT_GT(one.ops_per_s, 0);
  }
  // No AMX instruction exists for fp32: refused, never measured.
  std::string reason;
  EXPECT_FALSE(amx_usable(detect_cpu_features(), Dtype::kFp32, &reason));
  EXPECT_NE(reason.find("fp32"), std::string::npos);
}

LevelBandwidth level(const char* name, int threads, double triad_gbs) {
  LevelBandwidth l;
  l.level = name;
  l.threads = threads;
  l.triad = triad_gbs * 1e9;
  l.read = l.triad;
  l.working_set_bytes = 1 << 20;
  return l;
}

TEST(IndistinctLevels, AnL3ThatStreamsAtDramSpeedIsMergedIntoDram) {
  // The AMX VM: its "l3" point moved as fast as DRAM; with two threads as well.
  const std::vector<LevelBandwidth> levels = {
      level("l1", 1, 280),  level("l1", 2, 560), level("l2", 1, 110),  level("l2", 2, 220),
      level("l3", 1, 20.5), level("l3", 2, 35),  level("dram", 1, 20), level("dram", 2, 34)};
  const std::vector<LevelMerge> merges = indistinct_levels(levels);
  ASSERT_EQ(merges.size(), 2u);
  for (const LevelMerge& m : merges) {
    EXPECT_EQ(m.level, "l3");
    EXPECT_EQ(m.into, "dram");
    EXPECT_NE(m.note.find("merged into dram"), std::string::npos) << m.note;
  }
  EXPECT_EQ(merges[0].threads, 1);
  EXPECT_DOUBLE_EQ(merges[0].triad, 20.5e9);
  EXPECT_DOUBLE_EQ(merges[0].into_triad, 20e9);
}

TEST(IndistinctLevels, RealStepsAreKeptAndChainsMergeIntoTheSlowestLevel) {
  // Zen 4 as measured: every step is real.
  EXPECT_TRUE(indistinct_levels({level("l1", 1, 280), level("l2", 1, 112), level("l3", 1, 64),
                                 level("dram", 1, 19)})
                  .empty());
  // Three levels at one speed: both faster names merge into dram.
  const std::vector<LevelMerge> merges = indistinct_levels(
      {level("l1", 1, 280), level("l2", 1, 21), level("l3", 1, 20), level("dram", 1, 19.5)});
  ASSERT_EQ(merges.size(), 2u);
  EXPECT_EQ(merges[0].level, "l3");
  EXPECT_EQ(merges[0].into, "dram");
  EXPECT_EQ(merges[1].level, "l2");
  EXPECT_EQ(merges[1].into, "dram");
  // Just outside the tolerance: a level of its own.
  EXPECT_TRUE(indistinct_levels({level("l3", 1, 22.2), level("dram", 1, 20)}).empty());
}

// Beyond the fastest valid rate (kRateSlack allowed) only a wrong op count or clock explains a
// measurement: 512-bit vectors issue at most 2 per cycle (two 512-bit units), a tile engine 1.
TEST(PeakTheory, FasterThanAnyEngineAllowsTheSlackAboveTheFastestRate) {
  EXPECT_FALSE(faster_than_any_engine(EngineKind::kVector, 512, 2.0 * kRateSlack * 0.99));
  EXPECT_TRUE(faster_than_any_engine(EngineKind::kVector, 512, 2.0 * kRateSlack * 1.01));
  EXPECT_TRUE(faster_than_any_engine(EngineKind::kVector, 256, 4.0 * kRateSlack * 1.01));
  EXPECT_FALSE(faster_than_any_engine(EngineKind::kMatrix, 0, kRateSlack * 0.99));
  EXPECT_TRUE(faster_than_any_engine(EngineKind::kMatrix, 0, kRateSlack * 1.01));
  EXPECT_FALSE(faster_than_any_engine(EngineKind::kVector, 0, 100));  // no rates: no verdict
}

}  // namespace
}  // namespace plumb::platform
