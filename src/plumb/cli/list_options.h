// Parsing of comma-separated option values ("--threads 1,2,4", "--mode train,infer") with
// the validation every list option needs: non-empty, no duplicates, each item valid.
#pragma once

#include <string>
#include <vector>

namespace plumb::cli {

// "1,2,4" -> {1, 2, 4}; throws UsageError naming `option` for empty items, non-integers,
// values < 1 and duplicates.
std::vector<int> parse_positive_int_list(const std::string& option, const std::string& text);

// "train,infer" -> {"train", "infer"}; throws UsageError for empty items and duplicates.
std::vector<std::string> parse_name_list(const std::string& option, const std::string& text);

}  // namespace plumb::cli
