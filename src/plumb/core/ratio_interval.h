// A ratio of two measured throughputs (a speedup: a precision against fp32, a tuned configuration
// against stock) with its 95% interval, as every text table, report card and JSON document shows
// it. The ratio is known whenever both throughputs are; the interval needs at least two step-time
// samples per side (analysis/run_comparison.h), so a quick pass on a slow machine can know the
// first without the second. Such a ratio is shown as the ratio with "interval unknown", and a
// ratio nobody measured as "not measured": NaN never reaches a reader ("nanx" did, on cards and
// in characterize's summary, where a precision run had one sample).
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace plumb {

struct RatioInterval {
  double ratio = std::numeric_limits<double>::quiet_NaN();
  double low = std::numeric_limits<double>::quiet_NaN();  // 95% interval of the ratio
  double high = std::numeric_limits<double>::quiet_NaN();
  bool ratio_known() const { return std::isfinite(ratio); }
  bool interval_known() const { return ratio_known() && std::isfinite(low) && std::isfinite(high); }
};

// Why the interval (or the ratio itself) is unknown, "" when both are known. One wording for
// every output: "interval unknown: fewer than 2 step-time samples on a side".
std::string ratio_unknown_reason(const RatioInterval& r);

// "2.50x"; "not measured" when the ratio is unknown.
std::string ratio_text(const RatioInterval& r, int decimals = 2);
// "2.40..2.60"; "unknown" when only the interval is; "-" when the ratio is unknown too.
std::string interval_text(const RatioInterval& r, int decimals = 2);
// "2.50x [2.40, 2.60]", "2.50x (interval unknown)" or "not measured".
std::string ratio_with_interval_text(const RatioInterval& r, int decimals = 2);

// {ratio, ci_low, ci_high, reason}: numbers or null, and `reason` (ratio_unknown_reason, "" when
// all three are numbers) saying why a null is there.
nlohmann::ordered_json ratio_json(const RatioInterval& r);

}  // namespace plumb
