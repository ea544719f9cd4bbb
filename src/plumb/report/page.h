// The report as a page of sections, each a list of charts (Vega-Lite specs), sortable tables
// and paragraphs, and its rendering into ONE self-contained HTML file: the chart libraries
// are inlined (chart_library.h), every user-supplied string is escaped, and each chart
// records in the DOM whether it rendered, so a headless browser can check the page.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace plumb::report {

struct Chart {
  std::string title;
  std::string how_to_read;      // one line under the chart: what to look for
  nlohmann::ordered_json spec;  // a Vega-Lite spec with its data inline
};

struct Cell {
  Cell(std::string text_, std::optional<double> sort_ = std::nullopt)  // NOLINT: implicit
      : text(std::move(text_)), sort(sort_) {}
  std::string text;
  std::optional<double> sort;  // numeric sort key (the text is formatted for reading)
};
Cell number_cell(double value, const std::string& text);

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::string note;  // under the table, e.g. what a column means
};

struct Paragraph {
  std::string text;
};

// A workload's card on the report's front page: a title, the findings that explain it (one
// sentence each), and labelled fields, some with a bar of shares (time by operator category,
// memory by what the bytes are). A field the database cannot fill says what to run instead.
struct ShareBar {
  std::string kind;  // bars of one kind ("time", "memory") share one colour per part name
  std::vector<std::pair<std::string, double>> parts;  // name, share of the whole (sum <= 1)
};
struct CardField {
  std::string label;
  std::string text;
  std::optional<ShareBar> bar;
  bool missing = false;  // not measured: `text` names the command that measures it
};
struct Card {
  std::string id;  // anchor, [a-z0-9-]
  std::string title;
  std::string subtitle;
  std::vector<std::string> findings;
  std::vector<CardField> fields;
};
// Cards side by side. A bar part's colour follows its kind and name, the same on every card.
struct CardGrid {
  std::vector<Card> cards;
  std::string how_to_read;
};

using Block = std::variant<Chart, Table, Paragraph, CardGrid>;

struct Section {
  std::string id;  // anchor, [a-z0-9-]
  std::string title;
  std::string intro;
  std::vector<Block> blocks;
};

struct Page {
  std::string title;
  std::string subtitle;  // e.g. the database and when the report was written
  std::vector<Section> sections;
  std::string footer;
};

// Text for HTML element content and attribute values: & < > " ' escaped.
std::string escape_html(std::string_view text);
// JSON that is safe inside a <script> element: <, >, & and the JS line separators escaped
// as \u sequences, so no string in it can close the element or start markup.
std::string script_json(const nlohmann::ordered_json& value);

// The whole document. Charts are numbered in page order (ids chart-1, chart-2, ...).
std::string render_html(const Page& page);

}  // namespace plumb::report
