// Tests for the torch-free measurement kernels behind `plumb probe`: sysfs/cpuinfo parsing
// against fake trees, the per-level bandwidth summary on synthetic curves with known plateaus,
// and short real measurements (clock, fp32 peak, unsupported dtypes, L1 vs DRAM bandwidth)
// checked against what the hardware must give. The whole file runs in about a second.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/platform/bandwidth_kernels.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/platform/peak_theory.h"

namespace plumb::platform {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "plumb_platform_test.XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << text;
  }

 private:
  fs::path path_;
};

void write_cache_index(const TempDir& dir, int index, const std::string& level,
                       const std::string& type, const std::string& size,
                       const std::string& shared) {
  std::string d = "index" + std::to_string(index) + "/";
  dir.write(d + "level", level + "\n");
  dir.write(d + "type", type + "\n");
  dir.write(d + "size", size + "\n");
  dir.write(d + "shared_cpu_list", shared + "\n");
}

// "level type size shared; " per cache, in order.
std::string rows(const std::vector<CacheLevel>& levels) {
  std::string out;
  for (const CacheLevel& c : levels)
    out += std::to_string(c.level) + " " + c.type + " " + std::to_string(c.size_bytes) + " " +
           std::to_string(c.shared_by_cpus) + "; ";
  return out;
}

TEST(PlatformKernels, CacheLevelsFromFakeSysfs) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  // Written out of order, with an instruction cache and a non-index entry to skip.
  write_cache_index(dir, 3, "3", "Unified", "32768K", "0-7");
  write_cache_index(dir, 0, "1", "Data", "48K", "0,36");
  write_cache_index(dir, 1, "1", "Instruction", "32K", "0,36");
  write_cache_index(dir, 2, "2", "Unified", "2M", "0");
  dir.write("uevent", "");

  EXPECT_EQ(rows(read_cache_levels(dir.path().string())),
            "1 Data 49152 2; 2 Unified 2097152 1; 3 Unified 33554432 8; ");

  EXPECT_TRUE(read_cache_levels((dir.path() / "missing").string()).empty());
}

TEST(PlatformKernels, CacheLevelsFromSysconfSizesWhenSysfsHasNone) {
  // Zen 5 VM figures: 48 KiB L1d, 1 MiB L2, the host's 508 MiB L3, no L4.
  // The last level is shared by every CPU, the others private.
  EXPECT_EQ(rows(cache_levels_from_sizes(48 * kKiB, kMiB, 508 * kMiB, 0, 2)),
            "1 Data 49152 1; 2 Unified 1048576 1; 3 Unified 532676608 2; ");
  // A machine with only L1 and L2 keeps both private; nothing known gives nothing.
  EXPECT_EQ(rows(cache_levels_from_sizes(32 * kKiB, 4 * kMiB, 0, 0, 8)),
            "1 Data 32768 1; 2 Unified 4194304 1; ");
  EXPECT_TRUE(cache_levels_from_sizes(0, 0, 0, 0, 4).empty());

  // sysfs wins where it lists caches; without it the inventory says where the sizes came from.
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  write_cache_index(dir, 0, "1", "Data", "32K", "0");
  CacheInventory from_sysfs = detect_cache_levels(dir.path().string());
  EXPECT_EQ(from_sysfs.source, "sysfs");
  ASSERT_EQ(from_sysfs.levels.size(), 1u);
  EXPECT_EQ(from_sysfs.levels[0].size_bytes, 32 * kKiB);
  CacheInventory fallback = detect_cache_levels((dir.path() / "missing").string());
  EXPECT_EQ(fallback.source.empty(), fallback.levels.empty());
  if (!fallback.levels.empty()) {
    EXPECT_EQ(fallback.source, "cpuid (glibc sysconf)");
    for (size_t i = 1; i < fallback.levels.size(); ++i)
      EXPECT_GT(fallback.levels[i].level, fallback.levels[i - 1].level);
  }
}

TEST(PlatformKernels, ParsesSizesAndCpuLists) {
  EXPECT_EQ(parse_cache_size("32K"), 32 * kKiB);
  EXPECT_EQ(parse_cache_size(" 1024K\n"), kMiB);
  EXPECT_EQ(parse_cache_size("36M"), 36 * kMiB);
  EXPECT_EQ(parse_cache_size("512"), 512);
  EXPECT_EQ(parse_cache_size("K"), -1);
  EXPECT_EQ(parse_cache_size("12Q"), -1);
  EXPECT_EQ(count_cpu_list("0"), 1);
  EXPECT_EQ(count_cpu_list("0-1"), 2);
  EXPECT_EQ(count_cpu_list("0-3,8-11"), 8);
  EXPECT_EQ(count_cpu_list("0,36"), 2);
  EXPECT_EQ(count_cpu_list("3-1"), 0);
  EXPECT_EQ(count_cpu_list("x"), 0);
}

TEST(PlatformKernels, CoresUsedCountsSmtSiblingsOnce) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  // Every allowed CPU in a fake tree where CPUs 2k and 2k+1 are SMT siblings of core k.
  const std::vector<int> cpus = allowed_cpus();
  for (int c : cpus) {
    const std::string topo = "cpu" + std::to_string(c) + "/topology/";
    dir.write(topo + "physical_package_id", "0\n");
    dir.write(topo + "core_id", std::to_string(c / 2) + "\n");
  }
  const int n = static_cast<int>(cpus.size());
  std::vector<int> first_cores;
  for (int c : cpus)
    if (std::find(first_cores.begin(), first_cores.end(), c / 2) == first_cores.end())
      first_cores.push_back(c / 2);
  EXPECT_EQ(cores_used_by(n, dir.path().string()), static_cast<int>(first_cores.size()));
  EXPECT_EQ(cores_used_by(1, dir.path().string()), 1);
  EXPECT_EQ(cores_used_by(3, (dir.path() / "missing").string()), 3);  // unreadable: threads
  // The real machine: between 1 and the number of threads.
  const int real = cores_used_by(n);
  EXPECT_GE(real, 1);
  EXPECT_LE(real, n);
}

TEST(PlatformKernels, NominalFrequencyPrefersCpufreqThenCpuinfo) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string cpufreq = (dir.path() / "cpuinfo_max_freq").string();
  const std::string cpuinfo = (dir.path() / "cpuinfo").string();
  dir.write("cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.136\n");

  FrequencyInfo f = read_nominal_frequency(cpufreq, cpuinfo);  // no cpufreq, as under KVM
  EXPECT_NEAR(f.nominal_hz, 2596.136e6, 1);
  EXPECT_EQ(f.nominal_source, "/proc/cpuinfo cpu MHz");

  dir.write("cpuinfo_max_freq", "3500000\n");  // kHz
  f = read_nominal_frequency(cpufreq, cpuinfo);
  EXPECT_DOUBLE_EQ(f.nominal_hz, 3.5e9);
  EXPECT_EQ(f.nominal_source, "cpufreq cpuinfo_max_freq");

  f = read_nominal_frequency((dir.path() / "none").string(), (dir.path() / "none2").string());
  EXPECT_EQ(f.nominal_hz, 0);
  EXPECT_EQ(f.nominal_source, "");
}

TEST(PlatformKernels, MeasuredClockIsPlausible) {
  double hz = measure_core_clock_hz(0.01);
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_GT(hz, 0.5e9);
  EXPECT_LT(hz, 6e9);
#else
  EXPECT_EQ(hz, 0);
#endif
}

TEST(PlatformKernels, TheoreticalPeakFollowsTheTable) {
  CpuFeatures zen4;
  zen4.vendor = "AuthenticAMD";
  zen4.family = 25;
  zen4.model = 17;
  zen4.sse2 = zen4.avx = zen4.avx2 = zen4.fma = zen4.avx512f = zen4.avx512_vnni = true;
  zen4.avx512_bf16 = true;
  EXPECT_EQ(microarchitecture_name(zen4), "zen4");
  EXPECT_EQ(fma_units_per_core(zen4), 2);
  EXPECT_EQ(fma_width_bits(zen4), 256);
  // 2 units x 8 fp32 lanes x 2 FLOPs x 1 GHz x 2 cores.
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kFp32, zen4, 1e9, 2), 64e9);
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kFp64, zen4, 1e9, 2), 32e9);
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kBf16, zen4, 1e9, 2), 128e9);
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kInt8, zen4, 1e9, 2), 256e9);
  EXPECT_EQ(theoretical_peak_flops(Dtype::kFp16, zen4, 1e9, 2), 0);  // no avx512_fp16

  CpuFeatures icx = zen4;  // Ice Lake server: 2 x 512-bit FMA
  icx.vendor = "GenuineIntel";
  icx.family = 6;
  icx.model = 0x6A;
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kFp32, icx, 1e9, 1), 64e9);
  icx.avx512f = false;  // AVX-512 disabled by the OS: 256-bit instructions on the same units
  EXPECT_DOUBLE_EQ(theoretical_peak_flops(Dtype::kFp32, icx, 1e9, 1), 32e9);

  CpuFeatures unknown = zen4;
  unknown.family = 99;
  EXPECT_EQ(fma_units_per_core(unknown), 0);
  EXPECT_EQ(theoretical_peak_flops(Dtype::kFp32, unknown, 1e9, 1), 0);
  EXPECT_EQ(theoretical_peak_flops(Dtype::kFp32, zen4, 0, 1), 0);  // clock unknown
}

// The theory a kernel's one-thread point implies (peak_theory.h), from measurement alone.
InferredTheory inferred_theory(const InstructionPeak& peak) {
  return infer_theory(theory_input(peak));
}

TEST(PlatformKernels, Fp32PeakIsMeasuredPerThreadCount) {
  const int threads = std::min(2, std::max(1, static_cast<int>(allowed_cpus().size())));
  InstructionPeak peak = measure_instruction_peak(Dtype::kFp32, threads, 0.03);
#if !defined(__x86_64__)
  EXPECT_FALSE(peak.outcome.ok());  // the kernels are x86-64 only, and say so
  EXPECT_FALSE(peak.outcome.reason.empty());
  return;
#endif
  ASSERT_TRUE(peak.outcome.ok()) << peak.outcome.reason;
  EXPECT_EQ(peak.dtype, "fp32");
  EXPECT_FALSE(peak.isa.empty());
  EXPECT_EQ(peak.engine, EngineKind::kVector);
  ASSERT_EQ(static_cast<int>(peak.by_threads.size()), threads);
  for (int t = 0; t < threads; ++t) {
    const PeakPoint& p = peak.by_threads[t];
    EXPECT_EQ(p.threads, t + 1);
    EXPECT_GT(p.ops_per_s, 0);
    if (p.clock_hz > 0) {  // 0 only when every clock run was preempted
      EXPECT_GT(p.clock_hz, 0.5e9);
      EXPECT_LT(p.clock_hz, 6e9);
    }
  }
  EXPECT_GE(peak.best_threads, 1);
  EXPECT_GT(peak.best_ops_per_s, 0);
  // The clock under FMA load is a real clock: no faster than the unloaded one by more than
  // noise (cores lower it for wide vectors, never raise it).
  const double idle = measure_core_clock_hz(0.01);
  if (peak.by_threads[0].clock_hz > 0 && idle > 0) {
    EXPECT_LT(peak.by_threads[0].clock_hz, 1.15 * idle);
  }
}

TEST(PlatformKernels, NarrowerIsaKernelsRun) {
  // Each fallback kernel, forced by hiding the wider features. A broken kernel shows as 0, or
  // more operations per cycle than any engine retires (it counts work it does not do), or, on
  // an idle machine, far below the theory its own measurement implies.
  const CpuFeatures full = detect_cpu_features();
  if (!full.avx2 || !full.fma) GTEST_SKIP() << "needs AVX2 and FMA";
  // An AVX2-only CPU (Zen 3): no AVX-512 and no AVX-VNNI either, so int8 takes the
  // vpmaddubsw sequences, not vpdpbusd.
  CpuFeatures avx2 = full;
  avx2.avx512f = avx2.avx512bw = avx2.avx512vl = false;
  avx2.avx512_vnni = avx2.avx512_bf16 = avx2.avx512_fp16 = avx2.avx_vnni = false;
  auto check = [](const InstructionPeak& p) {
    ASSERT_TRUE(p.outcome.ok()) << p.dtype;
    ASSERT_EQ(p.by_threads.size(), 1u);
    EXPECT_GT(p.best_ops_per_s, 0) << p.dtype;
    const InferredTheory t = inferred_theory(p);
    if (!t.inferred) return;  // every clock run preempted
    EXPECT_LE(t.measured_instructions_per_cycle * p.instruction_bits, 1024 * kRateSlack)
        << p.dtype << " " << p.isa;
    if (!p.by_threads[0].disturbed) {
      EXPECT_GT(t.measured_fraction, 0.3) << p.dtype << " " << p.isa;
    }
  };
  for (Dtype dtype : {Dtype::kFp32, Dtype::kFp64, Dtype::kInt8}) {
    InstructionPeak p = measure_instruction_peak(dtype, 1, 0.02, avx2);
    EXPECT_EQ(p.isa.rfind("avx2 ", 0), 0u) << p.isa;
    EXPECT_EQ(p.instruction_bits, 256) << p.isa;
    if (dtype == Dtype::kInt8) {
      EXPECT_NE(p.isa.find("vpmaddubsw"), std::string::npos) << p.isa;
    }
    check(p);
  }
  if (full.avx_vnni) {  // the 256-bit VNNI kernel, where the CPU has it
    CpuFeatures vnni256 = avx2;
    vnni256.avx_vnni = true;
    InstructionPeak p = measure_instruction_peak(Dtype::kInt8, 1, 0.02, vnni256);
    EXPECT_EQ(p.isa, "avx_vnni vpdpbusd");
    check(p);
  }
  CpuFeatures sse2 = avx2;
  sse2.avx = sse2.avx2 = sse2.fma = sse2.avx_vnni = false;
  InstructionPeak sse = measure_instruction_peak(Dtype::kFp32, 1, 0.02, sse2);
  EXPECT_EQ(sse.isa, "sse2 mulps+addps");
  EXPECT_EQ(sse.instruction_bits, 128);
  check(sse);
}

TEST(PlatformKernels, UnsupportedDtypeIsReportedNotMeasured) {
  CpuFeatures cpu = detect_cpu_features();
  cpu.avx512_fp16 = false;  // what this CPU, or any without avx512_fp16, says
  InstructionPeak fp16 = measure_instruction_peak(Dtype::kFp16, 2, 0.05, cpu);
  EXPECT_EQ(fp16.dtype, "fp16");
  EXPECT_FALSE(fp16.outcome.ok());
  EXPECT_NE(fp16.outcome.reason.find("avx512_fp16"), std::string::npos);
  EXPECT_TRUE(fp16.isa.empty());
  EXPECT_TRUE(fp16.by_threads.empty());
  EXPECT_EQ(fp16.best_ops_per_s, 0);
  EXPECT_EQ(fp16.best_threads, 0);

  cpu.avx512_bf16 = false;  // bf16 is never emulated
  InstructionPeak bf16 = measure_instruction_peak(Dtype::kBf16, 1, 0.05, cpu);
  EXPECT_FALSE(bf16.outcome.ok());
  EXPECT_NE(bf16.outcome.reason.find("avx512_bf16"), std::string::npos);
  EXPECT_TRUE(bf16.by_threads.empty());

  // The real CPU: whatever it lacks is reported the same way, even when a caller claims the
  // feature (it would otherwise die on an illegal instruction).
  if (!detect_cpu_features().avx512_fp16) {
    InstructionPeak real = measure_instruction_peak(Dtype::kFp16, 1, 0.05);
    EXPECT_FALSE(real.outcome.ok());
    EXPECT_EQ(real.outcome.reason, "no avx512_fp16 on this CPU");
    EXPECT_TRUE(real.by_threads.empty());
    CpuFeatures claimed = detect_cpu_features();
    claimed.avx512_fp16 = true;
    EXPECT_FALSE(measure_instruction_peak(Dtype::kFp16, 1, 0.05, claimed).outcome.ok());
  }
}

TEST(PlatformKernels, PreemptedRunsAreFlagged) {
  // A spinning thread on the CPU the probe's first thread is pinned to: every repetition is
  // preempted, so the results must say they are only lower bounds.
  std::atomic<int> started{0};  // 1: pinned, -1: could not pin
  std::atomic<bool> stop{false};
  std::thread hog([&] {
    started = pin_current_thread(allowed_cpus().front()) ? 1 : -1;
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (started == 0) std::this_thread::yield();
  // 30 ms repetitions (four rounds of 0.12 s): many scheduler time slices each, so none can
  // run whole between two of the hog's (10 ms ones failed about one run in twenty here).
  InstructionPeak peak = measure_instruction_peak(Dtype::kFp32, 1, 0.12);
  BwSweepOptions opt;
  opt.working_sets = {16 * kKiB};
  opt.threads = {1};
  opt.kernels = {BwKernel::kRead};
  opt.seconds_per_point = 0.12;  // 30 ms repetitions (four shares of 0.12 s), as above
  std::vector<BwPoint> bw = sweep_bandwidth(opt);
  stop = true;
  hog.join();
  if (started < 0)
    GTEST_SKIP() << "needs permission to pin threads (setting a thread's CPU affinity was refused)";
  ASSERT_EQ(peak.by_threads.size(), 1u);
  EXPECT_TRUE(peak.by_threads[0].disturbed);
  EXPECT_GT(peak.by_threads[0].ops_per_s, 0);
  ASSERT_EQ(bw.size(), 1u);
  EXPECT_TRUE(bw[0].disturbed);
  EXPECT_GT(bw[0].bytes_per_s, 0);
}

TEST(PlatformKernels, L1ReadBandwidthBeatsDram) {
  BwSweepOptions opt;
  opt.working_sets = {16 * kKiB, 64 * kMiB};
  opt.threads = {1};
  opt.kernels = {BwKernel::kRead, BwKernel::kTriad};
  opt.seconds_per_point = 0.01;
  std::vector<BwPoint> points = sweep_bandwidth(opt);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].kernel, BwKernel::kRead);
  EXPECT_EQ(points[0].working_set_bytes, 16 * kKiB);
  EXPECT_EQ(points[3].kernel, BwKernel::kTriad);
  EXPECT_EQ(points[3].working_set_bytes, 64 * kMiB);
  for (const BwPoint& p : points) {
    EXPECT_EQ(p.threads, 1);
    EXPECT_GT(p.bytes_per_s, 1e8);   // 100 MB/s: anything slower is broken
    EXPECT_LT(p.bytes_per_s, 1e13);  // 10 TB/s from one core: miscounted bytes
  }
  // L1 reads are several times faster than DRAM on every CPU plumb runs on.
  EXPECT_GT(points[0].bytes_per_s, 2 * points[2].bytes_per_s);
  EXPECT_GT(points[1].bytes_per_s, 1.5 * points[3].bytes_per_s);
}

TEST(PlatformKernels, DefaultWorkingSetsCoverTheHierarchy) {
  const std::vector<CacheLevel> caches = {
      {1, "Data", 32 * kKiB, 1}, {2, "Unified", kMiB, 1}, {3, "Unified", 32 * kMiB, 2}};
  EXPECT_EQ(default_working_sets(caches, false),
            (std::vector<int64_t>{16 * kKiB, 512 * kKiB, 16 * kMiB, 256 * kMiB}));

  std::vector<int64_t> thorough = default_working_sets(caches, true);
  ASSERT_GE(thorough.size(), 50u);
  EXPECT_EQ(thorough.front(), 16 * kKiB);
  EXPECT_GE(thorough.back(), 256 * kMiB);
  EXPECT_LT(thorough[thorough.size() - 2], 256 * kMiB);
  EXPECT_EQ(thorough[4], 32 * kKiB);  // 4 points per octave
  EXPECT_EQ(thorough[8], 64 * kKiB);
  for (size_t i = 1; i < thorough.size(); ++i) EXPECT_GT(thorough[i], thorough[i - 1]);

  // Four threads use two instances of an L3 shared by two CPUs: 64 MiB. Quick stops at
  // 256 MiB (4 x) there; thorough goes to 8 x.
  EXPECT_EQ(default_working_sets(caches, false, 4).back(), 256 * kMiB);
  EXPECT_GE(default_working_sets(caches, true, 4).back(), 512 * kMiB);
  EXPECT_EQ(default_working_sets({}, false).back(), 256 * kMiB);
  // A host's 480 MiB LLC reported to a VM: quick measures DRAM at 2.25 x, not at 3.75 GiB.
  const std::vector<CacheLevel> huge = {
      {1, "Data", 48 * kKiB, 1}, {2, "Unified", 2 * kMiB, 1}, {3, "Unified", 480 * kMiB, 2}};
  EXPECT_EQ(default_working_sets(huge, false, 2).back(), 1080 * kMiB);
}

// A synthetic machine: L1 32 KiB and L2 1 MiB private, L3 32 MiB shared by 2 CPUs; bandwidth
// steps down when the working set exceeds what the threads can use of each level.
std::vector<BwPoint> synthetic_curve(const std::vector<CacheLevel>& caches,
                                     const std::vector<int64_t>& sizes) {
  const double plateau[] = {400e9, 200e9, 100e9, 20e9};  // per thread: l1, l2, l3, dram
  const double kernel_scale[] = {1.0, 0.5, 0.8, 0.9};    // read, write, copy, triad
  std::vector<BwPoint> points;
  for (int threads : {1, 2}) {
    const int64_t cap[] = {caches[0].size_bytes * threads, caches[1].size_bytes * threads,
                           caches[2].size_bytes};
    for (int64_t ws : sizes) {
      int level = ws <= cap[0] ? 0 : ws <= cap[1] ? 1 : ws <= cap[2] ? 2 : 3;
      for (int k = 0; k < 4; ++k)
        points.push_back({static_cast<BwKernel>(k), threads, ws,
                          plateau[level] * kernel_scale[k] * (level == 3 ? 1.5 : threads)});
    }
  }
  return points;
}

TEST(PlatformKernels, SummarizeLevelsFindsPlateausAndBreaks) {
  const std::vector<CacheLevel> caches = {
      {1, "Data", 32 * kKiB, 1}, {2, "Unified", kMiB, 1}, {3, "Unified", 32 * kMiB, 2}};
  std::vector<BwPoint> points = synthetic_curve(caches, default_working_sets(caches, true));
  // A slightly better point inside the L2 plateau at 1 thread: the plateau is the best value.
  for (BwPoint& p : points)
    if (p.threads == 1 && p.kernel == BwKernel::kRead && p.working_set_bytes == 256 * kKiB)
      p.bytes_per_s = 210e9;

  std::vector<LevelBandwidth> levels = summarize_levels(points, caches);
  ASSERT_EQ(levels.size(), 8u);  // (l1, l2, l3, dram) x (1, 2 threads), by level then threads
  const char* names[] = {"l1", "l2", "l3", "dram"};
  for (size_t i = 0; i < levels.size(); ++i) {
    EXPECT_EQ(levels[i].level, names[i / 2]);
    EXPECT_EQ(levels[i].threads, static_cast<int>(i % 2) + 1);
  }
  const LevelBandwidth &l1 = levels[0], &l2 = levels[2], &l3 = levels[4], &dram = levels[6];
  EXPECT_DOUBLE_EQ(l1.read, 400e9);
  EXPECT_DOUBLE_EQ(l1.write, 200e9);
  EXPECT_DOUBLE_EQ(l1.copy, 320e9);
  EXPECT_DOUBLE_EQ(l1.triad, 360e9);
  EXPECT_EQ(l1.capacity_bytes, 32 * kKiB);
  EXPECT_LE(l1.working_set_bytes, 32 * kKiB);
  EXPECT_DOUBLE_EQ(l2.read, 210e9);
  EXPECT_DOUBLE_EQ(l2.triad, 180e9);
  EXPECT_GT(l2.working_set_bytes, 32 * kKiB);
  EXPECT_LE(l2.working_set_bytes, kMiB);
  EXPECT_DOUBLE_EQ(l3.read, 100e9);
  EXPECT_DOUBLE_EQ(dram.read, 30e9);
  EXPECT_EQ(dram.capacity_bytes, 0);
  EXPECT_GE(dram.working_set_bytes, 128 * kMiB);
  // Breaks at the last size that fits (the synthetic sweep hits 32 KiB, 1 MiB, 32 MiB).
  EXPECT_EQ(l1.plateau_break_bytes, 32 * kKiB);
  EXPECT_EQ(l2.plateau_break_bytes, kMiB);
  EXPECT_EQ(l3.plateau_break_bytes, 32 * kMiB);
  EXPECT_EQ(dram.plateau_break_bytes, 0);

  // Two threads: private levels double, the shared L3 does not.
  const LevelBandwidth &l1_2 = levels[1], &l2_2 = levels[3], &l3_2 = levels[5];
  EXPECT_EQ(l1_2.capacity_bytes, 64 * kKiB);
  EXPECT_EQ(l2_2.capacity_bytes, 2 * kMiB);
  EXPECT_EQ(l3_2.capacity_bytes, 32 * kMiB);
  EXPECT_DOUBLE_EQ(l1_2.read, 800e9);
  EXPECT_DOUBLE_EQ(l2_2.read, 400e9);
  EXPECT_EQ(l1_2.plateau_break_bytes, 64 * kKiB);
  EXPECT_EQ(l2_2.plateau_break_bytes, 2 * kMiB);
}

TEST(PlatformKernels, PlateauBreaksIgnoreOneOffDipsAndSpikes) {
  const std::vector<CacheLevel> caches = {
      {1, "Data", 32 * kKiB, 1}, {2, "Unified", kMiB, 1}, {3, "Unified", 32 * kMiB, 2}};
  std::vector<BwPoint> points = synthetic_curve(caches, default_working_sets(caches, true));
  for (BwPoint& p : points) {
    if (p.threads != 1 || p.kernel != BwKernel::kRead) continue;
    if (p.working_set_bytes == 256 * kKiB) p.bytes_per_s = 100e9;  // a dip inside L2
    if (p.working_set_bytes == 4 * kMiB) p.bytes_per_s = 300e9;    // a spike inside L3
    if (p.working_set_bytes == 8 * kMiB) {  // a preempted point: excluded from the curve
      p.bytes_per_s = 10e9;
      p.disturbed = true;
    }
  }
  std::vector<LevelBandwidth> levels = summarize_levels(points, caches);
  ASSERT_EQ(levels.size(), 8u);
  EXPECT_EQ(levels[0].plateau_break_bytes, 32 * kKiB);
  EXPECT_EQ(levels[2].plateau_break_bytes, kMiB);
  EXPECT_EQ(levels[4].plateau_break_bytes, 32 * kMiB);
  EXPECT_DOUBLE_EQ(levels[4].read, 300e9);  // the plateau is the best value, spike included

  // A gradual transition, no step over 9% (AMD's L2 -> victim L3): the break is still found
  // where the decline starts.
  const double decline[] = {182e9, 166e9, 152e9, 140e9, 130e9, 121e9, 113e9, 106e9};
  int step = 0;
  for (BwPoint& p : points)
    if (p.threads == 1 && p.kernel == BwKernel::kRead && p.working_set_bytes > kMiB &&
        p.working_set_bytes <= 4 * kMiB)
      p.bytes_per_s = decline[step++];
  ASSERT_EQ(step, 8);
  EXPECT_EQ(summarize_levels(points, caches)[2].plateau_break_bytes, kMiB);
}

TEST(PlatformKernels, SummarizeLevelsOnAQuickSweep) {
  // Half of each level plus 8 x LLC: every level gets its plateau, but the points are too far
  // apart to say where the curve breaks.
  const std::vector<CacheLevel> caches = {
      {1, "Data", 32 * kKiB, 1}, {2, "Unified", kMiB, 1}, {3, "Unified", 32 * kMiB, 2}};
  std::vector<LevelBandwidth> levels =
      summarize_levels(synthetic_curve(caches, default_working_sets(caches, false)), caches);
  ASSERT_EQ(levels.size(), 8u);
  EXPECT_DOUBLE_EQ(levels[0].read, 400e9);
  EXPECT_DOUBLE_EQ(levels[2].read, 200e9);
  EXPECT_DOUBLE_EQ(levels[4].read, 100e9);
  EXPECT_DOUBLE_EQ(levels[6].read, 30e9);
  EXPECT_EQ(levels[6].working_set_bytes, 256 * kMiB);
  for (const LevelBandwidth& l : levels) EXPECT_EQ(l.plateau_break_bytes, 0) << l.level;

  EXPECT_TRUE(summarize_levels(synthetic_curve(caches, {16 * kKiB}), {}).empty());

  // A huge reported LLC: quick's DRAM point lies between 2 x and 4 x it, and is still DRAM.
  const std::vector<CacheLevel> huge = {
      {1, "Data", 32 * kKiB, 1}, {2, "Unified", kMiB, 1}, {3, "Unified", 480 * kMiB, 2}};
  levels = summarize_levels(synthetic_curve(huge, default_working_sets(huge, false, 2)), huge);
  ASSERT_EQ(levels.size(), 8u);
  EXPECT_EQ(levels[6].level, "dram");
  EXPECT_DOUBLE_EQ(levels[6].read, 30e9);
  EXPECT_EQ(levels[6].working_set_bytes, 1080 * kMiB);
}

}  // namespace
}  // namespace plumb::platform
