// Workload similarity (Fathom Sec. VI-C, Fig. 4): items (workload + mode) as vectors of time
// shares, pairwise cosine distance, and agglomerative clustering into a dendrogram with
// centroid linkage (Fathom's) or average linkage. Pure functions, no store access; the vectors
// come from similarity_inputs.h.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plumb::analysis {

struct FeatureVectors {                     // one row per item (e.g. "resnet50 train")
  std::vector<std::string> labels;          // row names
  std::vector<std::string> features;        // column names (op categories or op types)
  std::vector<std::vector<double>> values;  // [labels.size()][features.size()], time shares
};

// 1 - a.b / (|a| |b|), clamped to [0, 2] against rounding. Throws std::invalid_argument when
// the sizes differ, a vector is all zeros (no direction) or a value is not finite.
double cosine_distance(const std::vector<double>& a, const std::vector<double>& b);

// [n][n] cosine distances between the rows (0 on the diagonal). Throws std::invalid_argument
// when a row's size is not features.size() or labels and values differ in count.
std::vector<std::vector<double>> distance_matrix(const FeatureVectors& vectors);

enum class Linkage {
  kCentroid,  // distance of two clusters = cosine distance of their centroids (Fathom)
  kAverage,   // mean cosine distance over all pairs of members (UPGMA)
};
// "centroid" | "average"; the reverse of parse_linkage.
const char* linkage_name(Linkage linkage);
// Throws plumb::UsageError naming the valid values for anything else.
Linkage parse_linkage(const std::string& text);

// scipy.cluster.hierarchy.linkage convention: ids < n are leaves, n + i is the cluster made by
// merge i; left < right; size = leaves in the new cluster.
struct Merge {
  int left;
  int right;
  double height;
  int size;
};

struct Dendrogram {
  std::vector<std::string> labels;
  std::vector<Merge> merges;    // n - 1 merges in order
  std::vector<int> leaf_order;  // leaves left to right for drawing (scipy's leaves_list)
  Linkage linkage;
};

// Greedy agglomerative clustering: repeatedly merges the two closest clusters until one is
// left. Ties (distances within 1e-12) go to the pair with the smallest ids (smaller id first,
// then the other), so the result never depends on the order of floating-point sums.
// Centroid linkage can give a merge a lower height than an earlier one (an inversion: the new
// centroid may lie closer to a third cluster than its members did); heights are reported as
// computed, as scipy does — see inversions(). A merged centroid is never the zero vector
// while it is still used: that needs two opposite centroids (distance 2, the largest) to be the
// closest pair among three or more clusters, which is impossible. Throws std::invalid_argument
// for no items and for the malformed input distance_matrix refuses.
Dendrogram cluster(const FeatureVectors& vectors, Linkage linkage);

// Indices of the merges whose height is below that of one of their children (centroid
// linkage only ever produces these); empty for a monotone dendrogram.
std::vector<int> inversions(const Dendrogram& dendrogram);

// Flat clusters: the state after the first n - clusters merges (by merge order, not by a
// height threshold, so an inversion cannot make the count differ from what was asked).
// Each cluster lists its leaves ascending; clusters are ordered by their smallest leaf.
// Throws std::invalid_argument unless 1 <= clusters <= n.
std::vector<std::vector<int>> cut(const Dendrogram& dendrogram, int clusters);

// {labels, merges: [{left, right, height, size}], leaf_order, linkage} (docs/json.md).
nlohmann::ordered_json dendrogram_json(const Dendrogram& dendrogram);

}  // namespace plumb::analysis
