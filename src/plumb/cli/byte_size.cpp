// Parsing of byte sizes (see byte_size.h).
#include "plumb/cli/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/errors.h"

namespace plumb::cli {

int64_t parse_byte_size(const std::string& option, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(
        fmt::format("{} '{}' {}; give a size such as 8GiB, 512MiB, 1.5GB or a number of bytes",
                    option, text, why));
  };
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number)) throw bad("is not a size");
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"", 1},       {"b", 1},        {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},
      {"m", 0x1p20}, {"mib", 0x1p20}, {"mb", 1e6},     {"g", 0x1p30},   {"gib", 0x1p30},
      {"gb", 1e9},   {"t", 0x1p40},   {"tib", 0x1p40}, {"tb", 1e12}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(number * scale);
    if (bytes < 1) throw bad("is not a positive size");
    if (bytes > 0x1p62) throw bad("is larger than any machine's memory");
    return static_cast<int64_t>(bytes);
  }
  throw bad("has an unknown unit (valid: B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)");
}

}  // namespace plumb::cli
