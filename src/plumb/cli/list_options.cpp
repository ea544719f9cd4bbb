// Comma-separated option values (see list_options.h).
#include "plumb/cli/list_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb::cli {

std::vector<std::string> parse_name_list(const std::string& option, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& item : split(text, ',')) {
    if (item.empty())
      throw UsageError(
          fmt::format("{} has an empty item in '{}'; separate values with single "
                      "commas, e.g. {} 1,2",
                      option, text, option));
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw UsageError(fmt::format("{} lists '{}' twice; give each value once", option, item));
    out.push_back(item);
  }
  if (out.empty()) throw UsageError(fmt::format("{} needs at least one value", option));
  return out;
}

std::vector<int> parse_positive_int_list(const std::string& option, const std::string& text) {
  std::vector<int> out;
  for (const auto& item : parse_name_list(option, text)) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 1 << 20)
      throw UsageError(fmt::format("{} values must be positive integers, got '{}'", option, item));
    const int value = static_cast<int>(v);
    if (std::find(out.begin(), out.end(), value) != out.end())
      throw UsageError(fmt::format("{} lists {} twice; give each value once", option, value));
    out.push_back(value);
  }
  return out;
}

std::vector<double> parse_number_list(const std::string& option, const std::string& text,
                                      double min, bool min_exclusive) {
  std::vector<double> out;
  for (const auto& item : parse_name_list(option, text)) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v) || v < min || (min_exclusive && v == min))
      throw UsageError(fmt::format("{} values must be numbers {} {}, got '{}'", option,
                                   min_exclusive ? ">" : ">=", min, item));
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw UsageError(fmt::format("{} lists {} twice; give each value once", option, v));
    out.push_back(v);
  }
  return out;
}

}  // namespace plumb::cli
