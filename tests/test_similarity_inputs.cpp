// The similarity vectors built from stored profiles (analysis/similarity_inputs.h): which
// profile stands for a (workload, mode, threads), the filters, the features and their order,
// and the error that tells the user how to get profiles.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "plumb/analysis/similarity_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/store/profile_records.h"
#include "stored_profile_util.h"
#include "usage_error_check.h"

namespace plumb::analysis {
namespace {

using testing::FakeProfile;
using testing::save_fake_profile;

class SimilarityInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/plumb_sim_XXXXXX";
    dir_ = mkdtemp(tmpl);
    store_ = store::ResultsStore::open((dir_ / "plumb.db").string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // conv 3 s + matmul 1 s, or matmul 3 s + elementwise 1 s.
  void save_cnn(const std::string& name, const std::string& mode = "train", int threads = 1,
                const std::string& tag = "") {
    FakeProfile p{name, mode, threads, {{"aten::conv", "Conv", 3}, {"aten::mm", "MatMul", 1}}};
    p.tag = tag;
    save_fake_profile(*store_, p);
  }
  void save_mlp(const std::string& name, const std::string& mode = "train") {
    save_fake_profile(
        *store_, {name, mode, 1, {{"aten::mm", "MatMul", 3}, {"aten::add", "Elementwise", 1}}});
  }
  std::filesystem::path dir_;
  std::unique_ptr<store::ResultsStore> store_;
};

TEST_F(SimilarityInputs, CategorySharesOfOperatorTimePerProfile) {
  save_cnn("resnet");
  save_mlp("autoenc");
  const auto v = profile_vectors(*store_, {});
  EXPECT_EQ(v.labels, (std::vector<std::string>{"autoenc train", "resnet train"}));
  // Mean shares: MatMul (0.75 + 0.25) / 2, Conv 0.375, Elementwise 0.125.
  EXPECT_EQ(v.features, (std::vector<std::string>{"MatMul", "Conv", "Elementwise"}));
  EXPECT_EQ(v.values[0], (std::vector<double>{0.75, 0, 0.25}));
  EXPECT_EQ(v.values[1], (std::vector<double>{0.25, 0.75, 0}));
}

TEST_F(SimilarityInputs, LatestOkProfilePerWorkloadModeAndThreads) {
  save_mlp("resnet");  // older: replaced by the next one
  save_cnn("resnet");
  FakeProfile failed{"resnet", "train", 1, {{"aten::add", "Elementwise", 1}}};
  failed.status = run::RunStatus::kError;  // newer but failed: skipped
  save_fake_profile(*store_, failed);
  FakeProfile swept{"resnet", "train", 1, {{"aten::add", "Elementwise", 1}}};
  swept.group = std::string(store::kSweepGroupPrefix) + "1";  // a sweep point: never used
  save_fake_profile(*store_, swept);
  save_mlp("autoenc");
  const auto v = profile_vectors(*store_, {});
  ASSERT_EQ(v.labels.size(), 2u);
  EXPECT_EQ(v.labels[1], "resnet train");
  EXPECT_EQ(v.values[1], (std::vector<double>{0.25, 0.75, 0}));  // MatMul, Conv, Elementwise
}

TEST_F(SimilarityInputs, FiltersByModeTagThreadsAndWorkloads) {
  save_cnn("resnet", "train");
  save_cnn("resnet", "infer");
  save_mlp("autoenc", "train");
  save_mlp("autoenc", "infer");
  save_cnn("vgg", "train", 2, "x");
  SimilarityQuery all;
  EXPECT_EQ(profile_vectors(*store_, all).labels,
            (std::vector<std::string>{"autoenc train 1thr", "autoenc infer 1thr",
                                      "resnet train 1thr", "resnet infer 1thr", "vgg train 2thr"}));
  SimilarityQuery infer;
  infer.mode = "infer";
  EXPECT_EQ(profile_vectors(*store_, infer).labels,
            (std::vector<std::string>{"autoenc infer", "resnet infer"}));
  SimilarityQuery listed;  // in the order given
  listed.workloads = {"vgg", "resnet"};
  listed.mode = "train";
  EXPECT_EQ(profile_vectors(*store_, listed).labels,
            (std::vector<std::string>{"vgg train 2thr", "resnet train 1thr"}));
  SimilarityQuery one_thread;
  one_thread.threads = 1;
  one_thread.mode = "train";
  EXPECT_EQ(profile_vectors(*store_, one_thread).labels,
            (std::vector<std::string>{"autoenc train", "resnet train"}));
  SimilarityQuery tagged;
  tagged.tag = "x";  // only one profile: too few
  EXPECT_THROW(profile_vectors(*store_, tagged), UsageError);
}

TEST_F(SimilarityInputs, ByOpMergesForwardAndBackwardOfAnOperator) {
  save_fake_profile(*store_, {"a",
                              "train",
                              1,
                              {{"aten::mm", "MatMul", 1},
                               {"aten::mm", "MatMul", 2, "backward"},
                               {"aten::add", "Elementwise", 1}}});
  save_mlp("b");
  SimilarityQuery q;
  q.by = "op";
  const auto v = profile_vectors(*store_, q);
  EXPECT_EQ(v.features, (std::vector<std::string>{"aten::mm", "aten::add"}));
  EXPECT_EQ(v.values[0], (std::vector<double>{0.75, 0.25}));
}

TEST_F(SimilarityInputs, TooFewProfilesSaysHowToCreateThem) {
  save_cnn("resnet");
  SimilarityQuery q;
  q.mode = "train";
  expect_usage_error([&] { profile_vectors(*store_, q); },
                     {"1 finished profile(s)", "plumb profile W --mode train --db"});
}

TEST_F(SimilarityInputs, RefusesUnknownByAndMode) {
  save_cnn("resnet");
  save_mlp("autoenc");
  SimilarityQuery q;
  q.by = "layer";
  EXPECT_THROW(profile_vectors(*store_, q), UsageError);
  q.by = "category";
  q.mode = "training";
  EXPECT_THROW(profile_vectors(*store_, q), UsageError);
}

}  // namespace
}  // namespace plumb::analysis
