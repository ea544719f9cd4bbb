// The chart and table libraries (Vega, Vega-Lite, vega-embed, sortable-tablesort: npm,
// web/package.json) compiled into
// plumb, so that every report it writes carries them inline and opens without a network.
#pragma once

#include <string_view>

namespace plumb::report {

struct ChartLibrary {
  std::string_view vega;          // vega.min.js
  std::string_view vega_lite;     // vega-lite.min.js
  std::string_view vega_embed;    // vega-embed.min.js
  std::string_view sortable_js;   // sortable-tablesort: click a table header to sort
  std::string_view sortable_css;  // its header arrows
  std::string_view versions;      // "vega 5.33.1, vega-lite 5.23.0, ..."
};

const ChartLibrary& chart_library();

}  // namespace plumb::report
