// AMX tile kernels, the tile permission and single tile products (see tile_kernels.h).
#include "plumb/platform/tile_kernels.h"

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace plumb::platform {
namespace {

// Linux's arch_prctl codes for the dynamically enabled tile state (asm/prctl.h, 5.16+), spelled
// out because older kernel headers lack them.
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtileData = 18;

// The tile palette: every one of the 8 tiles 16 rows x 64 bytes (ldtilecfg's 64-byte layout).
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads exactly 64 bytes");

// "" when granted; the reason otherwise. Asked once per process: the grant is process-wide.
const std::string& tile_permission_refusal() {
  static const std::string refusal = [] {
#if defined(__linux__) && defined(__x86_64__)
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0) return std::string();
    return std::string(
               "the kernel refused this process the AMX tile state (arch_prctl "
               "ARCH_REQ_XCOMP_PERM: ") +
           std::strerror(errno) + "; Linux 5.16 or later grants it)";
#else
    return std::string("AMX tiles need Linux on x86-64");
#endif
  }();
  return refusal;
}

#if defined(__x86_64__)

// Loads the palette and puts the two source operands into tmm6 (A) and tmm7 (B); tmm0-5 are
// zeroed as accumulators. Undone by release_tiles().
void configure_tiles(const void* a, const void* b) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = kTileRows;
    cfg.colsb[t] = kTileRowBytes;
  }
  const long stride = kTileRowBytes;
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
  __asm__ volatile(
      "tileloadd (%0,%2,1), %%tmm6\n\t"
      "tileloadd (%1,%2,1), %%tmm7\n\t"
      "tilezero %%tmm0\n\t"
      "tilezero %%tmm1\n\t"
      "tilezero %%tmm2\n\t"
      "tilezero %%tmm3\n\t"
      "tilezero %%tmm4\n\t"
      "tilezero %%tmm5\n\t"
      :
      : "r"(a), "r"(b), "r"(stride)
      : "memory");
}

// Stores accumulator tmm0 into `c` (16 rows of 64 bytes) and releases the tile state.
void store_first_accumulator_and_release(void* c) {
  const long stride = kTileRowBytes;
  __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\t" : : "r"(c), "r"(stride) : "memory");
  __asm__ volatile("tilerelease" : : : "memory");
}

// Operands whose products cancel in pairs, so the accumulators stay exactly 0 however long a
// kernel runs, while the engine still does every multiply and add.
struct Bf16Operands {
  alignas(64) uint16_t a[kTileRows * kTileRowBytes / 2];
  alignas(64) uint16_t b[kTileRows * kTileRowBytes / 2];
  Bf16Operands() {
    for (int i = 0; i < kTileRows * kTileRowBytes / 2; ++i) {
      a[i] = 0x3FC0;                          // 1.5
      b[i] = (i % 2 == 0) ? 0x3E80 : 0xBE80;  // 0.25, -0.25: each bf16 pair sums to 0
    }
  }
};
struct Int8Operands {
  alignas(64) uint8_t a[kTileRows * kTileRowBytes];
  alignas(64) int8_t b[kTileRows * kTileRowBytes];
  Int8Operands() {
    for (int i = 0; i < kTileRows * kTileRowBytes; ++i) {
      a[i] = 3;
      b[i] = static_cast<int8_t>(i % 2 == 0 ? 2 : -2);  // each quadruple sums to 0
    }
  }
};

double sum_of_first_row(const float* c) {
  double s = 0;
  for (int i = 0; i < kTileRowBytes / 4; ++i) s += c[i];
  return s;
}

// The two loops for one tile instruction, as a macro because the mnemonic is part of the
// assembly text. Six accumulators (tmm0-5) cover the instruction's latency at its issue rate.
#define PLUMB_TILE_KERNELS(NAME, MNEMONIC, OPERANDS)                                       \
  void NAME##_peak(uint64_t iterations, volatile double* sink) {                           \
    static const OPERANDS operands;                                                        \
    alignas(64) float c[kTileRows * kTileRowBytes / 4];                                    \
    configure_tiles(operands.a, operands.b);                                               \
    if (iterations > 0)                                                                    \
      __asm__ volatile(                                                                    \
          "1:\n\t" MNEMONIC " %%tmm7, %%tmm6, %%tmm0\n\t" MNEMONIC                         \
          " %%tmm7, %%tmm6, %%tmm1\n\t" MNEMONIC " %%tmm7, %%tmm6, %%tmm2\n\t" MNEMONIC    \
          " %%tmm7, %%tmm6, %%tmm3\n\t" MNEMONIC " %%tmm7, %%tmm6, %%tmm4\n\t" MNEMONIC    \
          " %%tmm7, %%tmm6, %%tmm5\n\t"                                                    \
          "dec %[n]\n\t"                                                                   \
          "jnz 1b\n\t"                                                                     \
          : [n] "+r"(iterations)                                                           \
          :                                                                                \
          : "cc");                                                                         \
    store_first_accumulator_and_release(c);                                                \
    *sink = sum_of_first_row(c);                                                           \
  }                                                                                        \
  /* 5 x (20 dependent adds, then a tile product): kClockChainCyclesPerIteration (100)  */ \
  /* cycles per trip, one tile instruction per 20 cycles (the engine issues one per 16, */ \
  /* so the adds set the pace). Dense enough that the core drops to its AMX clock: on   */ \
  /* the Xeon VM the add chain ran at 2.4 GHz with a tile product every 16-24 cycles,   */ \
  /* 2.7-2.9 GHz with one every 50 and 3.0-3.4 GHz with none (docs/ceilings.md).        */ \
  void NAME##_clock(uint64_t iterations, volatile double* sink) {                          \
    static_assert(kClockChainCyclesPerIteration == 100, "5 blocks of 20 adds");            \
    static const OPERANDS operands;                                                        \
    alignas(64) float c[kTileRows * kTileRowBytes / 4];                                    \
    uint64_t acc = 0, one = 1;                                                             \
    configure_tiles(operands.a, operands.b);                                               \
    if (iterations > 0)                                                                    \
      __asm__ volatile(                                                                    \
          "1:\n\t"                                                                         \
          ".irp r,0,1,2,3,4\n\t"                                                           \
          ".rept 20\n\t"                                                                   \
          "add %[one], %[acc]\n\t"                                                         \
          ".endr\n\t" MNEMONIC                                                             \
          " %%tmm7, %%tmm6, %%tmm\\r\n\t"                                                  \
          ".endr\n\t"                                                                      \
          "dec %[n]\n\t"                                                                   \
          "jnz 1b\n\t"                                                                     \
          : [acc] "+r"(acc), [n] "+r"(iterations)                                          \
          : [one] "r"(one)                                                                 \
          : "cc");                                                                         \
    store_first_accumulator_and_release(c);                                                \
    *sink = sum_of_first_row(c) + static_cast<double>(acc);                                \
  }

PLUMB_TILE_KERNELS(bf16_tile, "tdpbf16ps", Bf16Operands)
PLUMB_TILE_KERNELS(int8_tile, "tdpbusd", Int8Operands)
#undef PLUMB_TILE_KERNELS

#endif  // __x86_64__

}  // namespace

bool amx_usable(const CpuFeatures& cpu, Dtype dtype, std::string* reason) {
  auto refuse = [&](std::string why) {
    if (reason != nullptr) *reason = std::move(why);
    return false;
  };
  if (dtype != Dtype::kBf16 && dtype != Dtype::kInt8)
    return refuse(std::string("plumb has no AMX kernel for ") + dtype_name(dtype));
  const bool has = dtype == Dtype::kBf16 ? cpu.amx_bf16 : cpu.amx_int8;
  if (!has || !cpu.amx_tile)
    return refuse(std::string("no AMX (amx_tile, ") +
                  (dtype == Dtype::kBf16 ? "amx_bf16" : "amx_int8") + ") on this CPU");
  if (!tile_permission_refusal().empty()) return refuse(tile_permission_refusal());
  if (reason != nullptr) reason->clear();
  return true;
}

double tile_ops_per_instruction(Dtype dtype) {
  // C is M x N 32-bit elements; A's row holds K elements of the source type.
  const double m = kTileRows, n = kTileRowBytes / 4.0;
  if (dtype == Dtype::kBf16) return 2 * m * n * (kTileRowBytes / 2.0);
  if (dtype == Dtype::kInt8) return 2 * m * n * kTileRowBytes;
  return 0;
}

PeakKernel tile_peak_kernel(Dtype dtype) {
#if defined(__x86_64__)
  if (dtype == Dtype::kBf16) return bf16_tile_peak;
  if (dtype == Dtype::kInt8) return int8_tile_peak;
#endif
  (void)dtype;
  return nullptr;
}

PeakKernel tile_clock_kernel(Dtype dtype) {
#if defined(__x86_64__)
  if (dtype == Dtype::kBf16) return bf16_tile_clock;
  if (dtype == Dtype::kInt8) return int8_tile_clock;
#endif
  (void)dtype;
  return nullptr;
}

namespace {

// One tile product of `dtype`'s instruction: C = A x B with C zeroed first.
bool one_tile_product(Dtype dtype, const void* a, const void* b, void* c) {
  if (!amx_usable(detect_cpu_features(), dtype, nullptr)) return false;
#if defined(__x86_64__)
  configure_tiles(a, b);
  if (dtype == Dtype::kBf16)
    __asm__ volatile("tdpbf16ps %%tmm7, %%tmm6, %%tmm0" : : : "memory");
  else
    __asm__ volatile("tdpbusd %%tmm7, %%tmm6, %%tmm0" : : : "memory");
  store_first_accumulator_and_release(c);
  return true;
#else
  (void)a, (void)b, (void)c;
  return false;
#endif
}

}  // namespace

bool tile_product_bf16(const uint16_t* a, const uint16_t* b, float* c) {
  return one_tile_product(Dtype::kBf16, a, b, c);
}

bool tile_product_int8(const uint8_t* a, const int8_t* b, int32_t* c) {
  return one_tile_product(Dtype::kInt8, a, b, c);
}

}  // namespace plumb::platform
