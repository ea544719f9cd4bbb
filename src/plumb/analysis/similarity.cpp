// Cosine distance and agglomerative clustering of workload vectors (see similarity.h).
// Written by hand: none of plumb's libraries clusters, and n is a few dozen items, so the
// plain O(n^3) greedy algorithm is both the clearest and fast enough.
#include "plumb/analysis/similarity.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"

namespace plumb::analysis {
namespace {

// Distances live in [0, 2]; differences below this are rounding, not a real preference.
constexpr double kTieTolerance = 1e-12;

void check_shape(const FeatureVectors& v) {
  if (v.labels.size() != v.values.size())
    throw std::invalid_argument(fmt::format("similarity: {} labels but {} rows of values",
                                            v.labels.size(), v.values.size()));
  for (size_t i = 0; i < v.values.size(); ++i)
    if (v.values[i].size() != v.features.size())
      throw std::invalid_argument(fmt::format("similarity: row '{}' has {} values for {} features",
                                              v.labels[i], v.values[i].size(), v.features.size()));
}

// A cluster during clustering: its id (scipy convention), leaves, and centroid (the mean of
// its members' vectors, i.e. the size-weighted mean of the two centroids it was made from).
struct Cluster {
  int id;
  std::vector<int> leaves;
  std::vector<double> centroid;
};

// Mean cosine distance over every pair (leaf of a, leaf of b): UPGMA.
double average_distance(const Cluster& a, const Cluster& b,
                        const std::vector<std::vector<double>>& leaf_distance) {
  double sum = 0;
  for (int i : a.leaves)
    for (int j : b.leaves) sum += leaf_distance[i][j];
  return sum / static_cast<double>(a.leaves.size() * b.leaves.size());
}

// Leaves left to right: the left child's (smaller id) leaves, then the right child's, from the
// root down (scipy.cluster.hierarchy.leaves_list).
std::vector<int> leaves_left_to_right(int n, const std::vector<Merge>& merges) {
  std::vector<int> order;
  std::function<void(int)> visit = [&](int id) {
    if (id < n) {
      order.push_back(id);
      return;
    }
    visit(merges[id - n].left);
    visit(merges[id - n].right);
  };
  visit(merges.empty() ? 0 : n + static_cast<int>(merges.size()) - 1);
  return order;
}

}  // namespace

double cosine_distance(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw std::invalid_argument(fmt::format(
        "cosine distance of vectors of different sizes ({} and {})", a.size(), b.size()));
  double dot = 0, norm_a = 0, norm_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      throw std::invalid_argument("cosine distance of a vector with a non-finite value");
    dot += a[i] * b[i];
    norm_a += a[i] * a[i];
    norm_b += b[i] * b[i];
  }
  if (norm_a == 0 || norm_b == 0)
    throw std::invalid_argument(
        "cosine distance of a zero vector: it has no direction (an item without any time?)");
  return std::clamp(1.0 - dot / (std::sqrt(norm_a) * std::sqrt(norm_b)), 0.0, 2.0);
}

std::vector<std::vector<double>> distance_matrix(const FeatureVectors& vectors) {
  check_shape(vectors);
  const size_t n = vectors.values.size();
  std::vector<std::vector<double>> d(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      d[i][j] = d[j][i] = cosine_distance(vectors.values[i], vectors.values[j]);
  // A single item still needs its own vector checked: it is someone's centroid later.
  if (n == 1) cosine_distance(vectors.values[0], vectors.values[0]);
  return d;
}

const char* linkage_name(Linkage linkage) {
  switch (linkage) {
    case Linkage::kCentroid:
      return "centroid";
    case Linkage::kAverage:
      return "average";
  }
  PLUMB_ASSERT(false, "unhandled Linkage");
  return "";
}

Linkage parse_linkage(const std::string& text) {
  if (text == "centroid") return Linkage::kCentroid;
  if (text == "average") return Linkage::kAverage;
  throw UsageError("unknown --linkage '" + text + "'; valid: centroid (Fathom's), average");
}

Dendrogram cluster(const FeatureVectors& vectors, Linkage linkage) {
  const auto leaf_distance = distance_matrix(vectors);  // validates the input
  const int n = static_cast<int>(vectors.values.size());
  if (n == 0) throw std::invalid_argument("clustering needs at least one item");

  std::vector<Cluster> active;  // kept sorted by id: new clusters get the largest id
  for (int i = 0; i < n; ++i) active.push_back({i, {i}, vectors.values[i]});

  Dendrogram result;
  result.labels = vectors.labels;
  result.linkage = linkage;
  auto distance = [&](const Cluster& a, const Cluster& b) {
    return linkage == Linkage::kCentroid ? cosine_distance(a.centroid, b.centroid)
                                         : average_distance(a, b, leaf_distance);
  };
  while (active.size() > 1) {
    // Pairs are visited in ascending (smaller id, larger id) order, so keeping the first pair
    // that is not clearly beaten implements the tie rule.
    size_t best_a = 0, best_b = 1;
    double best = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < active.size(); ++a)
      for (size_t b = a + 1; b < active.size(); ++b) {
        const double d = distance(active[a], active[b]);
        if (d < best - kTieTolerance) {
          best = d;
          best_a = a;
          best_b = b;
        }
      }
    const Cluster& left = active[best_a];
    const Cluster& right = active[best_b];
    Cluster merged;
    merged.id = n + static_cast<int>(result.merges.size());
    merged.leaves = left.leaves;
    merged.leaves.insert(merged.leaves.end(), right.leaves.begin(), right.leaves.end());
    const double wl = static_cast<double>(left.leaves.size());
    const double wr = static_cast<double>(right.leaves.size());
    for (size_t k = 0; k < left.centroid.size(); ++k)
      merged.centroid.push_back((wl * left.centroid[k] + wr * right.centroid[k]) / (wl + wr));
    result.merges.push_back({left.id, right.id, best, static_cast<int>(merged.leaves.size())});
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(best_b));  // b > a: erase b first
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(best_a));
    active.push_back(std::move(merged));
  }
  result.leaf_order = leaves_left_to_right(n, result.merges);
  return result;
}

std::vector<int> inversions(const Dendrogram& dendrogram) {
  const int n = static_cast<int>(dendrogram.labels.size());
  auto height = [&](int id) { return id < n ? 0.0 : dendrogram.merges[id - n].height; };
  std::vector<int> out;
  for (size_t i = 0; i < dendrogram.merges.size(); ++i) {
    const Merge& m = dendrogram.merges[i];
    if (m.height < std::max(height(m.left), height(m.right)) - kTieTolerance)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<std::vector<int>> cut(const Dendrogram& dendrogram, int clusters) {
  const int n = static_cast<int>(dendrogram.labels.size());
  if (clusters < 1 || clusters > n)
    throw std::invalid_argument(
        fmt::format("cannot cut {} items into {} clusters; ask for 1 to {}", n, clusters, n));
  // Union the first n - clusters merges; every leaf points at the cluster id holding it.
  std::vector<std::vector<int>> members(static_cast<size_t>(2 * n - 1));
  for (int i = 0; i < n; ++i) members[i] = {i};
  std::vector<bool> open(static_cast<size_t>(2 * n - 1), false);
  std::fill(open.begin(), open.begin() + n, true);
  for (int i = 0; i < n - clusters; ++i) {
    const Merge& m = dendrogram.merges[i];
    auto& into = members[n + i];
    into = members[m.left];
    into.insert(into.end(), members[m.right].begin(), members[m.right].end());
    open[m.left] = open[m.right] = false;
    open[n + i] = true;
  }
  std::vector<std::vector<int>> out;
  for (size_t id = 0; id < open.size(); ++id) {
    if (!open[id]) continue;
    std::sort(members[id].begin(), members[id].end());
    out.push_back(members[id]);
  }
  std::sort(out.begin(), out.end());  // by smallest leaf: members are disjoint and sorted
  return out;
}

nlohmann::ordered_json dendrogram_json(const Dendrogram& dendrogram) {
  nlohmann::ordered_json merges = nlohmann::ordered_json::array();
  for (const Merge& m : dendrogram.merges)
    merges.push_back({{"left", m.left},
                      {"right", m.right},
                      {"height", json_number(m.height)},
                      {"size", m.size}});
  return {{"labels", dendrogram.labels},
          {"merges", merges},
          {"leaf_order", dendrogram.leaf_order},
          {"linkage", linkage_name(dendrogram.linkage)}};
}

}  // namespace plumb::analysis
