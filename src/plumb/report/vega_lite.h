// Small builders for the Vega-Lite specs the report draws: the common frame (schema, inline
// data, size, fonts), typed encodings with axis titles that carry units, and number text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace plumb::report::vl {

using json = nlohmann::ordered_json;

// A single-view spec with `values` inline. Width/height in pixels ("container" not used:
// the report must look the same in a screenshot as on screen).
json spec(json values, int width = 640, int height = 320);

// Small multiples: one panel per value of `facet_field`, `columns` panels a row, each drawn
// by `panel` (a unit spec: width, height, mark, encoding) over `values`.
json faceted(json values, const std::string& facet_field, json panel, int columns = 3);

// {"field": name, "type": type, "title": title} plus, for quantitative fields, log scale.
json field(const std::string& name, const std::string& type, const std::string& title);
json log_field(const std::string& name, const std::string& title);

// Tooltip entry for a field, formatted for numbers when `format` is given (d3-format).
json tip(const std::string& name, const std::string& title, const std::string& format = "");

// "12.3", "0.0123", "1.23e+06": compact text for tables.
std::string number_text(double value, int significant = 3);

}  // namespace plumb::report::vl
