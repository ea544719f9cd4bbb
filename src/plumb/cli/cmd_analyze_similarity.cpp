// plumb analyze similarity: Fathom's workload similarity (Sec. VI-C, Fig. 4) over the stored
// operator profiles — cosine distances between their time-share vectors, the agglomerative
// clustering's merges and dendrogram, and flat clusters.
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/similarity.h"
#include "plumb/analysis/similarity_inputs.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/jobs/dendrogram_text.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

// Above this many items a distance matrix no longer fits a terminal: nearest neighbours instead.
constexpr size_t kMaxMatrixItems = 12;

struct SimilarityFlags {
  std::string db = "plumb.db", suite, linkage = "centroid";
  analysis::SimilarityQuery query;
  int clusters = 0;  // 0: no flat clusters
  bool json = false;
};

// A leaf's label, or "(merge 3)" for the cluster made by merge 3 (1-based, as printed).
std::string node_name(const analysis::Dendrogram& d, int id) {
  const int n = static_cast<int>(d.labels.size());
  return id < n ? d.labels[id] : fmt::format("(merge {})", id - n + 1);
}

std::string distance_text(double d) {
  return fmt::format("{:.3f}", d);
}

void print_distances(const analysis::FeatureVectors& v, const std::vector<std::vector<double>>& d) {
  const size_t n = v.labels.size();
  if (n <= kMaxMatrixItems) {
    std::vector<std::string> header = {"cosine distance"};
    // "#3", not "3": a label must not start with a digit or the table right-aligns it.
    for (size_t j = 0; j < n; ++j) header.push_back(fmt::format("#{}", j + 1));
    Table t(header);
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> row = {fmt::format("#{} {}", i + 1, v.labels[i])};
      for (size_t j = 0; j < n; ++j) row.push_back(distance_text(d[i][j]));
      t.add_row(row);
    }
    t.print(std::cout);
    return;
  }
  Table t({"item", "nearest", "cosine distance"});
  for (size_t i = 0; i < n; ++i) {
    size_t best = i == 0 ? 1 : 0;
    for (size_t j = 0; j < n; ++j)
      if (j != i && d[i][j] < d[i][best]) best = j;
    t.add_row({v.labels[i], v.labels[best], distance_text(d[i][best])});
  }
  t.print(std::cout);
}

void print_merges(const analysis::Dendrogram& d) {
  Table t({"merge", "joins", "with", "height", "items"});
  for (size_t i = 0; i < d.merges.size(); ++i) {
    const auto& m = d.merges[i];
    t.add_row({std::to_string(i + 1), node_name(d, m.left), node_name(d, m.right),
               distance_text(m.height), std::to_string(m.size)});
  }
  t.print(std::cout);
  const auto inverted = analysis::inversions(d);
  if (!inverted.empty())
    std::cout << fmt::format(
        "note: {} merge(s) lie below a merge they contain (centroid linkage is not monotone: a "
        "new centroid can be closer to a third cluster than its members were); the drawing "
        "raises them to their child's height\n",
        inverted.size());
}

nlohmann::ordered_json clusters_json(const analysis::Dendrogram& d,
                                     const std::vector<std::vector<int>>& clusters) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& members : clusters) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (int leaf : members) names.push_back(d.labels[leaf]);
    out.push_back(names);
  }
  return out;
}

void similarity(SimilarityFlags f) {
  if (!f.suite.empty()) {
    for (const auto* w : workloads::default_registry().list(f.suite))
      f.query.workloads.push_back(w->info.name);
  }
  const auto linkage = analysis::parse_linkage(f.linkage);
  auto db = store::ResultsStore::open(f.db, /*read_only=*/true);
  const auto vectors = analysis::profile_vectors(*db, f.query);
  const int n = static_cast<int>(vectors.labels.size());
  if (f.clusters > n)
    throw UsageError(fmt::format("--clusters {} is out of range: {} items match, ask for 1 to {}",
                                 f.clusters, n, n));
  const auto distances = analysis::distance_matrix(vectors);
  const auto tree = analysis::cluster(vectors, linkage);
  const auto clusters =
      f.clusters > 0 ? analysis::cut(tree, f.clusters) : std::vector<std::vector<int>>{};

  if (f.json) {
    nlohmann::ordered_json out;
    out["by"] = f.query.by;
    out["mode"] = f.query.mode;
    out["features"] = vectors.features;
    out["items"] = nlohmann::ordered_json::array();
    for (int i = 0; i < n; ++i)
      out["items"].push_back({{"label", vectors.labels[i]}, {"shares", vectors.values[i]}});
    out["distances"] = distances;
    out["dendrogram"] = analysis::dendrogram_json(tree);
    out["inversions"] = analysis::inversions(tree);
    if (f.clusters > 0) out["clusters"] = clusters_json(tree, clusters);
    std::cout << json_text(out, 2) << '\n';
    return;
  }
  std::cout << fmt::format(
      "{} profiles as vectors of operator self-time shares per {} ({} features); distance = 1 - "
      "cosine similarity\n\n",
      n, f.query.by == "op" ? "operator type" : "op category", vectors.features.size());
  print_distances(vectors, distances);
  std::cout << fmt::format("\nagglomerative clustering, {} linkage:\n", f.linkage);
  print_merges(tree);
  std::cout << '\n' << jobs::dendrogram_text(tree);
  if (f.clusters > 0) {
    std::cout << fmt::format("\n{} flat clusters (the state before the last {} merge(s)):\n",
                             f.clusters, f.clusters - 1);
    for (size_t c = 0; c < clusters.size(); ++c) {
      std::vector<std::string> names;
      for (int leaf : clusters[c]) names.push_back(tree.labels[leaf]);
      std::cout << fmt::format("  {}: {}\n", c + 1, join(names, ", "));
    }
  }
}

}  // namespace

void add_analyze_similarity_command(CLI::App& analyze) {
  auto* cmd = analyze.add_subcommand(
      "similarity", "Fathom's workload similarity: cosine distances and a dendrogram of profiles");
  auto f = std::make_shared<SimilarityFlags>();
  cmd->add_option("--db", f->db, "Database holding the profiles (plumb profile)")
      ->capture_default_str();
  cmd->add_option("--by", f->query.by, "Vector features: category (op categories) or op (types)")
      ->capture_default_str()
      ->check(CLI::IsMember({"category", "op"}));
  cmd->add_option("--mode", f->query.mode, "Only train or only infer profiles (default: both)")
      ->check(CLI::IsMember({"train", "infer"}));
  cmd->add_option("--suite", f->suite, "Only the workloads of these suites, e.g. fathom,tbd");
  cmd->add_option("--tag", f->query.tag, "Only profiles stored with this tag");
  cmd->add_option("--threads", f->query.threads, "Only profiles at this thread count")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--linkage", f->linkage, "centroid (Fathom's) or average (UPGMA)")
      ->capture_default_str()
      ->check(CLI::IsMember({"centroid", "average"}));
  cmd->add_option("--clusters", f->clusters, "Also print K flat clusters")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  cmd->callback([f] { similarity(*f); });
}

}  // namespace plumb::cli
