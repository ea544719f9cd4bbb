// Plain-text tables for human output: columns sized to their content, numbers right-aligned.
// Here, below jobs/, so that a job's text reporter prints the same tables the command line
// always printed (cli/table.h gives them their cli names).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "plumb/core/text.h"

namespace plumb::report {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.3 ms", "1.24 s", "850 us": step times in the unit a reader expects.
std::string format_seconds(double seconds);
// "1,234.5" style with 3 significant decimals for throughputs; "-" for NaN or infinity.
std::string format_number(double value, int decimals = 1);
// "1.8%" for a fraction; "-" for NaN or infinity.
std::string format_percent(double fraction, int decimals = 1);
// "4m05s", "1h02m" for elapsed times and ETAs; "?" for a negative or non-finite value.
std::string format_duration(double seconds);
// "25,557,032"
std::string format_count(long long value);
// "22159", "566", "1.18": whole units once there are enough of them (throughputs, token
// rates, MiB), three significant digits below 100; "-" for NaN or infinity.
std::string format_rate(double value);
// Byte sizes as plumb prints them everywhere (core/text.h).
using plumb::format_bytes;

}  // namespace plumb::report
