// The int8 graph: the planner on hand-written traces whose answer is known (what each
// convolution absorbs, which outputs may stay int8, which adds run in int8), and the quantizer
// on small residual networks, where activations really stay int8 between layers, the model's
// output is fp32, and the result stays close to fp32.
#include <gtest/gtest.h>

#include "int8_test_util.h"
#include "plumb/run/int8_dataflow.h"
#include "plumb/run/int8_quantizer.h"
#include "plumb/run/output_error.h"

namespace plumb {
namespace {

using run::FlowOp;
using run::TracedCall;

// Weights are told apart by address only: these stand for five layers' weight data.
int kW1, kW2, kNorm1, kNorm2, kFc;

TracedCall call(const char* name, std::vector<int> producers, const void* weight = nullptr,
                float lo = -1, float hi = 1) {
  TracedCall c;
  c.name = name;
  c.op = run::classify_flow_op(name);
  c.producers = std::move(producers);
  c.data_arg = c.name == "aten::addmm" ? 1 : 0;
  c.weight = weight;
  c.lo = lo;
  c.hi = hi;
  return c;
}

// One residual block as ResNet runs it, then pooling and a classifier:
//   0 conv1(x)  1 bn1  2 relu_  3 conv2  4 bn2  5 add_(4, 2)  6 relu_  7 pool  8 flatten  9 fc
std::vector<TracedCall> residual_block() {
  return {call("aten::conv2d", {-1, -1}, &kW1, -3, 3),
          call("aten::batch_norm", {0, -1, -1, -1, -1}, &kNorm1, -2, 2),
          call("aten::relu_", {1}, nullptr, 0, 2),
          call("aten::conv2d", {2, -1}, &kW2, -5, 5),
          call("aten::batch_norm", {3, -1, -1, -1, -1}, &kNorm2, -4, 4),
          call("aten::add_", {4, 2}, nullptr, -4, 6),
          call("aten::relu_", {5}, nullptr, 0, 6),
          call("aten::adaptive_avg_pool2d", {6}),
          call("aten::flatten", {7}),
          call("aten::linear", {8, -1, -1}, &kFc)};
}

bool any_layer(const void*, FlowOp) {
  return true;
}

TEST(Int8Flow, AResidualBlockStaysInt8FromItsFirstConvolutionToTheClassifier) {
  const auto plan = run::plan_int8_flow(residual_block(), any_layer);
  ASSERT_EQ(plan.convs.size(), 2u);
  const auto& first = plan.convs.at(&kW1);
  EXPECT_EQ(first.batch_norm, &kNorm1);
  EXPECT_EQ(first.batch_norm_call, 1);
  EXPECT_TRUE(first.relu);  // bn1 -> relu_ is bn1's only reader
  EXPECT_TRUE(first.int8_out);
  EXPECT_EQ(first.lo, 0);  // what it returns now: the ReLU's range
  EXPECT_EQ(first.hi, 2);
  const auto& second = plan.convs.at(&kW2);
  EXPECT_EQ(second.batch_norm, &kNorm2);
  EXPECT_FALSE(second.relu);  // bn2 goes to the add, not to a ReLU
  EXPECT_TRUE(second.int8_out);
  EXPECT_EQ(second.lo, -4);
  ASSERT_EQ(plan.adds.size(), 1u);  // keyed by the first operand's convolution
  const auto& add = plan.adds.at(&kW2);
  EXPECT_TRUE(add.relu);
  EXPECT_EQ(add.lo, 0);
  EXPECT_EQ(add.hi, 6);
}

TEST(Int8Flow, AReaderWithoutAnInt8KernelKeepsEverythingUpstreamOfItFp32) {
  auto calls = residual_block();
  calls.push_back(call("aten::sigmoid", {6}));  // reads the block's output beside the pool
  const auto plan = run::plan_int8_flow(calls, any_layer);
  // The add's output cannot be int8, so neither can its operands: both convolutions hand on
  // fp32 (their batch norms and ReLUs are still folded and fused), and no add runs in int8.
  EXPECT_FALSE(plan.convs.at(&kW1).int8_out);
  EXPECT_FALSE(plan.convs.at(&kW2).int8_out);
  EXPECT_EQ(plan.convs.at(&kW1).batch_norm, &kNorm1);
  EXPECT_TRUE(plan.adds.empty());
}

TEST(Int8Flow, AnOutputNothingReadsLeavesTheModelInFp32) {
  std::vector<TracedCall> calls = {call("aten::conv2d", {-1, -1}, &kW1),
                                   call("aten::relu_", {0}, nullptr, 0, 1)};
  const auto plan = run::plan_int8_flow(calls, any_layer);
  EXPECT_TRUE(plan.convs.at(&kW1).relu);
  EXPECT_FALSE(plan.convs.at(&kW1).int8_out);
}

TEST(Int8Flow, ALayerThatIsNotQuantizedAcceptsNoInt8Input) {
  const auto plan = run::plan_int8_flow(residual_block(), [](const void* weight, FlowOp) {
    return weight != &kW2;  // conv2 stays fp32
  });
  EXPECT_EQ(plan.convs.count(&kW2), 0u);
  EXPECT_FALSE(plan.convs.at(&kW1).int8_out);  // conv2 reads it
  EXPECT_TRUE(plan.adds.empty());              // its first operand is no int8 convolution
}

// A second add whose first operand is the first add's (fused-ReLU) output: it has no
// convolution to key its range to, so it runs fp32, and so must everything it reads.
TEST(Int8Flow, AnAddWhoseFirstOperandIsNoConvolutionsOutputRunsFp32) {
  auto calls = residual_block();
  calls.resize(7);                              // up to the block's relu_ (call 6)
  calls.push_back(call("aten::add_", {6, 2}));  // 7: out += h
  calls.push_back(call("aten::adaptive_avg_pool2d", {7}));
  calls.push_back(call("aten::flatten", {8}));
  calls.push_back(call("aten::linear", {9, -1, -1}, &kFc));
  const auto plan = run::plan_int8_flow(calls, any_layer);
  EXPECT_TRUE(plan.adds.empty());
  EXPECT_FALSE(plan.convs.at(&kW1).int8_out);
  EXPECT_FALSE(plan.convs.at(&kW2).int8_out);
}

TEST(Int8Flow, CallsOfOneLayerThatDisagreeGetNoFoldAndNoInt8Output) {
  // The same convolution twice: once into a batch norm, once straight into the classifier.
  std::vector<TracedCall> calls = {
      call("aten::conv2d", {-1, -1}, &kW1), call("aten::batch_norm", {0, -1, -1, -1, -1}, &kNorm1),
      call("aten::flatten", {1}),           call("aten::linear", {2, -1, -1}, &kFc),
      call("aten::conv2d", {-1, -1}, &kW1), call("aten::sigmoid", {4})};
  const auto plan = run::plan_int8_flow(calls, any_layer);
  const auto& conv = plan.convs.at(&kW1);
  EXPECT_EQ(conv.batch_norm, nullptr);
  EXPECT_FALSE(conv.int8_out);
}

TEST(Int8Flow, OperatorNamesSayWhatAnInt8InputCanDo) {
  EXPECT_EQ(run::classify_flow_op("aten::conv2d"), FlowOp::kConv);
  EXPECT_EQ(run::classify_flow_op("aten::relu_"), FlowOp::kRelu);
  EXPECT_EQ(run::classify_flow_op("aten::max_pool2d"), FlowOp::kPassThrough);
  EXPECT_EQ(run::classify_flow_op("aten::dropout"), FlowOp::kPassThrough);  // in inference
  EXPECT_EQ(run::classify_flow_op("aten::add_"), FlowOp::kAdd);
  EXPECT_EQ(run::classify_flow_op("aten::addmm"), FlowOp::kLinear);
  EXPECT_EQ(run::classify_flow_op("aten::mean"), FlowOp::kOther);
}

// conv-bn-relu, conv-bn, residual add, ReLU, pooling, dropout, classifier: ResNet's block in
// miniature, with a classifier as alexnet's and vgg's read their features.
struct ResidualNetImpl : torch::nn::Module {
  ResidualNetImpl() {
    namespace nn = torch::nn;
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(8));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)));
    bn2 = register_module("bn2", nn::BatchNorm2d(8));
    dropout = register_module("dropout", nn::Dropout(0.5));  // an identity in inference
    fc = register_module("fc", nn::Linear(8, 4));
    torch::NoGradGuard no_grad;
    for (auto* bn : {bn1.get(), bn2.get()}) {  // batch norms that really change the values
      bn->running_mean.uniform_(-0.5, 0.5);
      bn->running_var.uniform_(0.5, 2.0);
      bn->weight.uniform_(0.5, 1.5);
      bn->bias.uniform_(-0.2, 0.2);
    }
  }
  // x: [B, 8, 8, 8] -> [B, 4]; `block` gets the block's output (before pooling)
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor* block = nullptr) {
    auto h = bn1->forward(conv1->forward(x)).relu_();  // [B, 8, 8, 8]
    auto out = bn2->forward(conv2->forward(h));
    out += h;
    out.relu_();
    if (block != nullptr) *block = out;
    auto features = torch::adaptive_avg_pool2d(out, {1, 1}).flatten(1);  // [B, 8]
    return fc->forward(dropout->forward(features));                      // [B, 4]
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResidualNet);

TEST(Int8Flow, ResidualNetworkRunsInt8BetweenLayersAndReturnsFp32CloseToIt) {
  torch::manual_seed(0);
  ResidualNet net;
  net->eval();
  c10::InferenceMode no_grad;
  const testing::Forward forward = [&](const torch::Tensor& x) { return net->forward(x); };
  const auto [inputs, reference] = testing::fp32_reference({4, 8, 8, 8}, forward);
  std::vector<torch::Tensor> quantized;
  run::Int8Quantizer q(*net);
  testing::calibrate_and_quantize(q, inputs, forward);
  torch::Tensor block;
  for (const auto& x : inputs) {
    auto y = net->forward(x, &block);
    EXPECT_FALSE(y.is_quantized());
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    quantized.push_back(y.clone());
  }
  EXPECT_TRUE(block.is_quantized());  // the block's output stayed int8 on its way to the pool
  const auto s = q.summary();
  EXPECT_EQ(s.static_layers, 3u);
  EXPECT_EQ(s.int8_outputs, 2u);
  EXPECT_EQ(s.int8_adds, 1u);
  EXPECT_EQ(s.fused_relus, 2u);  // conv1's and the add's
  EXPECT_EQ(s.folded, (std::vector<std::string>{"bn1 (into conv1)", "bn2 (into conv2)"}));
  EXPECT_TRUE(s.left_fp32.empty());
  const auto e = run::compare_outputs(reference, quantized);
  EXPECT_GT(e.relative_l2, 1e-4);  // int8 really ran
  EXPECT_LT(e.relative_l2, 0.05);
  EXPECT_GT(e.cosine, 0.99);
}

// The same block whose output the model returns (a feature extractor): the last layers'
// int8 would leave the model, so they hand on fp32, and the caller gets fp32.
struct FeatureNetImpl : torch::nn::Module {
  FeatureNetImpl() {
    namespace nn = torch::nn;
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(8, 8, 3).padding(1)));
  }
  torch::Tensor forward(const torch::Tensor& x) {  // [B, 3, 8, 8] -> [B, 8, 8, 8]
    return conv2->forward(torch::relu(conv1->forward(x)));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
};
TORCH_MODULE(FeatureNet);

TEST(Int8Flow, AModelOutputMadeByAConvolutionComesBackFp32) {
  torch::manual_seed(0);
  FeatureNet net;
  net->eval();
  c10::InferenceMode no_grad;
  const auto x = torch::randn({2, 3, 8, 8});
  const auto reference = net->forward(x).clone();
  run::Int8Quantizer q(*net);
  q.calibrate([&] { net->forward(x); });
  q.quantize();
  const auto y = net->forward(x);
  EXPECT_FALSE(y.is_quantized());
  EXPECT_EQ(q.summary().int8_outputs, 1u);  // conv1 -> relu -> conv2 stays int8
  EXPECT_LT(run::compare_outputs({reference}, {y.clone()}).relative_l2, 0.05);
}

}  // namespace
}  // namespace plumb
