// A tuning point as text (see tune_point.h).
#include "plumb/run/tune_point.h"

#include "plumb/core/text.h"

namespace plumb::run {

std::string point_text(const std::vector<TuneFactor>& factors, const TunePoint& point) {
  std::vector<std::string> parts;
  for (size_t f = 0; f < factors.size(); ++f)
    if (point[f] != 0) parts.push_back(factors[f].name + "=" + factors[f].values[point[f]]);
  return parts.empty() ? "stock" : join(parts, " ");
}

}  // namespace plumb::run
