// Renders a report Page into one HTML document (see page.h). The embedding script gives each
// chart's container data-rendered="1" once vega-embed has drawn it and data-marks with the
// number of data items drawn at finite positions, or data-error with the message; page-level
// JavaScript errors are collected in body[data-errors]. The browser test
// (tests/test_report_browser.cpp) reads both from the DOM Chromium dumps.
#include "plumb/report/page.h"

#include <sstream>

#include <fmt/format.h>

#include "plumb/report/chart_library.h"

namespace plumb::report {
namespace {

constexpr const char* kStyle = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
header{padding:18px 28px;background:#f6f8fa;border-bottom:1px solid #d0d7de}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;color:#57606a}
nav{padding:8px 28px;border-bottom:1px solid #d0d7de;font-size:14px}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
main{padding:0 28px 28px;max-width:1400px}
section{border-bottom:1px solid #eaeef2;padding:6px 0 18px}
h2{font-size:19px;margin:20px 0 6px} h3{font-size:15px;margin:16px 0 4px}
.intro{color:#424a53;max-width:900px}
.chart{margin:8px 0 2px;overflow-x:auto}
.how{color:#57606a;font-size:13px;margin:0 0 14px;max-width:900px}
.how b{color:#424a53}
table{border-collapse:collapse;font-size:13px;margin:6px 0 4px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#57606a;font-size:12px;margin:0 0 12px;max-width:900px}
footer{padding:12px 28px;color:#57606a;font-size:12px}
)CSS";

// Draws every chart from its JSON spec. Errors are written into the DOM rather than only to
// the console, so a test (or a reader) can see that a chart failed and why.
constexpr const char* kEmbedScript = R"JS(
(function () {
  var errors = [];
  function record(message) {
    errors.push(String(message));
    document.body.setAttribute('data-errors', JSON.stringify(errors));
  }
  window.addEventListener('error', function (e) { record(e.message || e); });
  window.addEventListener('unhandledrejection', function (e) { record(e.reason); });
  var originalError = console.error;
  console.error = function () {
    record(Array.prototype.join.call(arguments, ' '));
    originalError.apply(console, arguments);
  };
  document.body.setAttribute('data-errors', '[]');
  var charts = document.querySelectorAll('div.chart[data-spec]');
  var pending = charts.length;
  function done() { if (--pending === 0) document.body.setAttribute('data-charts-done', '1'); }
  if (pending === 0) document.body.setAttribute('data-charts-done', '1');
  charts.forEach(function (el) {
    var spec = JSON.parse(document.getElementById(el.getAttribute('data-spec')).textContent);
    vegaEmbed(el, spec, { actions: false, renderer: 'svg' })
      .then(function () {
        // Data marks drawn with finite geometry: a chart whose every item ended up at NaN
        // (e.g. zero on a log scale) renders an empty frame without raising an error.
        var items = el.querySelectorAll('g.role-mark path, g.role-mark line, g.role-mark rect, g.role-mark text');
        var drawn = 0;
        items.forEach(function (item) {
          var geometry = (item.getAttribute('d') || '') + (item.getAttribute('transform') || '');
          if (geometry.indexOf('NaN') < 0) drawn++;
        });
        el.setAttribute('data-marks', String(drawn));
        el.setAttribute('data-rendered', '1');
        done();
      })
      .catch(function (err) { el.setAttribute('data-error', String(err)); record(err); done(); });
  });
})();
)JS";

std::string render_table(const Table& t) {
  std::ostringstream out;
  if (!t.title.empty()) out << "<h3>" << escape_html(t.title) << "</h3>\n";
  out << "<table class=\"sortable\"><thead><tr>";
  for (const auto& c : t.columns) out << "<th>" << escape_html(c) << "</th>";
  out << "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (const auto& cell : row) {
      if (cell.sort)
        out << fmt::format("<td class=\"num\" data-sort=\"{}\">", *cell.sort);
      else
        out << "<td>";
      out << escape_html(cell.text) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody></table>\n";
  if (!t.note.empty()) out << "<p class=\"note\">" << escape_html(t.note) << "</p>\n";
  return out.str();
}

}  // namespace

Cell number_cell(double value, const std::string& text) {
  return Cell{text, value};
}

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_json(const nlohmann::ordered_json& value) {
  // dump() keeps UTF-8 as is; escape what could end the <script> element or open markup,
  // and U+2028/U+2029, which older JavaScript engines treat as line ends inside strings.
  const std::string text =
      value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const Page& page) {
  const auto& lib = chart_library();
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>" << escape_html(page.title) << "</title>\n<style>" << kStyle << lib.sortable_css
      << "</style>\n"
      << "<script>" << lib.vega << "</script>\n<script>" << lib.vega_lite << "</script>\n"
      << "<script>" << lib.vega_embed << "</script>\n<script>" << lib.sortable_js
      << "</script>\n</head>\n<body>\n<header><h1>" << escape_html(page.title) << "</h1><p>"
      << escape_html(page.subtitle) << "</p></header>\n<nav>";
  for (const auto& s : page.sections)
    out << "<a href=\"#" << escape_html(s.id) << "\">" << escape_html(s.title) << "</a>";
  out << "</nav>\n<main>\n";
  int chart_number = 0;
  for (const auto& s : page.sections) {
    out << "<section id=\"" << escape_html(s.id) << "\"><h2>" << escape_html(s.title) << "</h2>\n";
    if (!s.intro.empty()) out << "<p class=\"intro\">" << escape_html(s.intro) << "</p>\n";
    for (const auto& block : s.blocks) {
      if (const auto* c = std::get_if<Chart>(&block)) {
        ++chart_number;
        const std::string id = fmt::format("chart-{}", chart_number);
        out << "<h3>" << escape_html(c->title) << "</h3>\n<div class=\"chart\" id=\"" << id
            << "\" data-spec=\"" << id << "-spec\"></div>\n<script type=\"application/json\" id=\""
            << id << "-spec\">" << script_json(c->spec) << "</script>\n<p class=\"how\"><b>How to "
            << "read this:</b> " << escape_html(c->how_to_read) << "</p>\n";
      } else if (const auto* t = std::get_if<Table>(&block)) {
        out << render_table(*t);
      } else if (const auto* p = std::get_if<Paragraph>(&block)) {
        out << "<p>" << escape_html(p->text) << "</p>\n";
      }
    }
    out << "</section>\n";
  }
  out << "</main>\n<footer>" << escape_html(page.footer) << " Charts: " << escape_html(lib.versions)
      << ".</footer>\n<script>" << kEmbedScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace plumb::report
