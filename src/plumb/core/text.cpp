// String helpers (see text.h).
#include "plumb/core/text.h"

#include <cmath>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

namespace plumb {

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> close_matches(const std::string& name,
                                       const std::vector<std::string>& candidates) {
  std::vector<std::pair<size_t, std::string>> scored;
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c);
    bool contains =
        !name.empty() && (c.find(name) != std::string::npos || name.find(c) != std::string::npos);
    if (d <= limit || contains) scored.emplace_back(contains ? 0 : d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& s : scored) out.push_back(s.second);
  return out;
}

std::string suggestion_suffix(const std::string& name, const std::vector<std::string>& candidates) {
  auto matches = close_matches(name, candidates);
  if (matches.empty()) return "";
  if (matches.size() > 3) matches.resize(3);
  return " (did you mean '" + join(matches, "', '") + "'?)";
}

std::string format_bytes(double bytes) {
  if (std::isnan(bytes)) return "-";
  const double magnitude = std::fabs(bytes);
  if (magnitude < 1024) return fmt::format("{:.0f} B", bytes);
  if (magnitude < 0x1p20) return fmt::format("{:.1f} KiB", bytes / 0x1p10);
  if (magnitude < 0x1p30) return fmt::format("{:.1f} MiB", bytes / 0x1p20);
  return fmt::format("{:.2f} GiB", bytes / 0x1p30);
}

std::string format_ms(double seconds, int decimals) {
  return std::isfinite(seconds) ? fmt::format("{:.{}f} ms", 1e3 * seconds, decimals) : "-";
}

}  // namespace plumb
