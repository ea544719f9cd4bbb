// CPU identification, caches, clock and the theoretical-peak table (see cpu_features.h).
#include "plumb/platform/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <unistd.h>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb::platform {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// The value of the first "key : value" line of /proc/cpuinfo whose key is one of `keys`.
std::string cpuinfo_value(const std::string& path, std::initializer_list<const char*> keys) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    for (const char* k : keys)
      if (key == k) return trim(line.substr(colon + 1));
  }
  return "";
}

#if defined(__x86_64__)
struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// XCR0: which register states the OS saves. Inline asm rather than _xgetbv, which would need
// the whole file compiled with -mxsave.
uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool bit(unsigned value, int n) {
  return ((value >> n) & 1u) != 0;
}

void detect_x86(CpuFeatures& f) {
  Regs r0 = cpuid(0);
  unsigned max_leaf = r0.eax;
  char vendor[13] = {};
  std::copy_n(reinterpret_cast<const char*>(&r0.ebx), 4, vendor);
  std::copy_n(reinterpret_cast<const char*>(&r0.edx), 4, vendor + 4);
  std::copy_n(reinterpret_cast<const char*>(&r0.ecx), 4, vendor + 8);
  f.vendor = vendor;

  Regs r1 = cpuid(1);
  unsigned base_family = (r1.eax >> 8) & 0xF, base_model = (r1.eax >> 4) & 0xF;
  unsigned ext_family = (r1.eax >> 20) & 0xFF, ext_model = (r1.eax >> 16) & 0xF;
  f.family = static_cast<int>(base_family == 0xF ? base_family + ext_family : base_family);
  f.model = static_cast<int>(
      (base_family == 0x6 || base_family == 0xF) ? (ext_model << 4) | base_model : base_model);

  uint64_t xcr0 = bit(r1.ecx, 27) ? xgetbv0() : 0;  // OSXSAVE
  bool os_avx = (xcr0 & 0x6) == 0x6;                // XMM + YMM state
  bool os_avx512 = (xcr0 & 0xE6) == 0xE6;           // + opmask, ZMM0-15 high, ZMM16-31
  bool os_amx = (xcr0 & 0x60000) == 0x60000;        // XTILECFG + XTILEDATA

  f.sse2 = bit(r1.edx, 26);
  f.avx = bit(r1.ecx, 28) && os_avx;
  f.fma = bit(r1.ecx, 12) && os_avx;
  if (max_leaf >= 7) {
    Regs r7 = cpuid(7, 0);
    f.avx2 = bit(r7.ebx, 5) && os_avx;
    f.avx512f = bit(r7.ebx, 16) && os_avx512;
    f.avx512bw = bit(r7.ebx, 30) && os_avx512;
    f.avx512vl = bit(r7.ebx, 31) && os_avx512;
    f.avx512_vnni = bit(r7.ecx, 11) && os_avx512;
    f.amx_bf16 = bit(r7.edx, 22) && os_amx;
    f.amx_tile = bit(r7.edx, 24) && os_amx;
    f.avx512_fp16 = bit(r7.edx, 23) && os_avx512;
    f.amx_int8 = bit(r7.edx, 25) && os_amx;
    if (r7.eax >= 1) {
      Regs r71 = cpuid(7, 1);
      f.avx_vnni = bit(r71.eax, 4) && os_avx;
      f.avx512_bf16 = bit(r71.eax, 5) && os_avx512;
    }
  }

  if (cpuid(0x80000000).eax >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      Regs r = cpuid(0x80000002 + i);
      unsigned words[4] = {r.eax, r.ebx, r.ecx, r.edx};
      std::copy_n(reinterpret_cast<const char*>(words), 16, brand + 16 * i);
    }
    f.model_name = trim(brand);
  }
}
#endif

// One row of the FMA table.
struct FmaEntry {
  int units = 0;
  int width_bits = 0;
  const char* name = "";
};

bool in(int v, std::initializer_list<int> set) {
  return std::find(set.begin(), set.end(), v) != set.end();
}

// THE TABLE. FMA-capable vector units per core and their native width, from vendor
// optimisation manuals and published microbenchmarks; plumb cannot measure the unit count
// itself (that is what the instruction peak does, and the two are shown side by side).
// Caveats, kept here rather than hidden:
//  - Skylake-SP/Cascade Lake: some Xeon Bronze/Silver/Gold 5xxx SKUs have ONE 512-bit FMA
//    unit; the model number cannot tell them apart, so the table says 2 and the measured peak
//    will show half.
//  - Intel client cores with AVX-512 (Ice/Tiger/Rocket Lake) fuse their two 256-bit FMA
//    ports into one 512-bit unit: 1 x 512 (the same FLOPs as 2 x 256).
//  - AMD Zen 1/Zen+ and Hygon Dhyana: 2 x 128-bit FMA pipes (256-bit ops are split).
//  - AMD Zen 4 executes AVX-512 on 2 x 256-bit pipes ("double pumped"): 2 x 256.
//  - AMD Zen 5: server (Turin) and desktop (Granite Ridge) have full 512-bit pipes; the mobile
//    parts (Strix) run AVX-512 on 256-bit pipes, so the table leaves them unknown.
//  - Hybrid Intel parts report the P-core model; E-core-only parts are not in the table.
FmaEntry fma_entry(const CpuFeatures& c) {
  if (c.vendor == "GenuineIntel" && c.family == 6) {
    int m = c.model;
    if (in(m, {0x55})) return {2, 512, "skylake-server"};  // also Cascade/Cooper Lake
    if (in(m, {0x6A, 0x6C})) return {2, 512, "icelake-server"};
    if (in(m, {0x8F})) return {2, 512, "sapphirerapids"};
    if (in(m, {0xCF})) return {2, 512, "emeraldrapids"};
    if (in(m, {0xAD, 0xAE})) return {2, 512, "graniterapids"};
    if (in(m, {0x57, 0x85})) return {2, 512, "knights-landing"};  // also Knights Mill
    if (in(m, {0x7D, 0x7E})) return {1, 512, "icelake-client"};
    if (in(m, {0x8C, 0x8D})) return {1, 512, "tigerlake"};
    if (in(m, {0xA7})) return {1, 512, "rocketlake"};
    if (in(m, {0x3C, 0x3F, 0x45, 0x46})) return {2, 256, "haswell"};
    if (in(m, {0x3D, 0x47, 0x4F, 0x56})) return {2, 256, "broadwell"};
    if (in(m, {0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6})) return {2, 256, "skylake"};  // to Comet
    if (in(m, {0x97, 0x9A})) return {2, 256, "alderlake"};
    if (in(m, {0xB7, 0xBA, 0xBF})) return {2, 256, "raptorlake"};
    if (in(m, {0xAA, 0xAC})) return {2, 256, "meteorlake"};
    return {};
  }
  if (c.vendor == "HygonGenuine" && c.family == 0x18) return {2, 128, "hygon-dhyana"};
  if (c.vendor == "AuthenticAMD") {
    int m = c.model;
    // Model ranges as in Linux's arch/x86/kernel/cpu/amd.c.
    if (c.family == 0x17) {
      if (m <= 0x2F || (m >= 0x50 && m <= 0x5F)) return {2, 128, "zen1"};
      return {2, 256, "zen2"};
    }
    if (c.family == 0x19) {
      if (m <= 0x0F || (m >= 0x20 && m <= 0x5F)) return {2, 256, "zen3"};
      if ((m >= 0x10 && m <= 0x1F) || (m >= 0x60 && m <= 0xAF)) return {2, 256, "zen4"};
      return {};
    }
    if (c.family == 0x1A) {
      if (m <= 0x1F || (m >= 0x40 && m <= 0x4F)) return {2, 512, "zen5"};
      return {};
    }
  }
  return {};
}

// The widest vector width (bits) the OS lets FMA/dot-product code use.
int fma_isa_bits(const CpuFeatures& c) {
  if (c.avx512f) return 512;
  if (c.avx && c.fma) return 256;
  return 0;
}

}  // namespace

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

std::vector<std::string> hidden_cpu_features() {
  const char* text = std::getenv("PLUMB_CPU_FEATURES_OFF");
  std::vector<std::string> out;
  if (text == nullptr) return out;
  for (const auto& name : plumb::split(text, ','))
    if (!trim(name).empty()) out.push_back(trim(name));
  return out;
}

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  detect_x86(f);
#endif
  // PLUMB_CPU_FEATURES_OFF: the probe sees a CPU without these (the path of an older CPU on this
  // one; the document records what was hidden). Only what plumb reads itself changes: LibTorch
  // and oneDNN still see the real CPU (ONEDNN_MAX_CPU_ISA caps oneDNN).
  const std::map<std::string, bool CpuFeatures::*> named = {
      {"avx", &CpuFeatures::avx},
      {"avx2", &CpuFeatures::avx2},
      {"fma", &CpuFeatures::fma},
      {"avx512f", &CpuFeatures::avx512f},
      {"avx512bw", &CpuFeatures::avx512bw},
      {"avx512vl", &CpuFeatures::avx512vl},
      {"avx512_vnni", &CpuFeatures::avx512_vnni},
      {"avx512_bf16", &CpuFeatures::avx512_bf16},
      {"avx512_fp16", &CpuFeatures::avx512_fp16},
      {"avx_vnni", &CpuFeatures::avx_vnni},
      {"amx_tile", &CpuFeatures::amx_tile},
      {"amx_bf16", &CpuFeatures::amx_bf16},
      {"amx_int8", &CpuFeatures::amx_int8}};
  for (const auto& name : hidden_cpu_features()) {
    const auto it = named.find(name);
    if (it == named.end())
      throw UsageError("PLUMB_CPU_FEATURES_OFF: unknown feature '" + name +
                       "' (valid: avx, avx2, fma, avx512f, avx512bw, avx512vl, avx512_vnni, "
                       "avx512_bf16, avx512_fp16, avx_vnni, amx_tile, amx_bf16, amx_int8)");
    f.*(it->second) = false;
  }
  if (f.model_name.empty())
    f.model_name = cpuinfo_value("/proc/cpuinfo", {"model name", "Model", "cpu model"});
  f.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (f.avx512f)
    f.widest_fp32_isa = "avx512";
  else if (f.avx2 && f.fma)
    f.widest_fp32_isa = "avx2+fma";
  else if (f.sse2)
    f.widest_fp32_isa = "sse2";
  return f;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  if (cpus.empty())
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      cpus.push_back(static_cast<int>(c));
  return cpus;
}

bool pin_current_thread(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
#else
  (void)cpu;
  return false;
#endif
}

int cores_used_by(int threads, const std::string& root) {
  const std::vector<int> cpus = allowed_cpus();
  std::vector<std::pair<std::string, std::string>> cores;  // (package, core) per CPU used
  for (int i = 0; i < threads && i < static_cast<int>(cpus.size()); ++i) {
    const std::string topo = root + "/cpu" + std::to_string(cpus[i]) + "/topology/";
    std::pair<std::string, std::string> id{read_first_line(topo + "physical_package_id"),
                                           read_first_line(topo + "core_id")};
    if (id.first.empty() || id.second.empty()) return threads;
    if (std::find(cores.begin(), cores.end(), id) == cores.end()) cores.push_back(id);
  }
  return cores.empty() ? threads : static_cast<int>(cores.size());
}

double thread_cpu_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
#endif
  return -1;
}

int64_t parse_cache_size(const std::string& text) {
  std::string t = trim(text);
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == 0 || i > 15) return -1;
  int64_t value = std::stoll(t.substr(0, i));
  std::string unit = t.substr(i);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit == "" || unit == "B") return value;
  if (unit == "K" || unit == "KB" || unit == "KIB") return value << 10;
  if (unit == "M" || unit == "MB" || unit == "MIB") return value << 20;
  if (unit == "G" || unit == "GB" || unit == "GIB") return value << 30;
  return -1;
}

int count_cpu_list(const std::string& text) {
  std::istringstream in(trim(text));
  std::string part;
  int count = 0;
  while (std::getline(in, part, ',')) {
    part = trim(part);
    if (part.empty()) continue;
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        (void)std::stoi(part);
        count += 1;
      } else {
        int lo = std::stoi(part.substr(0, dash)), hi = std::stoi(part.substr(dash + 1));
        if (hi < lo) return 0;
        count += hi - lo + 1;
      }
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

std::vector<CacheLevel> read_cache_levels(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<CacheLevel> levels;
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec) return levels;
  for (const fs::directory_entry& entry : it) {
    std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    std::string dir = entry.path().string();
    CacheLevel c;
    c.type = read_first_line(dir + "/type");
    if (c.type != "Data" && c.type != "Unified") continue;  // Instruction caches: no data
    try {
      c.level = std::stoi(read_first_line(dir + "/level"));
    } catch (const std::exception&) {
      continue;
    }
    c.size_bytes = parse_cache_size(read_first_line(dir + "/size"));
    if (c.size_bytes <= 0) continue;
    c.shared_by_cpus = std::max(1, count_cpu_list(read_first_line(dir + "/shared_cpu_list")));
    levels.push_back(c);
  }
  std::sort(levels.begin(), levels.end(), [](const CacheLevel& a, const CacheLevel& b) {
    return a.level != b.level ? a.level < b.level : a.type < b.type;
  });
  return levels;
}

std::vector<CacheLevel> cache_levels_from_sizes(int64_t l1d, int64_t l2, int64_t l3, int64_t l4,
                                                int logical_cpus) {
  std::vector<CacheLevel> levels;
  const int64_t sizes[] = {l1d, l2, l3, l4};
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] <= 0) continue;
    CacheLevel c;
    c.level = i + 1;
    c.type = i == 0 ? "Data" : "Unified";
    c.size_bytes = sizes[i];
    levels.push_back(c);
  }
  // Above L2 the level is shared by every CPU; L1/L2 are private (see the header).
  if (!levels.empty() && levels.back().level > 2)
    levels.back().shared_by_cpus = std::max(1, logical_cpus);
  return levels;
}

CacheInventory detect_cache_levels(const std::string& root) {
  CacheInventory inventory;
  inventory.levels = read_cache_levels(root);
  if (!inventory.levels.empty()) {
    inventory.source = "sysfs";
    return inventory;
  }
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL4_CACHE_SIZE)
  auto size = [](int name) { return static_cast<int64_t>(std::max(0L, sysconf(name))); };
  inventory.levels = cache_levels_from_sizes(
      size(_SC_LEVEL1_DCACHE_SIZE), size(_SC_LEVEL2_CACHE_SIZE), size(_SC_LEVEL3_CACHE_SIZE),
      size(_SC_LEVEL4_CACHE_SIZE), static_cast<int>(std::thread::hardware_concurrency()));
  if (!inventory.levels.empty()) inventory.source = "cpuid (glibc sysconf)";
#endif
  return inventory;
}

FrequencyInfo read_nominal_frequency(const std::string& cpufreq_max_path,
                                     const std::string& cpuinfo_path) {
  FrequencyInfo info;
  std::string khz = read_first_line(cpufreq_max_path);
  if (!khz.empty()) {
    try {
      info.nominal_hz = std::stod(khz) * 1e3;
      info.nominal_source = "cpufreq cpuinfo_max_freq";
      return info;
    } catch (const std::exception&) {
    }
  }
  std::string mhz = cpuinfo_value(cpuinfo_path, {"cpu MHz"});
  if (!mhz.empty()) {
    try {
      info.nominal_hz = std::stod(mhz) * 1e6;
      info.nominal_source = "/proc/cpuinfo cpu MHz";
    } catch (const std::exception&) {
    }
  }
  return info;
}

// `iterations` x 100 dependent register adds: 100 cycles per iteration on any core whose
// integer add has 1-cycle latency (all current x86 and Arm cores); the loop counter runs on
// another port in parallel. A register operand (not an immediate) so that cores which fold
// add-immediate chains at rename cannot shorten it.
void run_clock_chain(uint64_t iterations) {
  static_assert(kClockChainCyclesPerIteration == 100, "the asm below repeats the add 100 times");
  uint64_t acc = 0;
  uint64_t one = 1;
#if defined(__x86_64__)
  __asm__ volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add %[one], %[acc]\n\t"
      ".endr\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [acc] "+r"(acc), [n] "+r"(iterations)
      : [one] "r"(one)
      : "cc");
#elif defined(__aarch64__)
  __asm__ volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add %[acc], %[acc], %[one]\n\t"
      ".endr\n\t"
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      : [acc] "+r"(acc), [n] "+r"(iterations)
      : [one] "r"(one)
      : "cc");
#else
  (void)iterations;
  (void)one;
  (void)acc;
#endif
}

double measure_core_clock_hz(double seconds) {
#if defined(__x86_64__) || defined(__aarch64__)
  using Clock = std::chrono::steady_clock;
  auto time_chain = [](uint64_t iterations) {
    auto t0 = Clock::now();
    run_clock_chain(iterations);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Calibrate on a short run, then keep the core busy for 10 ms so that it leaves any idle
  // state and reaches the clock it runs loaded at (a boost clock takes milliseconds to ramp
  // up), then time a few repetitions; the best one is the least disturbed by interrupts.
  uint64_t iterations = 1000;
  double t = time_chain(iterations);
  while (t < 1e-3) {
    iterations *= 4;
    t = time_chain(iterations);
  }
  for (double warm = t; warm < 10e-3;) warm += time_chain(iterations);
  constexpr int kRepetitions = 5;
  double per_rep = std::max(seconds / kRepetitions, 1e-3);
  iterations = std::max<uint64_t>(1, static_cast<uint64_t>(iterations * per_rep / t));
  double best = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    double s = time_chain(iterations);
    if (s > 0)
      best = std::max(best, static_cast<double>(iterations) * kClockChainCyclesPerIteration / s);
  }
  return best;
#else
  (void)seconds;
  return 0;
#endif
}

FrequencyInfo detect_frequency(double measure_seconds) {
  FrequencyInfo info = read_nominal_frequency();
  info.measured_hz = measure_core_clock_hz(measure_seconds);
  return info;
}

int fma_units_per_core(const CpuFeatures& cpu) {
  return fma_entry(cpu).units;
}
int fma_width_bits(const CpuFeatures& cpu) {
  return fma_entry(cpu).width_bits;
}
std::string microarchitecture_name(const CpuFeatures& cpu) {
  return fma_entry(cpu).name;
}
int tile_cycles_per_instruction(const CpuFeatures& cpu) {
  // Intel's optimisation manual: TDPBF16PS and TDPBUSD issue once per 16 cycles.
  const std::string name = fma_entry(cpu).name;
  return name == "sapphirerapids" || name == "emeraldrapids" || name == "graniterapids" ? 16 : 0;
}

double theoretical_peak_flops(Dtype dtype, const CpuFeatures& cpu, double hz, int cores) {
  FmaEntry e = fma_entry(cpu);
  if (e.units == 0 || hz <= 0 || cores <= 0) return 0;
  int isa_bits = fma_isa_bits(cpu);
  // Bits processed per core per cycle by instructions of at most `max_bits` width.
  auto bits_per_cycle = [&](int max_bits) {
    return static_cast<double>(e.units) * std::min({e.width_bits, isa_bits, max_bits});
  };
  double per_core_cycle = 0;  // ops per core per cycle
  switch (dtype) {
    case Dtype::kFp64:
      per_core_cycle = bits_per_cycle(512) / 64 * 2;
      break;
    case Dtype::kFp32:
      per_core_cycle = bits_per_cycle(512) / 32 * 2;
      break;
    case Dtype::kBf16:
      if (cpu.avx512_bf16) per_core_cycle = bits_per_cycle(512) / 32 * 4;
      break;
    case Dtype::kFp16:
      if (cpu.avx512_fp16) per_core_cycle = bits_per_cycle(512) / 16 * 2;
      break;
    case Dtype::kInt8:
      if (cpu.avx512_vnni)
        per_core_cycle = bits_per_cycle(512) / 32 * 8;
      else if (cpu.avx_vnni)
        per_core_cycle = bits_per_cycle(256) / 32 * 8;
      break;
  }
  return per_core_cycle * cores * hz;
}

}  // namespace plumb::platform
