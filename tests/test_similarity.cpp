// Cosine distance and agglomerative clustering (analysis/similarity.h) on small hand-made
// vectors whose answers follow from angles: for 2-D vectors at angles s and t, the cosine
// distance is 1 - cos(s - t) whatever their lengths; a centroid's angle is that of the sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "plumb/analysis/similarity.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/dendrogram_text.h"

namespace plumb::analysis {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kEps = 1e-12;

double rad(double degrees) {
  return degrees * kPi / 180;
}
std::vector<double> at_angle(double degrees, double length = 1) {
  return {length * std::cos(rad(degrees)), length * std::sin(rad(degrees))};
}
double distance_at(double degrees) {  // between two directions `degrees` apart
  return 1 - std::cos(rad(degrees));
}
double angle_of(double x, double y) {
  return std::atan2(y, x) * 180 / kPi;
}

FeatureVectors items(std::vector<std::vector<double>> values) {
  FeatureVectors v;
  for (size_t i = 0; i < values.size(); ++i) v.labels.push_back(std::string(1, char('a' + i)));
  for (size_t k = 0; k < (values.empty() ? 0 : values[0].size()); ++k)
    v.features.push_back("f" + std::to_string(k));
  v.values = std::move(values);
  return v;
}

void expect_merge(const Merge& m, int left, int right, double height, int size) {
  EXPECT_EQ(m.left, left);
  EXPECT_EQ(m.right, right);
  EXPECT_NEAR(m.height, height, kEps);
  EXPECT_EQ(m.size, size);
}

// A = 0 deg, B = 20 deg with length 2, C = 50 deg, D = 90 deg: centroid and average linkage
// agree on the first merge and then differ, because B's length pulls the centroid of {A, B}
// towards C while average linkage only sees the angles.
FeatureVectors four_directions() {
  return items({at_angle(0), at_angle(20, 2), at_angle(50), at_angle(90)});
}

TEST(CosineDistance, KnownAngles) {
  EXPECT_NEAR(cosine_distance({1, 0}, {0, 1}), 1.0, kEps);   // orthogonal
  EXPECT_NEAR(cosine_distance({1, 0}, {-1, 0}), 2.0, kEps);  // opposite
  EXPECT_NEAR(cosine_distance({1, 1}, {1, 0}), 1 - std::sqrt(0.5), kEps);
  EXPECT_NEAR(cosine_distance({1, 2, 3}, {2, 4, 6}), 0.0, kEps);  // same direction, any length
  EXPECT_NEAR(cosine_distance(at_angle(10, 3), at_angle(70, 0.5)), 0.5, kEps);
}

TEST(CosineDistance, RefusesMismatchedSizesAndZeroVectors) {
  EXPECT_THROW(cosine_distance({1, 0}, {1, 0, 0}), std::invalid_argument);
  EXPECT_THROW(cosine_distance({0, 0}, {1, 0}), std::invalid_argument);
  EXPECT_THROW(cosine_distance({1, 0}, {0, 0}), std::invalid_argument);
  EXPECT_THROW(cosine_distance({NAN, 1}, {1, 0}), std::invalid_argument);
}

TEST(DistanceMatrix, SymmetricWithZeroDiagonal) {
  const auto d = distance_matrix(four_directions());
  ASSERT_EQ(d.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d[i][i], 0.0);
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(d[i][j], d[j][i]);
  }
  EXPECT_NEAR(d[0][1], distance_at(20), kEps);
  EXPECT_NEAR(d[1][2], distance_at(30), kEps);
  EXPECT_NEAR(d[0][3], distance_at(90), kEps);
}

TEST(DistanceMatrix, RefusesRowsOfTheWrongSize) {
  auto v = four_directions();
  v.values[2].push_back(1);
  EXPECT_THROW(distance_matrix(v), std::invalid_argument);
  v = four_directions();
  v.labels.pop_back();
  EXPECT_THROW(distance_matrix(v), std::invalid_argument);
}

TEST(Cluster, CentroidLinkageMergesByDistanceOfCentroids) {
  const auto d = cluster(four_directions(), Linkage::kCentroid);
  ASSERT_EQ(d.merges.size(), 3u);
  expect_merge(d.merges[0], 0, 1, distance_at(20), 2);
  // Centroid of {A, B} ~ A + B = (1 + 2 cos 20, 2 sin 20): 13.4 deg, 36.6 deg from C, closer
  // than C is to D (40 deg).
  const double ab = angle_of(1 + 2 * std::cos(rad(20)), 2 * std::sin(rad(20)));
  expect_merge(d.merges[1], 2, 4, distance_at(50 - ab), 3);
  const double abc = angle_of(1 + 2 * std::cos(rad(20)) + std::cos(rad(50)),
                              2 * std::sin(rad(20)) + std::sin(rad(50)));
  expect_merge(d.merges[2], 3, 5, distance_at(90 - abc), 4);
  EXPECT_EQ(d.leaf_order, (std::vector<int>{3, 2, 0, 1}));
  EXPECT_EQ(d.linkage, Linkage::kCentroid);
  EXPECT_TRUE(inversions(d).empty());
}

TEST(Cluster, AverageLinkageMergesByMeanPairwiseDistance) {
  const auto d = cluster(four_directions(), Linkage::kAverage);
  ASSERT_EQ(d.merges.size(), 3u);
  expect_merge(d.merges[0], 0, 1, distance_at(20), 2);
  // {A, B} to C: mean of 50 and 30 deg (0.2456) > C to D: 40 deg (0.2340).
  expect_merge(d.merges[1], 2, 3, distance_at(40), 2);
  const double last = (distance_at(50) + distance_at(90) + distance_at(30) + distance_at(70)) / 4;
  expect_merge(d.merges[2], 4, 5, last, 4);
  EXPECT_EQ(d.leaf_order, (std::vector<int>{0, 1, 2, 3}));
}

// Three vectors 60 deg apart in 3-D: every pair ties at 0.5, the tie goes to (0, 1), and the
// centroid of {0, 1} is only 54.7 deg from item 2 (cos = 1/sqrt 3): a centroid-linkage
// inversion, while average linkage stays at 0.5.
TEST(Cluster, TiesGoToTheSmallestIdsAndCentroidInversionsAreReported) {
  const auto v = items({{1, 1, 0}, {1, 0, 1}, {0, 1, 1}});
  const auto c = cluster(v, Linkage::kCentroid);
  ASSERT_EQ(c.merges.size(), 2u);
  expect_merge(c.merges[0], 0, 1, 0.5, 2);
  expect_merge(c.merges[1], 2, 3, 1 - 1 / std::sqrt(3.0), 3);
  EXPECT_EQ(inversions(c), std::vector<int>{1});
  const auto a = cluster(v, Linkage::kAverage);
  expect_merge(a.merges[1], 2, 3, 0.5, 3);
  EXPECT_TRUE(inversions(a).empty());
}

TEST(Cluster, TieBreakFollowsIdsNotInputValues) {
  // A (0 deg), B (45 deg), C (90 deg): B ties with both; the pair with smaller ids wins, so
  // reversing the input order changes which vectors merge first but not the ids.
  const auto forward = cluster(items({at_angle(0), at_angle(45), at_angle(90)}), Linkage::kAverage);
  expect_merge(forward.merges[0], 0, 1, distance_at(45), 2);
  const auto reversed =
      cluster(items({at_angle(90), at_angle(45), at_angle(0)}), Linkage::kAverage);
  expect_merge(reversed.merges[0], 0, 1, distance_at(45), 2);
  expect_merge(reversed.merges[1], 2, 3, (distance_at(90) + distance_at(45)) / 2, 3);
}

TEST(Cluster, IdenticalDirectionsMergeAtZero) {
  for (Linkage l : {Linkage::kCentroid, Linkage::kAverage}) {
    const auto d = cluster(items({{3, 1}, {1, 2}, {2, 4}}), l);
    expect_merge(d.merges[0], 1, 2, 0.0, 2);
    expect_merge(d.merges[1], 0, 3, 1 - 5 / (std::sqrt(10.0) * std::sqrt(5.0)), 3);
  }
}

TEST(Cluster, OrthogonalVectorsMergeAtOne) {
  for (Linkage l : {Linkage::kCentroid, Linkage::kAverage}) {
    const auto d = cluster(items({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}), l);
    expect_merge(d.merges[0], 0, 1, 1.0, 2);
    expect_merge(d.merges[1], 2, 3, 1.0, 3);  // centroid (.5, .5, 0) is orthogonal to item 2
    EXPECT_EQ(d.leaf_order, (std::vector<int>{2, 0, 1}));
  }
}

TEST(Cluster, SingleItemHasNoMerges) {
  const auto d = cluster(items({{0.2, 0.8}}), Linkage::kCentroid);
  EXPECT_TRUE(d.merges.empty());
  EXPECT_EQ(d.leaf_order, std::vector<int>{0});
  EXPECT_EQ(cut(d, 1), (std::vector<std::vector<int>>{{0}}));
}

TEST(Cluster, TwoItemsMergeOnce) {
  const auto d = cluster(items({at_angle(60), at_angle(0)}), Linkage::kCentroid);
  ASSERT_EQ(d.merges.size(), 1u);
  expect_merge(d.merges[0], 0, 1, 0.5, 2);
  EXPECT_EQ(d.leaf_order, (std::vector<int>{0, 1}));
}

TEST(Cluster, RefusesNoItemsAndZeroVectors) {
  EXPECT_THROW(cluster(items({}), Linkage::kCentroid), std::invalid_argument);
  EXPECT_THROW(cluster(items({{1, 0}, {0, 0}}), Linkage::kAverage), std::invalid_argument);
  EXPECT_THROW(cluster(items({{0, 0}}), Linkage::kCentroid), std::invalid_argument);
}

TEST(Cut, UndoesTheLastMerges) {
  const auto d = cluster(four_directions(), Linkage::kAverage);
  EXPECT_EQ(cut(d, 1), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_EQ(cut(d, 2), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(cut(d, 3), (std::vector<std::vector<int>>{{0, 1}, {2}, {3}}));
  EXPECT_EQ(cut(d, 4), (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  const auto c = cluster(four_directions(), Linkage::kCentroid);
  EXPECT_EQ(cut(c, 2), (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
  EXPECT_THROW(cut(d, 0), std::invalid_argument);
  EXPECT_THROW(cut(d, 5), std::invalid_argument);
}

TEST(DendrogramJson, HasTheDocumentedFields) {
  const auto j = dendrogram_json(cluster(four_directions(), Linkage::kAverage));
  EXPECT_EQ(j.at("labels"), (nlohmann::ordered_json{"a", "b", "c", "d"}));
  ASSERT_EQ(j.at("merges").size(), 3u);
  EXPECT_EQ(j.at("merges")[1].at("left"), 2);
  EXPECT_EQ(j.at("merges")[1].at("right"), 3);
  EXPECT_NEAR(j.at("merges")[1].at("height").get<double>(), distance_at(40), kEps);
  EXPECT_EQ(j.at("merges")[1].at("size"), 2);
  EXPECT_EQ(j.at("leaf_order"), (nlohmann::ordered_json{0, 1, 2, 3}));
  EXPECT_EQ(j.at("linkage"), "average");
}

TEST(Linkage, ParsesItsNames) {
  EXPECT_EQ(parse_linkage("centroid"), Linkage::kCentroid);
  EXPECT_EQ(parse_linkage(linkage_name(Linkage::kAverage)), Linkage::kAverage);
  EXPECT_THROW(parse_linkage("single"), UsageError);
}

TEST(DendrogramText, DrawsLeavesInOrderAndJoinsThem) {
  const auto text = jobs::dendrogram_text(cluster(four_directions(), Linkage::kAverage), 20);
  // 4 leaf lines, 3 lines between them, the axis.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8) << text;
  EXPECT_EQ(text.rfind("a -", 0), 0u) << text;  // leaf order a, b, c, d from the top
  EXPECT_LT(text.find("\nb -"), text.find("\nc -")) << text;
  EXPECT_LT(text.find("\nc -"), text.find("\nd -")) << text;
  EXPECT_NE(text.find("average linkage"), std::string::npos) << text;
  EXPECT_NE(text.find('|'), std::string::npos) << text;
}

}  // namespace
}  // namespace plumb::analysis
