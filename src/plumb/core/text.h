// Small string helpers used across layers: joining, splitting, and "did you mean" hints.
#pragma once

#include <string>
#include <vector>

namespace plumb {

std::string join(const std::vector<std::string>& parts, const std::string& sep);

// The first line of a message (LibTorch's and c10d's append context and C++ stack traces).
std::string first_line(const std::string& text);
std::vector<std::string> split(const std::string& text, char sep);

// Levenshtein edit distance (for suggesting close names after a typo).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidates within a small edit distance of `name` (or containing it), closest first.
std::vector<std::string> close_matches(const std::string& name,
                                       const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" when nothing is close.
std::string suggestion_suffix(const std::string& name, const std::vector<std::string>& candidates);

// "512 B", "12.0 KiB", "456.7 MiB", "1.25 GiB"; "-" for NaN.
std::string format_bytes(double bytes);

// Seconds shown in milliseconds: "12.34 ms" (decimals after the point); "-" when not finite.
std::string format_ms(double seconds, int decimals = 2);

}  // namespace plumb
