// ParaDnn generators (paradnn_fc, paradnn_cnn, paradnn_rnn): the built models' trainable
// parameters equal each generator's closed-form count at several points of the paper's
// Table 2 (every cell type, both block types), the layer names and shapes follow ParaDnn's
// public code, and invalid hyperparameters raise UsageError naming the valid values.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/core/errors.h"
#include "plumb/profile/forward_cost.h"
#include "plumb/workloads/paradnn/paradnn_cnn.h"
#include "plumb/workloads/paradnn/paradnn_fc.h"
#include "plumb/workloads/paradnn/paradnn_rnn.h"

namespace plumb {
namespace {

using Settings = std::vector<std::string>;

struct Point {
  const char* name;
  Workload (*make)();
  int64_t (*closed_form)(const Config&);
  Settings settings;
  int64_t expected;  // hand-computed from the formula at the top of the generator's file
};

class ParaDnnPoint : public ::testing::TestWithParam<Point> {};

TEST_P(ParaDnnPoint, BuiltParametersEqualClosedForm) {
  const Point& p = GetParam();
  Workload w = p.make();
  Config c = w.default_config();
  c.apply_settings(p.settings);
  torch::manual_seed(0);
  auto model = w.build(c, torch::Device(torch::kCPU));
  EXPECT_EQ(count_trainable_parameters(model->module()), p.closed_form(c));
  EXPECT_EQ(p.closed_form(c), p.expected);
}

// N = nodes, L = layers: (in + 1) N + (L - 1)(N + 1) N + (N + 1) out.
const Point kFcPoints[] = {
    // default: 4001*512 + 31*513*512 + 513*600
    {"fc_default", workloads::make_paradnn_fc, workloads::paradnn_fc_parameters, {}, 10498648},
    {"fc_one_layer",
     workloads::make_paradnn_fc,
     workloads::paradnn_fc_parameters,
     {"layers=1"},
     2356312},
    {"fc_table2_min",
     workloads::make_paradnn_fc,
     workloads::paradnn_fc_parameters,
     {"layers=4", "nodes=32", "input=2000", "output=200"},
     73800},
    {"fc_odd",
     workloads::make_paradnn_fc,
     workloads::paradnn_fc_parameters,
     {"layers=7", "nodes=100", "input=13", "output=1000"},
     163000},
};

// Also checked against an independent PyTorch rebuild of resnet_model.py (TF padding rules).
const Point kCnnPoints[] = {
    {"cnn_default_bottleneck",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {},
     10564488},
    {"cnn_residual",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {"block=residual"},
     6962248},
    {"cnn_residual_table2_min",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {"block=residual", "blocks=1", "filters=16", "image_size=200", "classes=500"},
     374244},
    {"cnn_bottleneck_300",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {"block=bottleneck", "blocks=2", "filters=16", "image_size=300", "classes=1500"},
     13168684},
    {"cnn_residual_224",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {"block=residual", "blocks=3", "filters=8", "image_size=224", "classes=10"},
     275842},
    {"cnn_bottleneck_tiny",
     workloads::make_paradnn_cnn,
     workloads::paradnn_cnn_parameters,
     {"block=bottleneck", "blocks=1", "filters=4", "image_size=193", "classes=10"},
     34286},
};

// V E + L G (2 E^2 + E) + E V + V, G = 1 rnn / 4 lstm / 3 gru.
const Point kRnnPoints[] = {
    // default rnn: 32*500 + 5*(2*500^2 + 500) + 500*32 + 32
    {"rnn_default", workloads::make_paradnn_rnn, workloads::paradnn_rnn_parameters, {}, 2534532},
    {"lstm_default",
     workloads::make_paradnn_rnn,
     workloads::paradnn_rnn_parameters,
     {"cell=lstm"},
     10042032},
    {"gru_default",
     workloads::make_paradnn_rnn,
     workloads::paradnn_rnn_parameters,
     {"cell=gru"},
     7539532},
    {"rnn_table2_min",
     workloads::make_paradnn_rnn,
     workloads::paradnn_rnn_parameters,
     {"cell=rnn", "layers=1", "embedding=100", "vocab=2"},
     20502},
    {"lstm_deep",
     workloads::make_paradnn_rnn,
     workloads::paradnn_rnn_parameters,
     {"cell=lstm", "layers=13", "embedding=100", "vocab=1024"},
     1251024},
    {"gru_odd",
     workloads::make_paradnn_rnn,
     workloads::paradnn_rnn_parameters,
     {"cell=gru", "layers=9", "embedding=37", "vocab=128"},
     84525},
};

INSTANTIATE_TEST_SUITE_P(Fc, ParaDnnPoint, ::testing::ValuesIn(kFcPoints),
                         [](const auto& p) { return std::string(p.param.name); });
INSTANTIATE_TEST_SUITE_P(Cnn, ParaDnnPoint, ::testing::ValuesIn(kCnnPoints),
                         [](const auto& p) { return std::string(p.param.name); });
INSTANTIATE_TEST_SUITE_P(Rnn, ParaDnnPoint, ::testing::ValuesIn(kRnnPoints),
                         [](const auto& p) { return std::string(p.param.name); });

// Forward MACs of one example at the defaults: FC in N + (L-1) N^2 + N out; RNN T (L G 2E^2 +
// E V); CNN from the PyTorch rebuild of resnet_model.py (conv + linear, forward hooks).
TEST(ParaDnn, DefaultForwardMacs) {
  const std::pair<Workload (*)(), double> expected[] = {
      {workloads::make_paradnn_fc, 4000.0 * 512 + 31.0 * 512 * 512 + 512.0 * 600},
      {workloads::make_paradnn_cnn, 1363622240.0},
      {workloads::make_paradnn_rnn, 50.0 * (5.0 * 2 * 500 * 500 + 500.0 * 32)}};
  for (const auto& [make, macs] : expected) {
    Workload w = make();
    Config c = w.default_config();
    c.set_int("batch", 1);
    torch::manual_seed(0);
    auto model = w.build(c, torch::Device(torch::kCPU));
    EXPECT_DOUBLE_EQ(profile::forward_cost(*model).macs, macs) << w.info.name;
  }
}

// resnet_model.py: the stem has the MINIMUM filter count, every group's first block projects
// (also layer1, where the shapes agree), the stride sits on the bottleneck's 3x3 conv, and the
// 7x7 stride-1 average pool leaves 2x2 at 250x250, so the fc sees 4 x 8 x 4 x 32 features.
TEST(ParaDnn, CnnFollowsResnetModelPy) {
  Workload w = workloads::make_paradnn_cnn();
  auto model = w.build(w.default_config(), torch::Device(torch::kCPU));
  auto named = model->module().named_parameters();
  EXPECT_EQ(named["conv1.weight"].sizes(), (std::vector<int64_t>{32, 3, 7, 7}));
  ASSERT_NE(named.find("layer1.0.downsample.0.weight"), nullptr);
  EXPECT_EQ(named["layer1.0.downsample.0.weight"].sizes(), (std::vector<int64_t>{128, 32, 1, 1}));
  EXPECT_EQ(named.find("layer1.1.downsample.0.weight"), nullptr);
  EXPECT_EQ(named["layer4.3.conv3.weight"].sizes(), (std::vector<int64_t>{1024, 256, 1, 1}));
  EXPECT_EQ(named["fc.weight"].sizes(), (std::vector<int64_t>{1000, 1024 * 2 * 2}));
  auto* conv = model->module().named_modules()["layer2.0.conv2"]->as<torch::nn::Conv2d>();
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->options.stride()->at(0), 2);
  // The last BN of each block starts at scale 0 (init_zero).
  EXPECT_EQ(named["layer3.1.bn3.weight"].abs().sum().item<double>(), 0.0);
}

// Every value a user can get wrong names what is accepted.
TEST(ParaDnn, InvalidValuesThrowUsageErrorNamingValidValues) {
  struct Bad {
    Workload (*make)();
    const char* setting;
    const char* named;  // text the message must contain
  };
  const Bad bad[] = {
      {workloads::make_paradnn_rnn, "cell=foo", "rnn, lstm, gru"},
      {workloads::make_paradnn_rnn, "layers=0", "at least 1"},
      {workloads::make_paradnn_fc, "layers=0", "at least 1"},
      {workloads::make_paradnn_fc, "nodes=-1", "at least 1"},
      {workloads::make_paradnn_cnn, "block=xyz", "residual, bottleneck"},
      {workloads::make_paradnn_cnn, "blocks=0", "at least 1"},
      {workloads::make_paradnn_cnn, "image_size=192", "at least 193"},
      {workloads::make_paradnn_fc, "optimizer=lbfgs", "rmsprop, sgd, momentum, adam"},
  };
  for (const auto& b : bad) {
    Config c = b.make().default_config();
    try {
      c.apply_settings({b.setting});
      ADD_FAILURE() << b.setting << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(b.named), std::string::npos)
          << b.setting << ": '" << e.what() << "' does not name " << b.named;
    }
  }
}

// Each optimizer the key offers builds and trains.
TEST(ParaDnn, EveryOptimizerSteps) {
  for (const char* opt : {"rmsprop", "sgd", "momentum", "adam"}) {
    Workload w = workloads::make_paradnn_fc();
    Config c = w.default_config();
    c.apply_settings(w.info.tiny_config);
    c.apply_settings({std::string("optimizer=") + opt});
    torch::manual_seed(0);
    auto model = w.build(c, torch::Device(torch::kCPU));
    model->module().train();
    Batch b = model->make_batch();
    EXPECT_TRUE(std::isfinite(model->train_step(b))) << opt;
  }
}

}  // namespace
}  // namespace plumb
