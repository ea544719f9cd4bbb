// Parsing of latency bounds and waits (see duration_text.h).
#include "plumb/cli/duration_text.h"

#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::cli {

double parse_duration_s(const std::string& option, const std::string& text) {
  static const std::regex pattern(
      R"(\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s|min|m|h)\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, pattern))
    throw UsageError(
        fmt::format("{}: '{}' is not a duration; give a number and a unit, e.g. "
                    "20ms, 1.5s, 500us or 5m",
                    option, text));
  const double value = std::stod(m[1].str());
  const std::string unit = m[2].str();
  const double seconds = value * (unit == "us"                   ? 1e-6
                                  : unit == "ms"                 ? 1e-3
                                  : unit == "m" || unit == "min" ? 60.0
                                  : unit == "h"                  ? 3600.0
                                                                 : 1.0);
  if (!std::isfinite(seconds) || seconds <= 0)
    throw UsageError(
        fmt::format("{} must be a positive duration such as 2ms, got '{}'", option, text));
  return seconds;
}

}  // namespace plumb::cli
