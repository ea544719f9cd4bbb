// Text tables and number formatting for human output (see text_table.h).
#include "plumb/report/text_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace plumb::report {
namespace {

bool text_table_cell_is_numeric(const std::string& s) {
  return !s.empty() &&
         (std::isdigit(static_cast<unsigned char>(s[0])) ||
          (s[0] == '-' && s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1]))));
}

}  // namespace

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto print_row = [&](const std::vector<std::string>& row, bool header) {
    std::string line;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const bool right = !header && text_table_cell_is_numeric(cell);
      line += right ? fmt::format("{:>{}}", cell, width[c]) : fmt::format("{:<{}}", cell, width[c]);
      if (c + 1 < width.size()) line += "  ";
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  };
  print_row(header_, true);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  print_row(rule, true);
  for (const auto& row : rows_) print_row(row, false);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string format_number(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string format_percent(double f, int decimals) {
  if (!std::isfinite(f)) return "-";
  return fmt::format("{:.{}f}%", 100 * f, decimals);
}

std::string format_count(long long v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60)
                   : fmt::format("{}m{:02}s", s / 60, s % 60);
}

std::string format_rate(double value) {
  if (!std::isfinite(value)) return "-";
  return value >= 100 ? fmt::format("{:.0f}", value) : fmt::format("{:.3g}", value);
}

}  // namespace plumb::report
