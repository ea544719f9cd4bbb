// plumb compare --json: the comparison as one JSON document (docs/json.md, "plumb compare").
#include "plumb/analysis/comparison_inputs.h"
#include "plumb/core/json_number.h"

namespace plumb::analysis {
namespace {

using Json = nlohmann::ordered_json;

Json method_json(const ComparisonOptions& o, const std::vector<std::string>& ignored) {
  Json j;
  j["statistic"] = "throughput of B / throughput of A (> 1: B is faster)";
  j["interval"] =
      "percentile bootstrap; circular blocks within runs, runs resampled when a side has several";
  j["confidence"] = o.confidence;
  j["resamples"] = o.resamples;
  j["seed"] = o.seed;
  j["tolerance"] = o.tolerance;
  j["detect"] = o.detect;
  j["detection_power"] = kDetectionPower;
  j["ignored_fields"] = ignored;
  return j;
}

Json category_json(const CategoryDelta& d) {
  Json j;
  j["category"] = d.category;
  j["a_s"] = json_number(d.a_s);
  j["b_s"] = json_number(d.b_s);
  j["delta_s"] = json_number(d.delta_s);
  j["share_of_delta"] = json_number(d.share_of_delta);
  return j;
}

// One phase of generative runs compared (comparison_inputs.h): the rates of each side, their
// ratio with its interval, and the verdict.
Json phase_json(const ThroughputComparison& t, const char* unit) {
  return {{"unit", unit},
          {"a", json_number(t.throughput_a)},
          {"b", json_number(t.throughput_b)},
          {"ratio", json_number(t.ratio)},
          {"ci_low", json_number(t.ci_low)},
          {"ci_high", json_number(t.ci_high)},
          {"verdict", verdict_name(t.verdict)},
          {"reason", t.reason}};
}

Json row_json(const ComparisonRow& row) {
  const ThroughputComparison& t = row.throughput;
  Json j;
  j["workload"] = row.workload;
  j["mode"] = row.mode;
  j["setting"] = row.setting;
  j["key_differences"] = row.key_differences;
  j["precision_differs"] = row.precision_differs;
  j["runs_a"] = row.runs_a;
  j["runs_b"] = row.runs_b;
  j["throughput_unit"] = row.throughput_unit;
  j["throughput_a"] = json_number(t.throughput_a);
  j["throughput_b"] = json_number(t.throughput_b);
  j["ratio"] = json_number(t.ratio);
  j["ci_low"] = json_number(t.ci_low);
  j["ci_high"] = json_number(t.ci_high);
  j["verdict"] = verdict_name(t.verdict);
  j["reason"] = t.reason;
  j["samples_a"] = t.samples_a;
  j["samples_b"] = t.samples_b;
  j["cv_a"] = json_number(t.cv_a);
  j["cv_b"] = json_number(t.cv_b);
  j["block_a"] = t.block_a;
  j["block_b"] = t.block_b;
  j["between_run_sd"] = json_number(t.between_runs.sd);
  j["between_run_dof"] = t.between_runs.dof;
  j["detectable_change"] = json_number(t.resolution.detectable_change);
  if (t.resolution.runs_per_side_to_detect == 0)
    j["runs_per_side_to_detect"] = nullptr;
  else
    j["runs_per_side_to_detect"] = t.resolution.runs_per_side_to_detect;
  if (row.prefill && row.decode)
    j["phases"] = {{"prefill", phase_json(*row.prefill, "prompt tokens/s")},
                   {"decode", phase_json(*row.decode, "output tokens/s")}};
  if (row.categories.empty()) {
    j["categories"] = nullptr;
  } else {
    j["profile_a"] = row.profile_a;
    j["profile_b"] = row.profile_b;
    j["categories"] = Json::array();
    for (const auto& d : row.categories) j["categories"].push_back(category_json(d));
  }
  return j;
}

}  // namespace

nlohmann::ordered_json comparison_json(const Comparison& c) {
  Json j;
  j["a"] = c.label_a;
  j["b"] = c.label_b;
  j["method"] = method_json(c.statistics, c.ignored_fields);
  j["environment"] = Json::array();
  for (const auto& f : c.environment)
    j["environment"].push_back(
        {{"field", f.field}, {"a", f.a}, {"b", f.b}, {"differs", f.differs}});
  j["comparisons"] = Json::array();
  for (const auto& row : c.rows) j["comparisons"].push_back(row_json(row));
  j["only_in_a"] = c.only_in_a;
  j["only_in_b"] = c.only_in_b;
  Json summary;
  summary["faster"] = c.count(Verdict::kFaster);
  summary["slower"] = c.count(Verdict::kSlower);
  summary["no_significant_difference"] = c.count(Verdict::kNoSignificantDifference);
  summary["not_comparable"] = c.count(Verdict::kNotComparable);
  summary["slowdown_found"] = c.slowdown_found();
  j["summary"] = summary;
  j["notes"] = c.notes;
  return j;
}

}  // namespace plumb::analysis
