// Parsing of comma-separated option values ("--threads 1,2,4", "--mode train,infer") with
// the validation every list option needs: non-empty, no duplicates, each item valid.
#pragma once

#include <string>
#include <vector>

namespace plumb::cli {

// "1,2,4" -> {1, 2, 4}; throws UsageError naming `option` for empty items, non-integers,
// values < 1 and duplicates.
std::vector<int> parse_positive_int_list(const std::string& option, const std::string& text);

// "0,0.5,16" -> {0, 0.5, 16}; throws UsageError naming `option` for empty items, non-numbers,
// values below `min` (or equal to it when `min_exclusive`) and duplicates.
std::vector<double> parse_number_list(const std::string& option, const std::string& text,
                                      double min, bool min_exclusive);
// "train,infer" -> {"train", "infer"}; throws UsageError for empty items and duplicates.
std::vector<std::string> parse_name_list(const std::string& option, const std::string& text);

}  // namespace plumb::cli
