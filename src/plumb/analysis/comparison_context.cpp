// Environment differences and per-category time deltas for plumb compare (see
// comparison_context.h).
#include "plumb/analysis/comparison_context.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"

namespace plumb::analysis {
namespace {

// A JSON environment value as one line of text: strings as they are, lists comma-joined.
std::string environment_value_text(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "unknown";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& item : v) parts.push_back(environment_value_text(item));
    return join(parts, ",");
  }
  return json_text(v);
}

// The distinct values of one field over a side's environments, in order of first appearance.
std::string side_values(const std::vector<nlohmann::ordered_json>& side, const std::string& key) {
  std::vector<std::string> values;
  for (const auto& env : side) {
    std::string text = environment_value_text(env.at(key));
    if (std::find(values.begin(), values.end(), text) == values.end()) values.push_back(text);
  }
  return values.empty() ? "-" : join(values, " | ");
}

double highest_load(const std::vector<platform::Environment>& side) {
  double highest = std::numeric_limits<double>::quiet_NaN();
  for (const auto& env : side)
    if (!std::isnan(env.load_average_1m))
      highest = std::isnan(highest) ? env.load_average_1m : std::max(highest, env.load_average_1m);
  return highest;
}

std::string all_warnings(const std::vector<platform::Environment>& side) {
  std::set<std::string> warnings;
  for (const auto& env : side) warnings.insert(env.warnings.begin(), env.warnings.end());
  return warnings.empty() ? "none" : join({warnings.begin(), warnings.end()}, "; ");
}

std::string without_digits(std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(),
                            [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }),
             text.end());
  return text;
}

}  // namespace

std::vector<EnvironmentField> environment_fields(const std::vector<platform::Environment>& a,
                                                 const std::vector<platform::Environment>& b) {
  std::vector<nlohmann::ordered_json> json_a, json_b;
  for (const auto& env : a) json_a.push_back(platform::to_json(env));
  for (const auto& env : b) json_b.push_back(platform::to_json(env));
  std::vector<EnvironmentField> fields;
  // The identity fields, in the order the environment record lists them (to_json is the one
  // list of them, so a field added there is compared here too).
  const nlohmann::ordered_json field_names = platform::to_json(platform::Environment{});
  for (const auto& item : field_names.items()) {
    const std::string& key = item.key();
    if (key == "load_average_1m" || key == "warnings") continue;  // conditions: below
    EnvironmentField f{key, side_values(json_a, key), side_values(json_b, key), false};
    f.differs = f.a != f.b;
    fields.push_back(std::move(f));
  }
  const double load_a = highest_load(a), load_b = highest_load(b);
  fields.push_back({"load_average_1m (highest at a run's start)",
                    std::isnan(load_a) ? "unknown" : fmt::format("{:.2f}", load_a),
                    std::isnan(load_b) ? "unknown" : fmt::format("{:.2f}", load_b),
                    std::isnan(load_a) != std::isnan(load_b) ||
                        std::fabs(load_a - load_b) >= kLoadAverageTolerance});
  EnvironmentField warnings{"warnings", all_warnings(a), all_warnings(b), false};
  // Warnings quote numbers ("other processes kept 1.0 of 2 cores busy"): the same kind of
  // warning with another figure is not a difference.
  warnings.differs = without_digits(warnings.a) != without_digits(warnings.b);
  fields.push_back(std::move(warnings));
  return fields;
}

std::vector<CategoryDelta> category_deltas(const profile::StepProfile& a,
                                           const profile::StepProfile& b) {
  std::map<std::string, CategoryDelta> by_name;
  const Breakdown categories_a = breakdown(a, GroupBy::kCategory);
  const Breakdown categories_b = breakdown(b, GroupBy::kCategory);
  for (const auto& row : categories_a.rows) by_name[row.name].a_s = row.time_s;
  for (const auto& row : categories_b.rows) by_name[row.name].b_s = row.time_s;
  by_name[kOutsideOperators].a_s = categories_a.overhead_s;
  by_name[kOutsideOperators].b_s = categories_b.overhead_s;
  const double step_delta = b.step_s - a.step_s;
  std::vector<CategoryDelta> deltas;
  for (auto& [name, d] : by_name) {
    d.category = name;
    d.delta_s = d.b_s - d.a_s;
    d.share_of_delta =
        step_delta == 0 ? std::numeric_limits<double>::quiet_NaN() : d.delta_s / step_delta;
    deltas.push_back(d);
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const CategoryDelta& x, const CategoryDelta& y) {
                     return std::fabs(x.delta_s) > std::fabs(y.delta_s);
                   });
  return deltas;
}

}  // namespace plumb::analysis
