// Renders a report Page into one HTML document (see page.h). The embedding script gives each
// chart's container data-rendered="1" once vega-embed has drawn it and data-marks with the
// number of data items drawn at finite positions, or data-error with the message; page-level
// JavaScript errors are collected in body[data-errors], and each workload card's box on the page
// in its data-box. The browser tests (tests/test_report.cpp) read them from the DOM Chromium
// dumps.
#include "plumb/report/page.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "plumb/core/json_text.h"
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
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(430px,1fr));gap:12px;margin:10px 0 6px}
.card{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px 10px;background:#fff}
.card h3{margin:4px 0 0} .card .sub{color:#57606a;font-size:12px;margin:2px 0 6px}
.card .finding{font-size:14px;margin:4px 0;line-height:1.35}
.card dl{margin:6px 0 0;font-size:13px} .card dt{color:#57606a;font-size:12px;margin-top:6px}
.card dd{margin:1px 0 0} .card dd.missing{color:#9a6700;font-style:italic}
.bar{display:flex;height:10px;border-radius:2px;overflow:hidden;margin:2px 0;background:#eaeef2}
.bar span{display:block;height:100%}
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
  // Where each workload card landed on the page (x,y,width,height in CSS pixels), so that a
  // screenshot can be checked against the layout.
  document.querySelectorAll('article.card').forEach(function (el) {
    var r = el.getBoundingClientRect();
    el.setAttribute('data-box', [r.left + window.scrollX, r.top + window.scrollY, r.width,
                                 r.height].map(Math.round).join(','));
  });
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

// Colours of bar parts (Tableau 20), by kind and name, so a category looks the same on every
// card.
constexpr const char* kPartColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                        "#a0cbe8", "#ffbe7d", "#8cd17d", "#ff9d9a", "#86bcb6",
                                        "#f1ce63", "#d4a6c8", "#fabfd2", "#d7b5a6", "#79706e"};

std::string render_cards(const CardGrid& grid) {
  // Every part name of each kind of bar in the grid, alphabetically, then a colour each.
  std::map<std::pair<std::string, std::string>, size_t> colour_of;
  for (const auto& card : grid.cards)
    for (const auto& field : card.fields)
      if (field.bar)
        for (const auto& part : field.bar->parts) colour_of[{field.bar->kind, part.first}] = 0;
  std::map<std::string, size_t> used;  // per kind
  for (auto& [key, colour] : colour_of)
    colour = std::min(used[key.first]++, std::size(kPartColours) - 1);
  std::ostringstream out;
  out << "<div class=\"cards\">\n";
  for (const auto& card : grid.cards) {
    bool complete = true;
    for (const auto& field : card.fields) complete = complete && !field.missing;
    out << "<article class=\"card\" id=\"" << escape_html(card.id) << "\" data-complete=\""
        << (complete ? 1 : 0) << "\"><h3>" << escape_html(card.title) << "</h3>";
    if (!card.subtitle.empty()) out << "<p class=\"sub\">" << escape_html(card.subtitle) << "</p>";
    for (const auto& finding : card.findings)
      out << "<p class=\"finding\">" << escape_html(finding) << "</p>";
    out << "<dl>";
    for (const auto& field : card.fields) {
      out << "<dt>" << escape_html(field.label) << "</dt><dd"
          << (field.missing ? " class=\"missing\"" : "") << ">";
      if (field.bar) {
        out << "<div class=\"bar\">";
        for (const auto& [name, share] : field.bar->parts)
          out << fmt::format(
              "<span style=\"width:{:.2f}%;background:{}\" title=\"{} {:.0f}%\"></span>",
              std::clamp(share, 0.0, 1.0) * 100, kPartColours[colour_of[{field.bar->kind, name}]],
              escape_html(name), share * 100);
        out << "</div>";
      }
      out << escape_html(field.text) << "</dd>";
    }
    out << "</dl></article>\n";
  }
  out << "</div>\n";
  if (!grid.how_to_read.empty())
    out << "<p class=\"how\"><b>How to read this:</b> " << escape_html(grid.how_to_read)
        << "</p>\n";
  return out.str();
}

}  // namespace

Cell number_cell(double value, const std::string& text) {
  // A value that is no number (NaN: not measured) sorts as text rather than print "nan".
  return std::isfinite(value) ? Cell{text, value} : Cell{text};
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
  // json_text keeps UTF-8 as is; escape what could end the <script> element or open markup,
  // and U+2028/U+2029, which older JavaScript engines treat as line ends inside strings.
  const std::string text = json_text(value);
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
      } else if (const auto* g = std::get_if<CardGrid>(&block)) {
        out << render_cards(*g);
      }
    }
    out << "</section>\n";
  }
  out << "</main>\n<footer>" << escape_html(page.footer) << " Charts: " << escape_html(lib.versions)
      << ".</footer>\n<script>" << kEmbedScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace plumb::report
