// What the CPU is and what it could do on paper: vendor/family/model and the vector ISA
// features (read with cpuid at run time, because plumb is built for generic x86-64), the
// data and unified caches from sysfs, the nominal and the measured core clock, and the
// theoretical peak from a small table of FMA units per core. `plumb probe` prints the
// theoretical peak beside the measured one (peak_kernels.h), so a gap is visible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/core/dtype.h"

namespace plumb::platform {

struct CpuFeatures {
  std::string vendor;      // cpuid vendor string: "GenuineIntel", "AuthenticAMD", ...
  std::string model_name;  // cpuid brand string, else /proc/cpuinfo "model name"
  int family = 0;          // display family (base + extended), e.g. 25 for AMD Zen 3/4
  int model = 0;           // display model (extended << 4 | base), e.g. 17 for Genoa
  int logical_cpus = 0;
  // Usable features: set only when the CPU has them AND the OS saves the register state
  // (XCR0), because a feature the kernel does not enable faults like a missing one.
  bool sse2 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool avx_vnni = false;
  bool amx_tile = false;                 // AMX: tile registers (XCR0 XTILECFG + XTILEDATA enabled)
  bool amx_bf16 = false;                 // tdpbf16ps
  bool amx_int8 = false;                 // tdpbusd / tdpbssd
  std::string widest_fp32_isa = "none";  // "avx512" | "avx2+fma" | "sse2" | "none"
};

// Reads cpuid/xgetbv on x86-64; elsewhere only model_name and logical_cpus are filled. Features
// named in PLUMB_CPU_FEATURES_OFF (comma-separated, the probe's ISA names) read as absent.
CpuFeatures detect_cpu_features();
// The names PLUMB_CPU_FEATURES_OFF hides (empty when unset).
std::vector<std::string> hidden_cpu_features();

// The logical CPUs this process may run on (its affinity mask), ascending. The probes pin
// their i-th thread to the i-th of these, so N threads use N distinct CPUs.
std::vector<int> allowed_cpus();
// Pins the calling thread to `cpu`; false when the OS refuses (the thread then floats, which
// only makes timings noisier).
bool pin_current_thread(int cpu);
// How many physical cores the first `threads` of allowed_cpus() belong to, from
// <root>/cpuN/topology/{physical_package_id,core_id}. SMT siblings share one core's FMA units,
// so this, not the thread count, is the `cores` of theoretical_peak_flops. `threads` when
// the topology is unreadable.
int cores_used_by(int threads, const std::string& root = "/sys/devices/system/cpu");
// CPU time of the calling thread in seconds, -1 where unavailable. The probes compare it with
// wall time: a thread that got under 90% of the wall time was preempted by another process,
// and its repetition is not trusted.
double thread_cpu_seconds();

struct CacheLevel {
  int level = 0;
  std::string type;  // "Data" or "Unified" (instruction caches are skipped)
  int64_t size_bytes = 0;
  int shared_by_cpus = 1;  // CPUs in shared_cpu_list: 1 = private to one logical CPU
};

// Data and unified caches of cpu0, ascending by level, from
// <root>/index*/{level,type,size,shared_cpu_list}. Empty when the tree is missing (some VMs
// and containers): callers then fall back to defaults.
std::vector<CacheLevel> read_cache_levels(
    const std::string& root = "/sys/devices/system/cpu/cpu0/cache");

// The data and unified caches from the sizes glibc's sysconf(_SC_LEVELn_*CACHE_SIZE) reports
// (0 = absent). glibc decodes cpuid's cache leaves (Intel 4 and 2, AMD 0x8000001D and
// 0x80000005/6), which VMs without a sysfs cache tree still pass through. It does not say
// which CPUs share a level: L1 and L2 count as private to one CPU, and the last level as
// shared by all `logical_cpus`, so a multi-thread working set never assumes more of it.
std::vector<CacheLevel> cache_levels_from_sizes(int64_t l1d, int64_t l2, int64_t l3, int64_t l4,
                                                int logical_cpus);

struct CacheInventory {
  std::vector<CacheLevel> levels;
  std::string source;  // "sysfs", "cpuid (glibc sysconf)", or "" when neither said anything
};

// The caches the probe sizes its working sets by: sysfs (<root>) when it lists any, else
// cache_levels_from_sizes on sysconf's figures for this machine.
CacheInventory detect_cache_levels(const std::string& root = "/sys/devices/system/cpu/cpu0/cache");

// The first line of a small sysfs or procfs file, without surrounding blanks; "" when it
// cannot be read.
std::string read_first_line(const std::string& path);

// Parses sysfs cache sizes ("32K", "1024K", "32M", "512") into bytes; -1 if malformed.
int64_t parse_cache_size(const std::string& text);
// Counts the CPUs in a list like "0-3,8-11" or "0,36"; 0 if malformed.
int count_cpu_list(const std::string& text);

struct FrequencyInfo {
  double nominal_hz = 0;       // 0 when nothing readable says it
  std::string nominal_source;  // "cpufreq cpuinfo_max_freq" | "/proc/cpuinfo cpu MHz" | ""
  double measured_hz = 0;      // timed chain of dependent adds; 0 when not measurable here
};

// The nominal clock only (no measurement): cpufreq's cpuinfo_max_freq (kHz) when present,
// else "cpu MHz" of cpuinfo. Under KVM there is no cpufreq and "cpu MHz" is the TSC rate,
// which can be far below the boost clock the cores really run at; hence measured_hz.
FrequencyInfo read_nominal_frequency(
    const std::string& cpufreq_max_path = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
    const std::string& cpuinfo_path = "/proc/cpuinfo");

// The current core clock of the calling thread: a chain of dependent 1-cycle register adds
// (inline asm, so nothing can fold it) timed against the wall clock, best of a few
// repetitions spread over `seconds`, after 10 ms of warm-up (boost clocks take milliseconds
// to ramp up). 0 on architectures without the asm kernel.
double measure_core_clock_hz(double seconds = 0.03);

// The kernel of measure_core_clock_hz, for probes that time the clock on several threads at
// once: `iterations` x kClockChainCyclesPerIteration dependent adds, 1 cycle each. Does
// nothing on architectures without the asm kernel.
inline constexpr int kClockChainCyclesPerIteration = 100;
void run_clock_chain(uint64_t iterations);

// read_nominal_frequency() plus measure_core_clock_hz().
FrequencyInfo detect_frequency(double measure_seconds = 0.03);

// FMA units per core and their width in bits, from a TABLE of known microarchitectures, not
// measured (see cpu_features.cpp for the entries and their caveats). 0 = not in the table.
// A hypervisor may report another model than the real one: the probe infers the theory from
// measured throughput (peak_theory.h) and uses the table only as a cross-check.
int fma_units_per_core(const CpuFeatures& cpu);
int fma_width_bits(const CpuFeatures& cpu);
// The table's name for the core, e.g. "zen4", "skylake-server"; "" when unknown.
std::string microarchitecture_name(const CpuFeatures& cpu);
// Cycles between two AMX tile products (tdpbf16ps, tdpbusd) on one core, from the same table:
// 16 on the Xeons with AMX (Sapphire, Emerald and Granite Rapids); 0 = not in the table.
int tile_cycles_per_instruction(const CpuFeatures& cpu);

// cores (physical: see cores_used_by) x FMA units x lanes x ops per lane per instruction x hz, with
// lanes limited to the widest vector ISA the OS enables. fp32/fp64: an FMA is 2 FLOPs per lane.
// bf16 (vdpbf16ps) counts 4 FLOPs per fp32 lane, fp16 (vfmadd*ph) 2 FLOPs per fp16 lane, int8
// (vpdpbusd) 8 ops per 32-bit lane; those three ASSUME the instruction issues at the FMA rate
// (true on Zen 4; on some Intel cores vpdpbusd zmm issues on one port only, so the real roof
// is half). 0 when the table does not know the CPU, the dtype's instruction is missing, or
// hz <= 0.
double theoretical_peak_flops(Dtype dtype, const CpuFeatures& cpu, double hz, int cores);

}  // namespace plumb::platform
