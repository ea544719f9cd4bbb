// Text and JSON for a ratio with an optional interval (see ratio_interval.h).
#include "plumb/core/ratio_interval.h"

#include <fmt/format.h>

#include "plumb/core/json_number.h"

namespace plumb {

std::string ratio_unknown_reason(const RatioInterval& r) {
  if (!r.ratio_known()) return "not measured: a throughput of either side is missing";
  if (!r.interval_known()) return "interval unknown: fewer than 2 step-time samples on a side";
  return "";
}

std::string ratio_text(const RatioInterval& r, int decimals) {
  return r.ratio_known() ? fmt::format("{:.{}f}x", r.ratio, decimals) : "not measured";
}

std::string interval_text(const RatioInterval& r, int decimals) {
  if (!r.ratio_known()) return "-";
  if (!r.interval_known()) return "unknown";
  return fmt::format("{:.{}f}..{:.{}f}", r.low, decimals, r.high, decimals);
}

std::string ratio_with_interval_text(const RatioInterval& r, int decimals) {
  if (!r.ratio_known()) return ratio_text(r, decimals);
  if (!r.interval_known()) return ratio_text(r, decimals) + " (interval unknown)";
  return fmt::format("{} [{:.{}f}, {:.{}f}]", ratio_text(r, decimals), r.low, decimals, r.high,
                     decimals);
}

nlohmann::ordered_json ratio_json(const RatioInterval& r) {
  // Bounds without their ratio are never shown: they go with the point.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool bounds = r.interval_known();
  return {{"ratio", json_number(r.ratio)},
          {"ci_low", json_number(bounds ? r.low : nan)},
          {"ci_high", json_number(bounds ? r.high : nan)},
          {"reason", ratio_unknown_reason(r)}};
}

}  // namespace plumb
