// i8-acc16 emulation (see int8_acc16.h).
#include "plumb/platform/int8_acc16.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace plumb::platform {
namespace {

int32_t saturate16(int32_t v) {
  return std::clamp<int32_t>(v, INT16_MIN, INT16_MAX);
}

// One output element the way the 16-bit kernel computes it: pairs of u8 x s8 products summed
// with saturation (vpmaddubsw), added into a saturating 16-bit accumulator (vpaddsw), which is
// spilled into a 32-bit sum every `spill` K elements.
int64_t dot_acc16(const uint8_t* a, const int8_t* w, int64_t k, int spill) {
  int64_t sum32 = 0;
  int32_t sum16 = 0;
  for (int64_t i = 0; i < k; i += 2) {
    const int32_t pair = a[i] * w[i] + (i + 1 < k ? static_cast<int32_t>(a[i + 1]) * w[i + 1] : 0);
    sum16 = saturate16(sum16 + saturate16(pair));
    if (i % spill == spill - 2) {
      sum32 += sum16;
      sum16 = 0;
    }
  }
  return sum32 + sum16;
}

int64_t dot_acc32(const uint8_t* a, const int8_t* w, int64_t k) {
  int64_t sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += static_cast<int32_t>(a[i]) * w[i];
  return sum;
}

double relative_l2(const std::vector<double>& ref, const std::vector<double>& got) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0;
}

}  // namespace

Acc16Error emulate_int8_acc16(const GemmShape& shape, const Acc16Options& o) {
  if (o.spill_every < 2 || o.spill_every % 2 != 0)
    throw std::invalid_argument("the 16-bit spill interval must be an even number of K elements");
  if (o.main_bits < 2 || o.main_bits > 8)
    throw std::invalid_argument("the outlier split keeps 2 to 8 bits in the main part");
  const int64_t k = std::max<int64_t>(shape.k, 1);
  int64_t rows = std::clamp<int64_t>(shape.m, 1, o.rows);
  int64_t cols = std::clamp<int64_t>(shape.n, 1, o.cols);
  // A very deep K (a weight gradient's pixels) samples fewer outputs: ~2^26 MACs at most.
  while (rows * cols * k > (int64_t{1} << 26) && (rows > 8 || cols > 8))
    (rows >= cols ? rows : cols) /= 2;
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.f, 1.f);

  // Activations [rows, K], row-major; weights stored per output column [cols, K].
  std::vector<float> a(static_cast<size_t>(rows * k)), w(static_cast<size_t>(cols * k));
  for (auto& v : a) v = std::max(0.f, normal(rng));
  for (auto& v : w) v = normal(rng);

  const float a_max = *std::max_element(a.begin(), a.end());
  const float a_scale = a_max > 0 ? a_max / 255.f : 1.f;
  std::vector<uint8_t> qa(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    qa[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(a[i] / a_scale), 0.f, 255.f));

  const int main_hi = (1 << (o.main_bits - 1)) - 1, main_lo = -(1 << (o.main_bits - 1));
  std::vector<int8_t> qw(w.size()), main(w.size()), outlier(w.size());
  std::vector<float> w_scale(static_cast<size_t>(cols));
  int64_t outliers = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const float* col = &w[static_cast<size_t>(j * k)];
    float peak = 0;
    for (int64_t i = 0; i < k; ++i) peak = std::max(peak, std::fabs(col[i]));
    w_scale[static_cast<size_t>(j)] = peak > 0 ? peak / 127.f : 1.f;
    for (int64_t i = 0; i < k; ++i) {
      const size_t at = static_cast<size_t>(j * k + i);
      qw[at] = static_cast<int8_t>(
          std::clamp(std::nearbyint(col[i] / w_scale[static_cast<size_t>(j)]), -127.f, 127.f));
      main[at] = static_cast<int8_t>(std::clamp<int>(qw[at], main_lo, main_hi));
      outlier[at] = static_cast<int8_t>(qw[at] - main[at]);
      outliers += outlier[at] != 0 ? 1 : 0;
    }
  }

  const size_t n_out = static_cast<size_t>(rows * cols);
  std::vector<double> ref(n_out), acc32(n_out), acc16(n_out), split(n_out);
  int64_t acc16_diff = 0, split_diff = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* ar = &qa[static_cast<size_t>(r * k)];
    for (int64_t j = 0; j < cols; ++j) {
      const size_t col = static_cast<size_t>(j * k), out = static_cast<size_t>(r * cols + j);
      double exact = 0;
      for (int64_t i = 0; i < k; ++i)
        exact += static_cast<double>(a[static_cast<size_t>(r * k + i)]) * w[col + i];
      const int64_t s32 = dot_acc32(ar, &qw[col], k);
      const int64_t s16 = dot_acc16(ar, &qw[col], k, o.spill_every);
      const int64_t s_split =
          dot_acc16(ar, &main[col], k, o.spill_every) + dot_acc32(ar, &outlier[col], k);
      const double scale = static_cast<double>(a_scale) * w_scale[static_cast<size_t>(j)];
      ref[out] = exact;
      acc32[out] = scale * static_cast<double>(s32);
      acc16[out] = scale * static_cast<double>(s16);
      split[out] = scale * static_cast<double>(s_split);
      acc16_diff += s16 != s32 ? 1 : 0;
      split_diff += s_split != s32 ? 1 : 0;
    }
  }
  Acc16Error e;
  e.outputs = static_cast<int64_t>(n_out);
  e.outlier_density = static_cast<double>(outliers) / static_cast<double>(w.size());
  e.acc32_relative_l2 = relative_l2(ref, acc32);
  e.acc16_relative_l2 = relative_l2(ref, acc16);
  e.acc16_saturated = static_cast<double>(acc16_diff) / static_cast<double>(n_out);
  e.split_relative_l2 = relative_l2(ref, split);
  e.split_saturated = static_cast<double>(split_diff) / static_cast<double>(n_out);
  return e;
}

}  // namespace plumb::platform
