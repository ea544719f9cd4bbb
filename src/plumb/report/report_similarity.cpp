// Report blocks for workload similarity (Fathom Sec. V, Fig. 4): each workload's profile as a
// vector of time shares per operator category, cosine distances between them, and the
// dendrogram of their agglomerative clustering (centroid linkage, as Fathom), drawn
// horizontally: leaves on the left, merge heights (cosine distance) along x.
#include <map>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"

namespace plumb::report {
namespace {

using vl::json;

Chart dendrogram_chart(const analysis::FeatureVectors& vectors, const std::string& mode) {
  const auto d = analysis::cluster(vectors, analysis::Linkage::kCentroid);
  const size_t n = d.labels.size();
  // Position of every node: leaves at their drawing slot and height 0; a merge halfway between
  // its children at its own height.
  std::vector<double> y(2 * n - 1, 0.0), x(2 * n - 1, 0.0);
  for (size_t slot = 0; slot < d.leaf_order.size(); ++slot)
    y[static_cast<size_t>(d.leaf_order[slot])] = static_cast<double>(slot);
  json segments = json::array();
  for (size_t i = 0; i < d.merges.size(); ++i) {
    const auto& m = d.merges[i];
    const size_t node = n + i, l = static_cast<size_t>(m.left), r = static_cast<size_t>(m.right);
    x[node] = m.height;
    y[node] = (y[l] + y[r]) / 2;
    for (size_t child : {l, r})  // from the child across to this merge's height
      segments.push_back({{"x", x[child]},
                          {"x2", m.height},
                          {"y", y[child]},
                          {"y2", y[child]},
                          {"merge", i + 1},
                          {"height", m.height}});
    segments.push_back({{"x", m.height},
                        {"x2", m.height},
                        {"y", y[l]},
                        {"y2", y[r]},
                        {"merge", i + 1},
                        {"height", m.height}});
  }
  json leaves = json::array();
  for (size_t leaf = 0; leaf < n; ++leaf)
    leaves.push_back({{"label", d.labels[leaf]}, {"y", y[leaf]}, {"x", 0.0}});
  json s = vl::spec(json::array(), 460, static_cast<int>(18 * n));
  s.erase("data");
  json ys = {{"field", "y"},
             {"type", "quantitative"},
             {"axis", nullptr},
             {"scale", {{"domain", {-0.5, static_cast<double>(n) - 0.5}}}}};
  json rules = {{"data", {{"values", segments}}},
                {"mark", {{"type", "rule"}, {"strokeWidth", 1.5}, {"tooltip", true}}},
                {"encoding",
                 {{"x", vl::field("x", "quantitative", "cosine distance (1 - cos) at the merge")},
                  {"x2", {{"field", "x2"}}},
                  {"y", ys},
                  {"y2", {{"field", "y2"}}},
                  {"tooltip", json::array({vl::tip("merge", "merge"),
                                           vl::tip("height", "distance", ".3f")})}}}};
  json text = {{"data", {{"values", leaves}}},
               {"mark", {{"type", "text"}, {"align", "right"}, {"dx", -4}, {"fontSize", 11}}},
               {"encoding",
                {{"x", {{"field", "x"}, {"type", "quantitative"}}},
                 {"y", ys},
                 {"text", {{"field", "label"}}}}}};
  s["layer"] = json::array({rules, text});
  s["padding"] = {{"left", 170}, {"top", 5}, {"right", 5}, {"bottom", 5}};
  return {
      fmt::format("Workload similarity ({}): dendrogram of operator-category time shares", mode),
      "Workloads joined near the left spend their time alike (small cosine distance between "
      "their category-share vectors); a join far to the right links groups that stress the "
      "hardware differently. Centroid linkage as in Fathom Fig. 4; plumb analyze similarity "
      "prints the merges and distances.",
      s};
}

}  // namespace

std::vector<Block> similarity_blocks(const ReportData& d) {
  std::vector<Block> out;
  for (const auto& [mode, vectors] : d.similarity)
    if (vectors.labels.size() >= 3) out.push_back(dendrogram_chart(vectors, mode));
  return out;
}

}  // namespace plumb::report
