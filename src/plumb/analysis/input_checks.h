// Small helpers the analyses share to check their inputs and name bad values in the
// UsageError they raise: a number as the user would read it, and "positive and finite".
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace plumb::analysis {

// Shortest readable text of a number ("1e+11", "nan", "-3"), for error messages.
inline std::string number_text(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

inline bool is_positive_finite(double x) {
  return x > 0 && std::isfinite(x);
}

}  // namespace plumb::analysis
