// GEMM shape arithmetic (see gemm_shape.h).
#include "plumb/core/gemm_shape.h"

#include <cmath>
#include <tuple>

namespace plumb {

double GemmShape::macs() const {
  return static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
         static_cast<double>(k);
}

double GemmShape::intensity(double element_bytes) const {
  const double mk = static_cast<double>(m) * static_cast<double>(k);
  const double kn = static_cast<double>(k) * static_cast<double>(n);
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  const double bytes = static_cast<double>(batch) * element_bytes * (mk + kn + mn);
  return bytes > 0 ? 2 * macs() / bytes : 0;
}

double GemmShape::square_side() const {
  return std::cbrt(macs());
}

// 2 s^3 FLOPs over 3 s^2 elements.
double GemmShape::square_intensity(double element_bytes) const {
  return element_bytes > 0 ? 2 * square_side() / (3 * element_bytes) : 0;
}

std::string GemmShape::text() const {
  std::string s = batch > 1 ? std::to_string(batch) + " x " : "";
  return s + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

bool GemmShape::operator<(const GemmShape& o) const {
  return std::tie(batch, m, n, k) < std::tie(o.batch, o.m, o.n, o.k);
}

bool GemmShape::operator==(const GemmShape& o) const {
  return std::tie(batch, m, n, k) == std::tie(o.batch, o.m, o.n, o.k);
}

}  // namespace plumb
