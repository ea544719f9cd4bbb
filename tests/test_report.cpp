// The HTML report: golden Vega-Lite specs from a fixed database, which sections appear,
// escaping of user-supplied strings, the front page's workload cards, and the page rendered by
// headless Chromium offline (every chart drawn with data marks, no JavaScript errors, a
// screenshot of the whole page, and one of the front page checked pixel by pixel).
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "cli_fixture.h"
#include "plumb/core/atomic_file.h"
#include "plumb/report/page.h"
#include "plumb/report/report.h"
#include "report_fixture.h"

namespace plumb {
namespace {

using testing::Cli;
using testing::slurp;
namespace fs = std::filesystem;

const char* kHostileTag =
    "</script><script>document.body.dataset.pwned='1'</script>"
    "<img src=x onerror=\"document.body.dataset.pwned='1'\">";

// The fixture's report; with `compare`, against a second database 10% slower in every step.
report::Page fixture_page(const fs::path& dir, const std::string& tag = "fixture-b",
                          bool compare = false) {
  const std::string db = (dir / "fixture.db").string();
  testing::write_report_fixture(db, tag);
  report::ReportRequest request;
  request.db = db;
  if (compare) {
    request.compare_db = (dir / "slower.db").string();
    testing::write_report_fixture(request.compare_db, tag, 1.1);
  }
  request.generated_at = "2026-01-01 00:00 UTC";
  return report::build_report(request);
}

std::vector<const report::Chart*> charts_of(const report::Page& page) {
  std::vector<const report::Chart*> out;
  for (const auto& s : page.sections)
    for (const auto& b : s.blocks)
      if (const auto* c = std::get_if<report::Chart>(&b)) out.push_back(c);
  return out;
}

// Equal JSON, numbers within a relative 1e-9: the regression behind the sensitivity chart goes
// through LibTorch's least squares, whose last digits depend on the BLAS's threading.
bool json_near(const nlohmann::json& a, const nlohmann::json& b, const std::string& path,
               std::string& where) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y))) return true;
  } else if (a.type() == b.type() && a.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_near(a[i], b[i], path + "/" + std::to_string(i), where)) return false;
    return true;
  } else if (a.type() == b.type() && a.is_object() && a.size() == b.size()) {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !json_near(*it, b[it.key()], path + "/" + it.key(), where))
        return false;
    return true;
  } else if (a == b) {
    return true;
  }
  where = path.empty() ? "/" : path;
  return false;
}

class Report : public Cli {};

TEST_F(Report, SpecsMatchGoldenFiles) {
  const auto page = fixture_page(dir_);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto* c : charts_of(page)) all.push_back({{"title", c->title}, {"spec", c->spec}});
  const std::string actual = all.dump(1) + "\n";
  const fs::path golden = fs::path(__FILE__).parent_path() / "golden" / "report_specs.json";
  if (std::getenv("PLUMB_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << actual;
    GTEST_SKIP() << "wrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: run with PLUMB_UPDATE_GOLDEN=1";
  std::string where;
  if (!json_near(nlohmann::json::parse(actual), nlohmann::json::parse(slurp(golden)), "", where)) {
    const fs::path written = fs::current_path() / "report_specs.actual.json";
    std::ofstream(written) << actual;
    ADD_FAILURE() << "the report's Vega-Lite specs differ from " << golden << " at " << where
                  << " (the new ones "
                  << "are in " << written << "); if the change is intended, regenerate with "
                  << "PLUMB_UPDATE_GOLDEN=1 ./build/tests/plumb_tests "
                     "--gtest_filter=Report.SpecsMatchGoldenFiles";
  }
}

TEST_F(Report, EverySectionWithDataAppears) {
  const auto page = fixture_page(dir_);
  std::vector<std::string> ids;
  for (const auto& s : page.sections) ids.push_back(s.id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"workloads", "across", "machine", "throughput", "precision",
                                      "time", "memory", "dist", "tune", "sweep-1"}));
  std::vector<std::string> titles;
  for (const auto* c : charts_of(page)) titles.push_back(c->title);
  for (const std::string expected :
       {"Peak compute per data type", "Bandwidth over the working set (2 threads)",
        "Step time per run", "Inference latency percentiles",
        "Where the step time goes, by operator category",
        "How few operator types dominate (cumulative operator time)",
        "Training vs inference, by operator category", "Thread scaling per operator category",
        "Roofline: cnn train (2 threads)", "Memory at the peak, by what the bytes are",
        "Workload similarity (train): dendrogram of operator-category time shares",
        "Memory vs batch size", "Speed of each precision against fp32",
        "Data-parallel throughput over workers", "Where a data-parallel step goes",
        "What each precision buys and costs", "Best configuration over stock",
        "What each change is worth"})
    EXPECT_NE(std::find(titles.begin(), titles.end(), expected), titles.end()) << expected;
  // The sweep: a heat map of each metric with the failed point as an empty cell.
  const auto heat = std::find_if(titles.begin(), titles.end(), [](const std::string& t) {
    return t.rfind("paradnn_fc: examples/s over batch and nodes", 0) == 0;
  });
  ASSERT_NE(heat, titles.end());
  const auto* chart = charts_of(page)[static_cast<size_t>(heat - titles.begin())];
  int empty = 0;
  for (const auto& v : chart->spec["data"]["values"]) empty += v["value"].is_null() ? 1 : 0;
  EXPECT_EQ(chart->spec["data"]["values"].size(), 9u);
  EXPECT_EQ(empty, 1);  // nodes=1024 batch=256 ran out of memory
  // The failed run is listed with its status, not drawn.
  const std::string html = report::render_html(page);
  EXPECT_NE(html.find("out_of_memory: out of memory at batch 4096"), std::string::npos);
}

const report::CardGrid& front_page_cards(const report::Page& page) {
  const auto* grid = page.sections.front().blocks.empty()
                         ? nullptr
                         : std::get_if<report::CardGrid>(&page.sections.front().blocks.front());
  if (grid == nullptr) throw std::runtime_error("the page does not open on workload cards");
  return *grid;
}

const report::CardField* field_of(const report::Card& card, const std::string& label_start) {
  for (const auto& f : card.fields)
    if (f.label.rfind(label_start, 0) == 0) return &f;
  return nullptr;
}

// The fixture's cnn training profile at 2 threads (report_fixture.h), worked by hand: the
// convolutions take 7.6 of 10.08 ms (75%) at 1.4 GFLOP / 7.6 ms = 184 GFLOP/s; 7 MB in 7.6 ms
// is 0.9 GB/s, so their data comes from DRAM (27 GB/s triad), where 200 FLOP/byte is far right of
// the ridge (200 GFLOP/s / 27 GB/s = 7.4): compute-bound at 184 / 200 = 92% of the fp32 roof.
// Every elementwise operator moves 8-20 GB/s at < 1 FLOP/byte: memory-bound, 2.0 of 10.08 ms.
TEST_F(Report, FrontPageCardExplainsEachWorkload) {
  const auto page = fixture_page(dir_);
  ASSERT_EQ(page.sections.front().id, "workloads");
  const auto& cards = front_page_cards(page).cards;
  std::vector<std::string> titles;
  for (const auto& c : cards) titles.push_back(c.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"mlp", "cnn", "rnn"}));  // as first measured

  const auto& cnn = cards[1];
  ASSERT_EQ(cnn.findings.size(), 2u);  // training, then inference
  EXPECT_EQ(cnn.findings[0],
            "Training: convolution takes 75% of the step, compute-bound at 92% of the fp32 "
            "roof; 20% of the step in memory-bound elementwise (whole step: 70% of the fp32 "
            "peak).");
  EXPECT_EQ(cnn.findings[1].rfind("Inference: convolution takes ", 0), 0u) << cnn.findings[1];
  EXPECT_NE(cnn.subtitle.find("train 90.9 images/s (batch 8, 2 threads)"), std::string::npos)
      << cnn.subtitle;
  const auto* time = field_of(cnn, "Where the train step's time goes");
  ASSERT_NE(time, nullptr);
  ASSERT_TRUE(time->bar.has_value());
  EXPECT_EQ(time->bar->parts.front().first, "convolution");
  EXPECT_NEAR(time->bar->parts.front().second, 7.6 / 10.08, 1e-6);
  const auto* ops = field_of(cnn, "Top operators");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->text.rfind("aten::mkldnn_convolution", 0), 0u) << ops->text;
  // Memory at the newest pass (batch 4): 48 of 180.5 MiB are feature maps.
  const auto* memory = field_of(cnn, "Memory at the train step's peak: 180 MiB (batch 4)");
  ASSERT_NE(memory, nullptr);
  EXPECT_FALSE(memory->missing);
  EXPECT_EQ(memory->text.rfind("feature_maps 27%, ", 0), 0u) << memory->text;
  const auto* precision = field_of(cnn, "Inference speed per precision");
  ASSERT_NE(precision, nullptr);
  EXPECT_EQ(precision->text,
            "bf16 2.50x (error 4.0e-03), int8 3.12x (error 2.0e-02), fp16 unsupported here");
  for (const auto& f : cnn.fields) EXPECT_FALSE(f.missing) << f.label;

  // mlp was never memory-profiled nor run in another precision: those fields say what to run.
  const auto* mlp_memory = field_of(cards[0], "Memory at the step's peak");
  ASSERT_NE(mlp_memory, nullptr);
  EXPECT_TRUE(mlp_memory->missing);
  EXPECT_EQ(mlp_memory->text.rfind("not measured: plumb memory mlp --db ", 0), 0u);
  EXPECT_EQ(cards[2].subtitle, "no fp32 timed run stored");  // rnn was only profiled
  const std::string html = report::render_html(page);
  EXPECT_NE(html.find("<article class=\"card\" id=\"card-cnn\" data-complete=\"1\">"),
            std::string::npos);
  EXPECT_NE(html.find("<article class=\"card\" id=\"card-mlp\" data-complete=\"0\">"),
            std::string::npos);
}

TEST_F(Report, ComparisonWithASlowerDatabase) {
  const auto page = fixture_page(dir_, "fixture-b", /*compare=*/true);
  const auto& last = page.sections.back();
  ASSERT_EQ(last.id, "comparison");
  // 14 run settings and the 4 data-parallel worlds, every one 10% slower in B.
  EXPECT_NE(
      last.intro.find("0 faster, 18 slower, 0 without a significant difference, 3 not comparable"),
      std::string::npos)
      << last.intro;
  std::vector<std::string> titles;
  for (const auto* c : charts_of(page)) titles.push_back(c->title);
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Throughput of B relative to A"), titles.end());
  const auto speedup = std::find_if(titles.begin(), titles.end(), [](const std::string& t) {
    return t.rfind("Speedup of ", 0) == 0;
  });
  ASSERT_NE(speedup, titles.end());
  EXPECT_NE(speedup->find("geometric mean 0.909"), std::string::npos) << *speedup;
  // One run per side: what the comparison could resolve is unknown, and the table says so.
  const std::string html = report::render_html(page);
  EXPECT_NE(html.find("detectable change (19 in 20)"), std::string::npos);
  EXPECT_NE(html.find("unknown (one run per side)"), std::string::npos);
}

TEST_F(Report, EmptyDatabaseSaysWhatToDo) {
  const std::string db = (dir_ / "empty.db").string();
  store::ResultsStore::open(db);
  report::ReportRequest request;
  request.db = db;
  const auto page = report::build_report(request);
  ASSERT_EQ(page.sections.size(), 1u);
  EXPECT_NE(page.sections[0].intro.find("plumb run"), std::string::npos);
}

TEST(ReportPage, EscapesTextAndScriptJson) {
  EXPECT_EQ(report::escape_html("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
  const std::string j = report::script_json({{"t", "</script><b>&\xE2\x80\xA8"}});
  EXPECT_EQ(j, "{\"t\":\"\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\u2028\"}");
}

TEST_F(Report, HostileStringsStayInert) {
  const std::string html = report::render_html(fixture_page(dir_, kHostileTag));
  EXPECT_EQ(html.find("<script>document.body"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=&quot;"), std::string::npos);  // the runs table
  EXPECT_NE(html.find("\\u003cimg src=x"), std::string::npos);              // a chart's data
}

// Chromium (Debian's `chromium`, installed by scripts/setup.sh) opens the report with every
// network request refused, lets its scripts run, and dumps the DOM the page ended with.
TEST_F(Report, ChromiumRendersEveryChartOffline) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null"), 0)
      << "chromium is not installed: scripts/setup.sh installs it (apt-get install chromium)";
  const auto page = fixture_page(dir_, kHostileTag, /*compare=*/true);
  const size_t charts = charts_of(page).size();
  ASSERT_GT(charts, 10u);
  const fs::path html = dir_ / "report.html";
  write_file_atomically(html.string(), report::render_html(page));
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
      "--user-data-dir=" +
      (dir_ / "chromium").string() +
      " --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' "
      "--virtual-time-budget=30000 ";
  const fs::path dom = dir_ / "dom.html";
  const std::string dump = "timeout 180 chromium " + flags + "--dump-dom file://" + html.string() +
                           " >" + dom.string() + " 2>" + (dir_ / "chromium.log").string();
  ASSERT_EQ(std::system(dump.c_str()), 0) << slurp(dir_ / "chromium.log");
  const std::string d = slurp(dom);
  EXPECT_NE(d.find("data-charts-done=\"1\""), std::string::npos) << "charts never finished";
  EXPECT_NE(d.find("data-errors=\"[]\""), std::string::npos)
      << "JavaScript errors: " << d.substr(d.find("data-errors"), 400);
  EXPECT_EQ(d.find("data-pwned"), std::string::npos) << "an injected script ran";
  // Every chart container: rendered, with data marks at finite positions.
  const std::regex container("<div class=\"chart[^\"]*\" id=\"(chart-[0-9]+)\"([^>]*)>");
  size_t rendered = 0;
  for (auto it = std::sregex_iterator(d.begin(), d.end(), container); it != std::sregex_iterator();
       ++it) {
    const std::string attributes = (*it)[2];
    std::smatch marks;
    ASSERT_TRUE(std::regex_search(attributes, marks, std::regex("data-marks=\"([0-9]+)\"")))
        << (*it)[1] << " was not drawn: " << attributes;
    EXPECT_GT(std::stoi(marks[1]), 0) << (*it)[1] << " has no data marks";
    EXPECT_NE(attributes.find("data-rendered=\"1\""), std::string::npos) << (*it)[1];
    ++rendered;
  }
  EXPECT_EQ(rendered, charts);
  // The screenshot a reader would see (kept next to the test binary for CI artifacts).
  const fs::path png = fs::current_path() / "report_screenshot.png";
  const std::string shot = "timeout 180 chromium " + flags +
                           "--window-size=1400,5000 --screenshot=" + png.string() + " file://" +
                           html.string() + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(shot.c_str()), 0);
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 50000u) << "the screenshot is nearly blank";
  fs::copy_file(html, fs::current_path() / "report_screenshot.html",
                fs::copy_options::overwrite_existing);
}

// An RGB image read with libpng.
struct Pixels {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
  // How many pixels of the rectangle (clipped to the image) have exactly this colour.
  int count(int x0, int y0, int w, int h, unsigned colour) const {
    int n = 0;
    for (int y = std::max(0, y0); y < std::min(height, y0 + h); ++y)
      for (int x = std::max(0, x0); x < std::min(width, x0 + w); ++x) {
        const unsigned char* p = &rgb[3 * (static_cast<size_t>(y) * width + x)];
        n += ((unsigned{p[0]} << 16) | (unsigned{p[1]} << 8) | p[2]) == colour ? 1 : 0;
      }
    return n;
  }
};

Pixels read_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, path.c_str()) == 0)
    throw std::runtime_error(std::string("cannot read ") + path.string() + ": " + image.message);
  image.format = PNG_FORMAT_RGB;
  Pixels p;
  p.width = static_cast<int>(image.width);
  p.height = static_cast<int>(image.height);
  p.rgb.resize(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, p.rgb.data(), 0, nullptr) == 0)
    throw std::runtime_error(std::string("cannot decode ") + path.string() + ": " + image.message);
  return p;
}

// The front page as a reader first sees it (a 1400 x 900 window): the workload cards are there,
// and each card inside the window is drawn with its bars in the proportions the page states.
// The cards' boxes come from the DOM Chromium dumps at the same window size (data-box, set by
// the page's script); the bars' colours and widths from each card's HTML.
TEST_F(Report, FrontPageScreenshotShowsTheCards) {
  ASSERT_EQ(std::system("command -v chromium >/dev/null"), 0)
      << "chromium is not installed: scripts/setup.sh installs it (apt-get install chromium)";
  const fs::path html = dir_ / "report.html";
  write_file_atomically(html.string(), report::render_html(fixture_page(dir_)));
  const std::string flags =
      "timeout 180 chromium --headless --no-sandbox --disable-gpu "
      "--hide-scrollbars --no-first-run --user-data-dir=" +
      (dir_ / "chromium").string() +
      " --proxy-server=127.0.0.1:9 --host-resolver-rules='MAP * ~NOTFOUND' "
      "--virtual-time-budget=30000 --window-size=1400,900 ";
  const fs::path dom = dir_ / "dom.html", png = fs::current_path() / "report_front_page.png";
  ASSERT_EQ(std::system((flags + "--dump-dom file://" + html.string() + " >" + dom.string() +
                         " 2>/dev/null")
                            .c_str()),
            0);
  ASSERT_EQ(std::system((flags + "--screenshot=" + png.string() + " file://" + html.string() +
                         " >/dev/null 2>&1")
                            .c_str()),
            0);
  const Pixels shot = read_png(png);
  ASSERT_EQ(shot.width, 1400);
  ASSERT_EQ(shot.height, 900);
  const std::string d = slurp(dom);
  const std::regex card_re(
      "<article class=\"card\" id=\"(card-[a-z]+)\" data-complete=\"[01]\" "
      "data-box=\"(-?[0-9]+),(-?[0-9]+),([0-9]+),([0-9]+)\">([\\s\\S]*?)</article>");
  const std::regex span_re("<span style=\"width:([0-9.]+)%;background:#([0-9a-f]{6})\"");
  int cards = 0, checked = 0;
  for (auto it = std::sregex_iterator(d.begin(), d.end(), card_re); it != std::sregex_iterator();
       ++it) {
    ++cards;
    const std::string id = (*it)[1];
    const int x = std::stoi((*it)[2]), y = std::stoi((*it)[3]);
    const int w = std::stoi((*it)[4]), h = std::stoi((*it)[5]);
    if (cards == 1) {
      EXPECT_LT(y, 450) << "the page does not open on the workload cards";
    }
    if (y + h > shot.height) continue;  // below the first screen
    ++checked;
    // Each bar spans the card's content width (card width less padding and border), 10 px tall.
    std::map<unsigned, double> expected;  // colour -> pixels its bar parts should cover
    const std::string body = (*it)[6];
    for (auto s = std::sregex_iterator(body.begin(), body.end(), span_re);
         s != std::sregex_iterator(); ++s)
      expected[std::stoul((*s)[2], nullptr, 16)] += std::stod((*s)[1]) / 100 * (w - 30) * 10;
    EXPECT_FALSE(expected.empty()) << id << " has no bars";
    for (const auto& [colour, pixels] : expected) {
      if (pixels < 200) continue;  // slivers: rounding decides
      EXPECT_GE(shot.count(x, y, w, h, colour), 0.7 * pixels)
          << id << ": colour " << std::hex << colour << " is not drawn as the bar says";
    }
    int ink = 0;  // text and rules: anything that is not the card's white
    for (int yy = y; yy < y + h; ++yy) ink += w - shot.count(x, yy, w, 1, 0xffffff);
    EXPECT_GT(ink, w * h / 20) << id << " looks empty";
  }
  EXPECT_EQ(cards, 3);
  EXPECT_GE(checked, 1) << "no card fits in the first screen";
}

TEST_F(Report, CliWritesTheFileAndRefusesBadInput) {
  testing::write_report_fixture(db());
  const std::string out = (dir_ / "r.html").string();
  testing::Result r = plumb("report --db " + db() + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, out + "\n");
  const std::string written = slurp(out);
  EXPECT_NE(written.find("vegaEmbed"), std::string::npos);
  // A bad database leaves the existing report as it was.
  std::ofstream(dir_ / "not.db") << "this is not a database";
  expect_usage_error("report --db " + (dir_ / "not.db").string() + " -o " + out,
                     "not an SQLite database");
  expect_usage_error("report --db " + (dir_ / "missing.db").string() + " -o " + out, "missing.db");
  EXPECT_EQ(slurp(out), written);
  expect_usage_error("report --db " + db() + " -o " + (dir_ / "no/such/dir/r.html").string(),
                     "cannot write");
}

// The throughput table keeps the newest run of each setting (its canonical key): runs that differ
// only in engine or heap are rows of their own, with labels of their own in the chart, and a
// second run of the same setting replaces the first.
TEST_F(Report, RunsThatDifferOnlyInEngineOrHeapAreRowsOfTheirOwn) {
  {
    auto store = store::ResultsStore::open(db());
    run::RunOptions o = testing::report_options("autoenc", Mode::kTrain, 8, 2);
    const auto result = testing::report_run(0.01, 8, "images/s");
    store->save_run(o, result, testing::report_environment());
    o.engine = Engine::kNative;
    store->save_run(o, result, testing::report_environment());
    o.engine = Engine::kOnednn;
    o.heap = HeapPolicy::kReturn;
    store->save_run(o, result, testing::report_environment());
    store->save_run(o, result, testing::report_environment());  // the same setting again
  }
  report::ReportRequest request;
  request.db = db();
  request.generated_at = "2026-01-01 00:00 UTC";
  const report::Page page = report::build_report(request);
  const report::Table* table = nullptr;
  const report::Chart* chart = nullptr;
  for (const auto& s : page.sections)
    if (s.id == "throughput")
      for (const auto& b : s.blocks) {
        if (const auto* t = std::get_if<report::Table>(&b)) table = t;
        if (const auto* c = std::get_if<report::Chart>(&b); c != nullptr && chart == nullptr)
          chart = c;
      }
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->rows.size(), 3u);
  std::set<std::string> ids;
  for (const auto& row : table->rows) ids.insert(row[0].text);
  EXPECT_EQ(ids, (std::set<std::string>{"1", "2", "4"}));
  ASSERT_NE(chart, nullptr);
  std::set<std::string> labels;
  for (const auto& v : chart->spec["data"]["values"]) labels.insert(v["run"].get<std::string>());
  EXPECT_EQ(labels.size(), 3u) << chart->spec["data"]["values"].dump();
}

}  // namespace
}  // namespace plumb
