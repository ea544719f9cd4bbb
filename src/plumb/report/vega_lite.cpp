// Vega-Lite spec helpers (see vega_lite.h).
#include "plumb/report/vega_lite.h"

#include <cmath>

#include <fmt/format.h>

namespace plumb::report::vl {

json spec(json values, int width, int height) {
  json s;
  s["$schema"] = "https://vega.github.io/schema/vega-lite/v5.json";
  s["width"] = width;
  s["height"] = height;
  s["data"] = {{"values", std::move(values)}};
  s["config"] = {{"axis", {{"labelFontSize", 11}, {"titleFontSize", 12}}},
                 {"legend", {{"labelFontSize", 11}, {"titleFontSize", 12}}}};
  return s;
}

json faceted(json values, const std::string& facet_field, json panel, int columns) {
  json s = spec(std::move(values));
  s.erase("width");
  s.erase("height");
  s["facet"] = field(facet_field, "nominal", "");
  s["columns"] = columns;
  s["spec"] = std::move(panel);
  return s;
}

json field(const std::string& name, const std::string& type, const std::string& title) {
  return {{"field", name}, {"type", type}, {"title", title}};
}

json log_field(const std::string& name, const std::string& title) {
  json f = field(name, "quantitative", title);
  f["scale"] = {{"type", "log"}};
  return f;
}

json tip(const std::string& name, const std::string& title, const std::string& format) {
  json t = {{"field", name}, {"title", title}};
  if (!format.empty()) {
    t["type"] = "quantitative";
    t["format"] = format;
  }
  return t;
}

std::string number_text(double value, int significant) {
  if (!std::isfinite(value)) return "-";
  return fmt::format("{:.{}g}", value, significant);
}

}  // namespace plumb::report::vl
