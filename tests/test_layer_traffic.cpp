// Facebook Table-1 traffic traced from a real model: a small convolution and an FC layer
// whose ops, weights and activations are computed by hand, through the same path as
// `plumb info --intensity` (operator observer + layer recorder + parameters).
#include <gtest/gtest.h>

#include "plumb/analysis/intensity.h"
#include "plumb/core/layer_scope.h"
#include "plumb/jobs/layer_traffic_trace.h"
#include "workload_test_util.h"

namespace plumb {
namespace {

// input [1, 8, 64, 64] -> conv 3x3, 8 -> 16, pad 1, no bias -> [1, 16, 64, 64]
//   -> flatten [1, 65536] -> fc 65536 -> 10, no bias -> [1, 10]
struct ConvFcImpl : torch::nn::Module {
  ConvFcImpl()
      : conv(register_module(
            "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).padding(1).bias(false)))),
        fc(register_module("fc",
                           torch::nn::Linear(torch::nn::LinearOptions(65536, 10).bias(false)))) {}
  torch::nn::Conv2d conv;
  torch::nn::Linear fc;
};
TORCH_MODULE(ConvFc);

class ConvFcModel : public Model {
 public:
  torch::nn::Module& module() override { return *net_; }
  Batch make_batch() override { return {{torch::randn({1, 8, 64, 64})}, 1.0}; }
  double train_step(const Batch&) override { return 0; }
  double infer_step(const Batch& b) override {
    auto y = run_layer("conv", net_->conv, b.tensors[0]).flatten(1);  // [1, 65536]
    return run_layer("fc", net_->fc, y).sum().item<double>();         // [1, 10]
  }

 private:
  ConvFc net_;
};

Workload conv_fc_workload() {
  Workload w = testing::test_workload_shell("convfc", "conv + fc", 1);
  w.build = [](const Config&, const torch::Device&) -> std::unique_ptr<Model> {
    return std::make_unique<ConvFcModel>();
  };
  return w;
}

TEST(LayerTraffic, ConvolutionAndFullyConnectedMatchHandComputation) {
  const Workload w = conv_fc_workload();
  const auto t = jobs::trace_layer_traffic(w, w.default_config());
  EXPECT_EQ(t.element_bytes, 4.0);
  ASSERT_EQ(t.traffic.layers.size(), 2u);
  const auto& conv = t.traffic.layers[0];
  const auto& fc = t.traffic.layers[1];
  EXPECT_EQ(conv.layer, "conv");
  EXPECT_EQ(fc.layer, "fc");
  // conv: 2 x Cout 16 x Cin 8 x 3 x 3 x 64 x 64 outputs = 9,437,184 ops; 16 x 8 x 3 x 3 =
  // 1,152 weights; activations 8 x 64 x 64 in + 16 x 64 x 64 out = 98,304.
  EXPECT_DOUBLE_EQ(conv.ops, 9437184.0);
  EXPECT_DOUBLE_EQ(conv.weight_elements, 1152.0);
  EXPECT_DOUBLE_EQ(conv.activation_elements, 98304.0);
  // fc: 2 x 65,536 x 10 = 1,310,720 ops; 655,360 weights; 65,536 in + 10 out.
  EXPECT_DOUBLE_EQ(fc.ops, 1310720.0);
  EXPECT_DOUBLE_EQ(fc.weight_elements, 655360.0);
  EXPECT_DOUBLE_EQ(fc.activation_elements, 65546.0);

  const auto s = analysis::summarize_intensity(t.traffic.layers);
  EXPECT_DOUBLE_EQ(s.layers[0].per_weight, 8192.0);  // 9,437,184 / 1,152
  EXPECT_DOUBLE_EQ(s.layers[0].per_weight_and_activation, 9437184.0 / (1152.0 + 98304.0));
  EXPECT_DOUBLE_EQ(s.layers[1].per_weight, 2.0);  // an FC at batch 1: one MAC per weight
  EXPECT_DOUBLE_EQ(s.layers[1].per_weight_and_activation, 1310720.0 / (655360.0 + 65546.0));
  EXPECT_DOUBLE_EQ(s.min_per_weight, 2.0);
  EXPECT_DOUBLE_EQ(s.model_per_weight, (9437184.0 + 1310720.0) / (1152.0 + 655360.0));
}

// A lookup reads the rows it gathers, not its table: 3 bags of 4 indices into a table of
// 100,000 rows of 16 fp32 values.
class BagModel : public Model {
 public:
  BagModel()
      : bag_(
            torch::nn::EmbeddingBag(torch::nn::EmbeddingBagOptions(100000, 16).mode(torch::kSum))) {
  }
  torch::nn::Module& module() override { return *bag_; }
  Batch make_batch() override {
    return {{torch::randint(100000, {12}, torch::kLong), torch::tensor({0, 4, 8}, torch::kLong)},
            3.0};
  }
  double train_step(const Batch&) override { return 0; }
  double infer_step(const Batch& b) override {
    torch::Tensor pooled;  // [3, 16]
    {
      LayerScope scope("bag");
      pooled = scope.output(bag_->forward(b.tensors[0], b.tensors[1]));
    }
    return pooled.sum().item<double>();
  }

 private:
  torch::nn::EmbeddingBag bag_;
};

TEST(LayerTraffic, EmbeddingLookupsReadTheirRowsNotTheTable) {
  Workload w = conv_fc_workload();
  w.build = [](const Config&, const torch::Device&) -> std::unique_ptr<Model> {
    return std::make_unique<BagModel>();
  };
  const auto t = jobs::trace_layer_traffic(w, w.default_config());
  ASSERT_EQ(t.traffic.layers.size(), 1u);
  const auto& bag = t.traffic.layers[0];
  EXPECT_EQ(bag.layer, "bag");
  EXPECT_DOUBLE_EQ(t.traffic.parameter_elements[0], 1600000.0);  // the table it holds
  // Sum pooling: one add per fetched element, 12 rows x 16 = 192; LibTorch's bag-size
  // bookkeeping inside the call adds 3 integer subtractions of offsets.
  EXPECT_DOUBLE_EQ(bag.ops, 195.0);
  // What the lookup reads: 192 row elements, and its 12 indices and 3 offsets (int64, 120
  // bytes = 30 four-byte elements; the integer bookkeeping around it is not the table's
  // traffic); the whole table (1.6 M elements) would bury the 1 op per
  // element that the Facebook study's Table 1 gives embeddings.
  EXPECT_DOUBLE_EQ(bag.weight_elements, 222.0);
  EXPECT_NEAR(bag.ops / bag.weight_elements, 1.0, 0.15);
}

}  // namespace
}  // namespace plumb
