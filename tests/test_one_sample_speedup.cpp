// A speedup whose runs had one step-time sample each (a quick pass on a slow machine): its ratio
// is known and shown, its interval is "interval unknown", and no text, card, page or JSON a user
// reads says "nan" (report cards and characterize's summary said "bf16 nanx"). Comparisons
// stored before the ratio was kept (NULL, beside two known throughputs) read it back derived.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "cli_fixture.h"
#include "plumb/analysis/run_comparison.h"
#include "plumb/analysis/workload_findings.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/jobs/precision_measure.h"
#include "plumb/report/page.h"
#include "plumb/report/report.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/record_json.h"
#include "report_fixture.h"

namespace plumb::testing {
namespace {

using analysis::SideSamples;

// "nan" as a number or a word ("nanx", "nan%", "-nan", "(nan)"), in any case; not inside a
// word ("nanoseconds", "finance", "NaNs" as prose).
bool says_nan(const std::string& text) {
  static const std::regex nan("(^|[^A-Za-z])nan(x|[^A-Za-z]|$)", std::regex::icase);
  return std::regex_search(text, nan);
}

// The page without its scripts and styles: the Vega bundle's code says NaN; the text does not.
// By hand: std::regex recurses per character and overflows the stack on a page this size.
std::string page_text(const std::string& html) {
  std::string out;
  size_t at = 0;
  while (at < html.size()) {
    const size_t script = html.find("<script", at), style = html.find("<style", at);
    const size_t open = std::min(script, style);
    out += html.substr(at, open == std::string::npos ? std::string::npos : open - at);
    if (open == std::string::npos) break;
    const std::string close = open == script ? "</script>" : "</style>";
    const size_t end = html.find(close, open);
    at = end == std::string::npos ? html.size() : end + close.size();
  }
  return out;
}

TEST(OneSampleSpeedup, SaysNanFindsNumbersNotWords) {
  for (const char* bad : {"bf16 nanx", "nan%", "-nan", "(nan)", "NaN", "1.5x..nan"})
    EXPECT_TRUE(says_nan(bad)) << bad;
  for (const char* fine : {"nanoseconds", "finance", "banana", "NaNs", "2.50x"})
    EXPECT_FALSE(says_nan(fine)) << fine;
}

TEST(OneSampleSpeedup, RatioIsKnownWithoutAnInterval) {
  // fp32: 8 images in 25 ms (320/s); bf16: 8 in 10 ms (800/s): 2.5x, one sample per side.
  const SideSamples fp32{{{0.025}}, {8.0}, {}};
  const SideSamples bf16{{{0.010}}, {8.0}, {}};
  const auto c = analysis::compare_throughput(fp32, bf16, {});
  EXPECT_DOUBLE_EQ(c.throughput_a, 320.0);
  EXPECT_DOUBLE_EQ(c.throughput_b, 800.0);
  EXPECT_DOUBLE_EQ(c.ratio, 2.5);
  EXPECT_TRUE(std::isnan(c.ci_low) && std::isnan(c.ci_high));
  EXPECT_EQ(c.verdict, analysis::Verdict::kNotComparable);
  EXPECT_NE(c.reason.find("at least 2 are needed for an interval"), std::string::npos) << c.reason;
  // One side of one sample is enough to lose the interval, not the ratio.
  const auto half = analysis::compare_throughput({{{0.025, 0.025}}, {8.0}, {}}, bf16, {});
  EXPECT_DOUBLE_EQ(half.ratio, 2.5);
  EXPECT_TRUE(std::isnan(half.ci_low));
  EXPECT_NE(half.reason.find("side B"), std::string::npos) << half.reason;
  // No sample at all: nothing is known.
  const SideSamples no_sample{std::vector<std::vector<double>>(1), {8.0}, {}};
  EXPECT_TRUE(std::isnan(analysis::compare_throughput(no_sample, bf16, {}).ratio));

  const RatioInterval speed = analysis::ratio_interval(c);
  EXPECT_TRUE(speed.ratio_known());
  EXPECT_FALSE(speed.interval_known());
  EXPECT_EQ(ratio_text(speed), "2.50x");
  EXPECT_EQ(interval_text(speed), "unknown");
  EXPECT_EQ(ratio_with_interval_text(speed), "2.50x (interval unknown)");
  const auto j = ratio_json(speed);
  EXPECT_DOUBLE_EQ(j.at("ratio").get<double>(), 2.5);
  EXPECT_TRUE(j.at("ci_low").is_null());
  EXPECT_TRUE(j.at("ci_high").is_null());
  EXPECT_EQ(j.at("reason"), "interval unknown: fewer than 2 step-time samples on a side");
  for (const std::string& text :
       {ratio_text(speed), interval_text(speed), ratio_with_interval_text(speed), j.dump()})
    EXPECT_FALSE(says_nan(text)) << text;
}

TEST(OneSampleSpeedup, KnownAndUnmeasuredRatiosReadTheirOwnWay) {
  const RatioInterval known{2.5, 2.4, 2.6};
  EXPECT_EQ(ratio_with_interval_text(known), "2.50x [2.40, 2.60]");
  EXPECT_EQ(interval_text(known), "2.40..2.60");
  EXPECT_EQ(ratio_json(known).at("reason"), "");
  EXPECT_DOUBLE_EQ(ratio_json(known).at("ci_high").get<double>(), 2.6);
  const RatioInterval none{};
  EXPECT_EQ(ratio_text(none), "not measured");
  EXPECT_EQ(interval_text(none), "-");
  EXPECT_EQ(ratio_with_interval_text(none), "not measured");
  EXPECT_TRUE(ratio_json(none).at("ratio").is_null());
  EXPECT_EQ(ratio_json(none).at("reason").get<std::string>().rfind("not measured", 0), 0u);
  // Bounds without their ratio are not shown.
  EXPECT_TRUE(ratio_json({std::nan(""), 1, 2}).at("ci_low").is_null());
}

// A run of one step-time sample, as a quick pass on a slow machine stores it.
run::RunResult one_sample_run(double step_s, double units) {
  run::RunResult r = report_run(step_s, units, "images/s");
  r.samples_s = {step_s};
  r.step_time = run::summarize(r.samples_s);
  r.throughput = units / step_s;
  r.target_met = false;
  return r;
}

run::RunOptions infer_options(const std::string& workload, Dtype dtype, int64_t batch = 8) {
  run::RunOptions o = report_options(workload, Mode::kInfer, batch, 2);
  o.dtype = dtype;
  return o;
}

// fp32, bf16 and int8 inference of `workload`, one sample each (25, 10 and 8 ms for 8 images):
// bf16's comparison stored as plumb precision stores it now, int8's as it did before (every
// speed field NULL). Returns the fp32 run's id.
int64_t store_one_sample_precisions(store::ResultsStore& db, const std::string& workload,
                                    const std::string& tag) {
  const auto env = report_environment();
  const int64_t fp32_id =
      db.save_run(infer_options(workload, Dtype::kFp32), one_sample_run(0.025, 8), env, tag);
  const auto fp32 = *db.load_run(fp32_id, /*with_samples=*/true);
  run::OutputError error;
  error.relative_l2 = 4e-3;
  error.max_abs = 4e-2;
  error.cosine = 1 - 8e-6;
  error.agreement = 1;
  error.agreement_kind = "top1";
  error.elements = 8000;
  error.examples = 8;
  const auto bf16 = *db.load_run(
      db.save_run(infer_options(workload, Dtype::kBf16), one_sample_run(0.010, 8), env, tag), true);
  jobs::save_precision_comparison(db, bf16, fp32, jobs::speed_against(fp32, bf16), true, error, "");
  store::PrecisionComparisonRecord old;
  old.run_id =
      db.save_run(infer_options(workload, Dtype::kInt8), one_sample_run(0.008, 8), env, tag);
  old.reference_run_id = fp32_id;
  old.speedup = old.speedup_low = old.speedup_high = std::nan("");
  old.error_measured = true;
  old.error = error;
  old.error.relative_l2 = 2e-2;
  db.save_precision_comparison(old);
  return fp32_id;
}

class OneSampleSpeedupOutputs : public Cli {};

TEST_F(OneSampleSpeedupOutputs, ReportCardPageAndExportShowTheRatio) {
  {
    auto store = store::ResultsStore::open(db());
    store_one_sample_precisions(*store, "cnn", "");
    const auto stored = store->load_precision_comparisons();
    ASSERT_EQ(stored.size(), 2u);
    EXPECT_DOUBLE_EQ(stored[0].speedup, 2.5);
    EXPECT_TRUE(std::isnan(stored[0].speedup_low));
    EXPECT_DOUBLE_EQ(stored[1].speedup, 0.025 / 0.008);  // derived from the two throughputs
    EXPECT_TRUE(std::isnan(stored[1].speedup_low));
    EXPECT_EQ(analysis::precision_gain_text(stored[0]),
              "bf16 2.50x (interval unknown; error 4.0e-03)");
    std::ostringstream exported;
    store::export_json(*store, exported);
    EXPECT_FALSE(says_nan(exported.str()));
    const auto doc = nlohmann::json::parse(exported.str());
    for (const auto& c : doc.at("precision_comparisons")) {
      const auto& s = c.at("speedup_vs_fp32");
      EXPECT_GT(s.at("ratio").get<double>(), 2) << c;
      EXPECT_TRUE(s.at("ci_low").is_null()) << c;
      EXPECT_EQ(s.at("reason").get<std::string>().rfind("interval unknown", 0), 0u) << c;
    }
  }
  report::ReportRequest request;
  request.db = db();
  request.generated_at = "2026-01-01 00:00 UTC";
  const auto page = report::build_report(request);
  const auto* grid = std::get_if<report::CardGrid>(&page.sections.front().blocks.front());
  ASSERT_NE(grid, nullptr);
  ASSERT_EQ(grid->cards.size(), 1u);
  std::string gains;
  for (const auto& f : grid->cards[0].fields)
    if (f.label.rfind("Inference speed per precision", 0) == 0) gains = f.text;
  EXPECT_EQ(gains,
            "bf16 2.50x (interval unknown; error 4.0e-03), int8 3.12x (interval unknown; error "
            "2.0e-02)");
  const std::string text = page_text(report::render_html(page));
  EXPECT_FALSE(says_nan(text)) << text.substr(0, 2000);
  EXPECT_NE(text.find("2.5</td>"), std::string::npos);  // the precision table's ratio
  EXPECT_NE(text.find("<td>unknown</td>"), std::string::npos);
}

TEST_F(OneSampleSpeedupOutputs, CharacterizeSummaryShowsTheRatio) {
  // Every item of `characterize autoenc --quick --dtypes bf16` stored under its tag, so the
  // command measures nothing and prints its summary from the store.
  const std::string tag = "characterize:quick";
  {
    auto store = store::ResultsStore::open(db());
    const auto env = report_environment();
    store->save_run(report_options("autoenc", Mode::kTrain, 8, 2), one_sample_run(0.05, 8), env,
                    tag);
    store_one_sample_precisions(*store, "autoenc", tag);
    for (Mode mode : {Mode::kTrain, Mode::kInfer})
      store->save_profile(report_options("autoenc", mode, 8, 2),
                          report_profile("mlp", mode, 2, 0.5), env, tag, tag);
    store->save_memory_profile(report_options("autoenc", Mode::kTrain, 8, 2), report_memory(8), env,
                               tag, tag);
  }
  const std::string args =
      "characterize autoenc --quick --dtypes bf16,int8 --threads 2 --db " + db();
  const auto text = plumb(args);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.err.find("0 to measure"), std::string::npos) << text.err;
  EXPECT_NE(text.out.find("bf16 2.50x (interval unknown; error 4.0e-03), int8 3.12x (interval "
                          "unknown; error 2.0e-02)"),
            std::string::npos)
      << text.out;
  EXPECT_FALSE(says_nan(text.out)) << text.out;

  const auto json = plumb(args + " --json");
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_FALSE(says_nan(json.out)) << json.out;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& precisions = doc.at("workloads").at(0).at("precisions");
  ASSERT_EQ(precisions.size(), 2u);
  EXPECT_DOUBLE_EQ(precisions[0].at("speedup").get<double>(), 2.5);
  EXPECT_TRUE(precisions[0].at("ci_low").is_null());
  EXPECT_EQ(precisions[1].at("speedup_reason"),
            "interval unknown: fewer than 2 step-time samples on a side");
}

TEST_F(OneSampleSpeedupOutputs, PrecisionTextAndJsonShowTheRatio) {
  // --max-iters 1: one step-time sample per precision, as a slow machine's budget leaves.
  const std::string args =
      "precision autoenc --batch 8 --set hidden=16 --set latent=4 --threads 1 --max-iters 1 "
      "--max-warmup-time 0.5 --dtypes bf16 --db " +
      db();
  const auto text = plumb(args);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_FALSE(says_nan(text.out)) << text.out;
  EXPECT_FALSE(says_nan(text.err)) << text.err;
  EXPECT_NE(text.out.find(" unknown "), std::string::npos) << text.out;  // the interval column

  const auto json = plumb(args + " --json");
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_FALSE(says_nan(json.out)) << json.out;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& bf16 = doc.at("precisions").at(1);
  ASSERT_EQ(bf16.at("dtype"), "bf16");
  const auto& speed = bf16.at("speedup_vs_fp32");
  EXPECT_GT(speed.at("ratio").get<double>(), 0) << speed;
  EXPECT_TRUE(speed.at("ci_low").is_null()) << speed;
  EXPECT_EQ(speed.at("reason").get<std::string>().rfind("interval unknown", 0), 0u) << speed;
}

}  // namespace
}  // namespace plumb::testing
