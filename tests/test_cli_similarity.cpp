// plumb analyze similarity end to end: on hand-made stored profiles (exact answers) the JSON
// document and the human output; on real profiles of a tiny workload; and bad input refused
// with exit 2 and a message that says what to do.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "stored_profile_util.h"

namespace plumb::testing {
namespace {

class SimilarityCli : public Cli {
 protected:
  // Two convolutional profiles and one fully-connected one, in training.
  void save_three() {
    auto db = store::ResultsStore::open(this->db());
    save_fake_profile(*db, {"resnet50", "train", 1, {{"conv", "Conv", 3}, {"mm", "MatMul", 1}}});
    save_fake_profile(*db, {"vgg", "train", 1, {{"conv", "Conv", 4}, {"mm", "MatMul", 1}}});
    save_fake_profile(*db,
                      {"autoenc", "train", 1, {{"mm", "MatMul", 3}, {"add", "Elementwise", 1}}});
  }
};

TEST_F(SimilarityCli, JsonHasDistancesDendrogramAndClusters) {
  save_three();
  Result r = plumb("analyze similarity --db " + db() + " --mode train --clusters 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("by"), "category");
  EXPECT_EQ(doc.at("mode"), "train");
  EXPECT_EQ(doc.at("features"), (nlohmann::json{"Conv", "MatMul", "Elementwise"}));
  ASSERT_EQ(doc.at("items").size(), 3u);
  EXPECT_EQ(doc.at("items")[0].at("label"), "autoenc train");
  EXPECT_EQ(doc.at("items")[0].at("shares"), (nlohmann::json{0, 0.75, 0.25}));
  EXPECT_EQ(doc.at("distances").size(), 3u);
  const auto& tree = doc.at("dendrogram");
  EXPECT_EQ(tree.at("linkage"), "centroid");
  ASSERT_EQ(tree.at("merges").size(), 2u);
  // resnet50 (1) and vgg (2) first: (.75, .25) vs (.8, .2).
  EXPECT_EQ(tree.at("merges")[0].at("left"), 1);
  EXPECT_EQ(tree.at("merges")[0].at("right"), 2);
  EXPECT_EQ(tree.at("merges")[1].at("size"), 3);
  EXPECT_EQ(doc.at("clusters"),
            (nlohmann::json{{"autoenc train"}, {"resnet50 train", "vgg train"}}));
  EXPECT_EQ(doc.at("inversions"), nlohmann::json::array());
}

TEST_F(SimilarityCli, HumanOutputShowsMatrixMergesTreeAndClusters) {
  save_three();
  Result r = plumb("analyze similarity --db " + db() + " --linkage average --clusters 2");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* needle : {"cosine distance", "#1 autoenc train", "average linkage", "(merge 1)",
                             "2 flat clusters", "resnet50 train, vgg train"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
}

TEST_F(SimilarityCli, RealProfilesOfATinyWorkload) {
  Result p =
      plumb(quick_profile_args() + " --threads 1 --steps 1 --max-warmup-time 1 --db " + db());
  ASSERT_EQ(p.code, 0) << p.err;
  Result r = plumb("analyze similarity --db " + db() + " --by op --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("items").size(), 2u);
  EXPECT_EQ(doc.at("dendrogram").at("merges").size(), 1u);
  EXPECT_GT(doc.at("features").size(), 2u);
}

TEST_F(SimilarityCli, BadInputIsRefused) {
  save_three();
  expect_usage_error("analyze similarity --db " + db() + " --by layer", "--by");
  expect_usage_error("analyze similarity --db " + db() + " --linkage single", "--linkage");
  expect_usage_error("analyze similarity --db " + db() + " --clusters 4", "1 to 3");
  expect_usage_error("analyze similarity --db " + db() + " --suite nosuch", "nosuch");
  expect_usage_error("analyze similarity --db " + db() + " --mode infer",
                     "plumb profile W --mode infer");
  expect_usage_error("analyze similarity --db " + (dir_ / "missing.db").string(), "missing.db");
}

TEST_F(SimilarityCli, NoProfilesInTheDatabase) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);  // a run, but no profile
  expect_usage_error("analyze similarity --db " + db(), "0 finished profile(s)");
}

}  // namespace
}  // namespace plumb::testing
