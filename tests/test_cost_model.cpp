// Tests of the operator cost model against hand-computed FLOPs, MACs and bytes. Each
// expected value is worked out in the comment above it, so a wrong formula (swapped
// argument positions, a transposed conv costed as a forward one, a 4-byte element size
// assumed for fp16/int8) fails an assertion.
#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/profile/cost_model.h"
#include "plumb/profile/op_call.h"

namespace plumb::profile {
namespace {

using c10::ScalarType;

TensorMeta T(std::vector<int64_t> shape, ScalarType dtype = ScalarType::Float) {
  TensorMeta t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

TensorMeta sparse(std::vector<int64_t> shape, int64_t nnz, ScalarType dtype = ScalarType::Float) {
  TensorMeta t = T(std::move(shape), dtype);
  t.sparse = true;
  t.sparse_nnz = nnz;
  return t;
}

ArgMeta tensor(const TensorMeta& t) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kTensor;
  a.tensors.push_back(t);
  return a;
}

ArgMeta tensors(std::vector<TensorMeta> list) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kTensorList;
  a.tensors = std::move(list);
  return a;
}

ArgMeta none() {
  return ArgMeta{};
}

ArgMeta i(int64_t v) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kInt;
  a.ints = {v};
  return a;
}

ArgMeta ints(std::vector<int64_t> v) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kIntList;
  a.ints = std::move(v);
  return a;
}

ArgMeta d(double v) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kDouble;
  a.real = v;
  return a;
}

ArgMeta b(bool v) {
  ArgMeta a;
  a.kind = ArgMeta::Kind::kBool;
  a.flag = v;
  return a;
}

OpCall op(const std::string& name, std::vector<ArgMeta> inputs,
          std::vector<TensorMeta> outputs = {}) {
  OpCall c;
  c.name = "aten::" + name;
  c.inputs = std::move(inputs);
  c.outputs = std::move(outputs);
  return c;
}

void expect_cost(const OpCost& c, double flops, double macs, double read, double written) {
  EXPECT_TRUE(c.costed);
  EXPECT_DOUBLE_EQ(c.flops, flops);
  EXPECT_DOUBLE_EQ(c.macs, macs);
  EXPECT_DOUBLE_EQ(c.bytes_read, read);
  EXPECT_DOUBLE_EQ(c.bytes_written, written);
}

// aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups)
OpCall convolution(const TensorMeta& x, const TensorMeta& w, const ArgMeta& bias,
                   std::vector<int64_t> stride, std::vector<int64_t> pad, bool transposed,
                   std::vector<int64_t> out_pad, int64_t groups) {
  const size_t r = stride.size();
  return op("convolution",
            {tensor(x), tensor(w), bias, ints(std::move(stride)), ints(std::move(pad)),
             ints(std::vector<int64_t>(r, 1)), b(transposed), ints(std::move(out_pad)), i(groups)});
}

TEST(CostModel, Conv3x3Stride1Pad1) {
  // x [2,3,8,8], w [4,3,3,3] -> y [2,4,8,8].
  // MACs = N*Cout*H*W*Cin*k*k = 2*4*64*3*9 = 13824; FLOPs = 2*MACs = 27648.
  // read = (2*3*64 + 4*3*9) * 4 B = (384 + 108) * 4 = 1968; written = 2*4*64*4 = 2048.
  const OpCall c =
      convolution(T({2, 3, 8, 8}), T({4, 3, 3, 3}), none(), {1, 1}, {1, 1}, false, {0, 0}, 1);
  expect_cost(cost_of(c), 27648, 13824, 1968, 2048);
}

TEST(CostModel, ConvBiasAddsOnePerOutput) {
  // As above with bias [4]: + 2*4*64 = 512 adds; + 16 bytes read.
  const OpCall c = convolution(T({2, 3, 8, 8}), T({4, 3, 3, 3}), tensor(T({4})), {1, 1}, {1, 1},
                               false, {0, 0}, 1);
  expect_cost(cost_of(c), 27648 + 512, 13824, 1968 + 16, 2048);
}

TEST(CostModel, StridedConvMkldnnArgumentOrder) {
  // mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups): padding
  // comes before stride. x [1,3,7,7], w [8,3,3,3], pad 1, stride 2:
  // out = (7 + 2 - 3) / 2 + 1 = 4. MACs = 8*16*3*9 = 3456. (Stride 1 / pad 2 would give 9.)
  // read = (147 + 216) * 4 = 1452; written = 8*16*4 = 512.
  const OpCall c =
      op("mkldnn_convolution", {tensor(T({1, 3, 7, 7})), tensor(T({8, 3, 3, 3})), none(),
                                ints({1, 1}), ints({2, 2}), ints({1, 1}), i(1)});
  expect_cost(cost_of(c), 6912, 3456, 1452, 512);
}

TEST(CostModel, GroupedConv) {
  // x [2,8,5,5], w [6,4,3,3], groups 2, pad 1 -> y [2,6,5,5].
  // MACs = 2*6*25*(8/2)*9 = 10800. read = (400 + 216)*4 = 2464; written = 300*4 = 1200.
  const OpCall c =
      convolution(T({2, 8, 5, 5}), T({6, 4, 3, 3}), none(), {1, 1}, {1, 1}, false, {0, 0}, 2);
  expect_cost(cost_of(c), 21600, 10800, 2464, 1200);
}

TEST(CostModel, DepthwiseConv) {
  // x [1,16,10,10], w [16,1,3,3], groups 16, pad 1 -> y [1,16,10,10].
  // MACs = 16*100*1*9 = 14400. read = (1600 + 144)*4 = 6976; written = 1600*4 = 6400.
  const OpCall c =
      convolution(T({1, 16, 10, 10}), T({16, 1, 3, 3}), none(), {1, 1}, {1, 1}, false, {0, 0}, 16);
  expect_cost(cost_of(c), 28800, 14400, 6976, 6400);
}

TEST(CostModel, TransposedConv) {
  // x [1,4,5,5], w [Cin=4, Cout/g=2, 3, 3], stride 2, pad 1, output_padding 1:
  // out = (5-1)*2 - 2 + 2 + 1 + 1 = 10 -> y [1,2,10,10].
  // MACs = N*Cin*prod(in)*(Cout/g)*prod(k) = 4*25*2*9 = 1800 (the forward-conv formula
  // over the output would give 2*100*4*9 = 7200).
  // read = (100 + 72)*4 = 688; written = 200*4 = 800.
  const OpCall c =
      convolution(T({1, 4, 5, 5}), T({4, 2, 3, 3}), none(), {2, 2}, {1, 1}, true, {1, 1}, 1);
  expect_cost(cost_of(c), 3600, 1800, 688, 800);
}

TEST(CostModel, Conv3d) {
  // x [1,2,4,4,4], w [3,2,3,3,3], pad 1 -> y [1,3,4,4,4].
  // MACs = 3*64*2*27 = 10368. read = (128 + 162)*4 = 1160; written = 192*4 = 768.
  const OpCall c = convolution(T({1, 2, 4, 4, 4}), T({3, 2, 3, 3, 3}), none(), {1, 1, 1}, {1, 1, 1},
                               false, {0, 0, 0}, 1);
  expect_cost(cost_of(c), 20736, 10368, 1160, 768);
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask)
OpCall conv_backward(ArgMeta mask, std::vector<TensorMeta> outputs = {}) {
  return op(
      "convolution_backward",
      {tensor(T({2, 4, 8, 8})), tensor(T({2, 3, 8, 8})), tensor(T({4, 3, 3, 3})), ints({4}),
       ints({1, 1}), ints({1, 1}), ints({1, 1}), b(false), ints({0, 0}), i(1), std::move(mask)},
      std::move(outputs));
}

TEST(CostModel, ConvolutionBackwardEveryOutputMask) {
  // Forward MACs 13824 (the 3x3 case). grad_input and grad_weight cost the forward MACs
  // each; grad_bias = one add per grad_output element (2*4*64 = 512).
  // read: grad_output 2048 B always; + input 1536 B for grad_weight; + weight 432 B for
  // grad_input. written: grad_input 1536, grad_weight 432, grad_bias 16.
  for (int m = 0; m < 8; ++m) {
    const bool gi = (m & 1) != 0, gw = (m & 2) != 0, gb = (m & 4) != 0;
    SCOPED_TRACE("output_mask " + std::to_string(gi) + std::to_string(gw) + std::to_string(gb));
    const OpCost c = cost_of(conv_backward(ints({gi, gw, gb})));
    const double macs = 13824.0 * (gi + gw);
    expect_cost(c, 2 * macs + (gb ? 512 : 0), macs, 2048 + (gw ? 1536 : 0) + (gi ? 432 : 0),
                (gi ? 1536 : 0) + (gw ? 432 : 0) + (gb ? 16 : 0));
  }
}

TEST(CostModel, ConvolutionBackwardMaskFromRecordedOutputs) {
  // The observer records bool lists as lists of undefined tensors; the mask then comes from
  // which outputs are defined: grad_input and grad_bias here.
  const OpCall c = conv_backward(tensors({TensorMeta{}, TensorMeta{}, TensorMeta{}}),
                                 {T({2, 3, 8, 8}), TensorMeta{}, T({4})});
  expect_cost(cost_of(c), 2 * 13824 + 512, 13824, 2048 + 432, 1536 + 16);
}

TEST(CostModel, AddmmCountsBiasAdd) {
  // addmm(bias [16], m1 [8,32], m2 [32,16], beta 1, alpha 1):
  // MACs = 8*16*32 = 4096; FLOPs = 8192 + 8*16 bias adds = 8320.
  // read = (16 + 256 + 512)*4 = 3136; written = 128*4 = 512.
  const OpCall c =
      op("addmm", {tensor(T({16})), tensor(T({8, 32})), tensor(T({32, 16})), i(1), i(1)});
  expect_cost(cost_of(c), 8320, 4096, 3136, 512);
  // alpha = 0.5 scales the product: one more multiply per output element.
  const OpCall scaled =
      op("addmm", {tensor(T({16})), tensor(T({8, 32})), tensor(T({32, 16})), i(1), d(0.5)});
  EXPECT_DOUBLE_EQ(cost_of(scaled).flops, 8320 + 128);
}

TEST(CostModel, Mm) {
  // [8,32] x [32,16]: MACs 4096, FLOPs 8192; read (256+512)*4 = 3072; written 512.
  expect_cost(cost_of(op("mm", {tensor(T({8, 32})), tensor(T({32, 16}))})), 8192, 4096, 3072, 512);
}

TEST(CostModel, Bf16MmUsesTwoByteElements) {
  // bf16 [4,6] x [6,5]: MACs 120; read (24+30)*2 = 108; written 20*2 = 40.
  const OpCall c =
      op("mm", {tensor(T({4, 6}, ScalarType::BFloat16)), tensor(T({6, 5}, ScalarType::BFloat16))});
  expect_cost(cost_of(c), 240, 120, 108, 40);
}

TEST(CostModel, Bmm) {
  // [3,4,5] x [3,5,6]: MACs = 3*4*6*5 = 360; read (60+90)*4 = 600; written 72*4 = 288.
  expect_cost(cost_of(op("bmm", {tensor(T({3, 4, 5})), tensor(T({3, 5, 6}))})), 720, 360, 600, 288);
}

TEST(CostModel, Linear) {
  // linear(x [2,7,10], w [20,10], b [20]): rows 14, MACs = 14*20*10 = 2800;
  // FLOPs = 5600 + 280 bias adds. read = (140+200+20)*4 = 1440; written = 280*4 = 1120.
  const OpCall c = op("linear", {tensor(T({2, 7, 10})), tensor(T({20, 10})), tensor(T({20}))});
  expect_cost(cost_of(c), 5880, 2800, 1440, 1120);
}

TEST(CostModel, BatchNormForwardTrainingAndEval) {
  // native_batch_norm(x [2,3,4,4] = 96, w, b, running_mean, running_var [3], training,
  // momentum, eps). Training: 6 FLOPs/element = 576. read = (96 + 4*3)*4 = 432;
  // written = y 384 + save_mean/save_invstd 2*3*4 + running stats updated 2*3*4 = 432.
  auto bn = [](bool training) {
    return op("native_batch_norm", {tensor(T({2, 3, 4, 4})), tensor(T({3})), tensor(T({3})),
                                    tensor(T({3})), tensor(T({3})), b(training), d(0.1), d(1e-5)});
  };
  expect_cost(cost_of(bn(true)), 576, 0, 432, 432);
  // Eval: 2 FLOPs/element (x*scale + shift) = 192; writes only y.
  expect_cost(cost_of(bn(false)), 192, 0, 432, 384);
}

TEST(CostModel, Relu) {
  // 100 elements: one comparison each; 400 B in, 400 B out.
  expect_cost(cost_of(op("relu", {tensor(T({10, 10}))})), 100, 0, 400, 400);
}

TEST(CostModel, AddBroadcastsOutputShape) {
  // [4,1,3] + [5,1] -> [4,5,3] = 60 elements. read (12 + 5)*4 = 68; written 60*4 = 240.
  const OpCall c = op("add", {tensor(T({4, 1, 3})), tensor(T({5, 1})), i(1)});
  expect_cost(cost_of(c), 60, 0, 68, 240);
  // alpha != 1 (SGD's p.add_(g, -lr)) is a multiply-add: 2 per element.
  const OpCall scaled = op("add", {tensor(T({4, 1, 3})), tensor(T({5, 1})), d(-0.1)});
  EXPECT_DOUBLE_EQ(cost_of(scaled).flops, 120);
}

TEST(CostModel, Fp16AddUsesTwoByteElements) {
  // half [8,8] + half [8,8]: 64 FLOPs; read 2*64*2 = 256; written 64*2 = 128.
  const OpCall c =
      op("add", {tensor(T({8, 8}, ScalarType::Half)), tensor(T({8, 8}, ScalarType::Half)), i(1)});
  expect_cost(cost_of(c), 64, 0, 256, 128);
}

TEST(CostModel, Int8CopyUsesOneByteElements) {
  // copy_(self int8 [10,10], src int8): reads src 100 B, writes self 100 B; 0 FLOPs.
  const OpCall same = op("copy_", {tensor(T({10, 10}, ScalarType::Char)),
                                   tensor(T({10, 10}, ScalarType::Char)), b(false)});
  expect_cost(cost_of(same), 0, 0, 100, 100);
  // Quantising copy from fp32: reads 400 B, writes 100 B.
  const OpCall convert =
      op("copy_", {tensor(T({10, 10}, ScalarType::Char)), tensor(T({10, 10})), b(false)});
  expect_cost(cost_of(convert), 0, 0, 400, 100);
}

TEST(CostModel, EmbeddingForwardReadsOnlyLookedUpRows) {
  // embedding(weight [1000,64], indices int64 [4,8]) -> [4,8,64] = 2048 elements.
  // read = indices 32*8 + rows 2048*4 = 8448 (not the 256,000 B table); written = 8192.
  const OpCall c = op("embedding", {tensor(T({1000, 64})), tensor(T({4, 8}, ScalarType::Long)),
                                    i(-1), b(false), b(true)});
  expect_cost(cost_of(c), 0, 0, 8448, 8192);
}

TEST(CostModel, EmbeddingSparseBackward) {
  // embedding_sparse_backward(grad [4,8,64], indices [4,8], num_weights 1000, padding_idx,
  // scale_grad_by_freq): read grad 8192 + indices 256; writes a COO grad of 32 rows:
  // values 32*64*4 = 8192 + indices 32*8 = 256.
  const OpCall c =
      op("embedding_sparse_backward",
         {tensor(T({4, 8, 64})), tensor(T({4, 8}, ScalarType::Long)), i(1000), i(-1), b(false)});
  expect_cost(cost_of(c), 0, 0, 8448, 8448);
  // The dense variant accumulates: one add per grad element, writes the [1000,64] grad.
  const OpCall dense =
      op("embedding_dense_backward",
         {tensor(T({4, 8, 64})), tensor(T({4, 8}, ScalarType::Long)), i(1000), i(-1), b(false)});
  expect_cost(cost_of(dense), 2048, 0, 8448, 256000);
}

TEST(CostModel, SparseGradientUpdateTouchesOnlyItsRows) {
  // SGD on a sparse embedding grad: p [1000,64].add_(g sparse nnz 32, alpha -0.5):
  // 32*64 = 2048 elements, multiply-add = 4096 FLOPs. read = g (8192 + 256) + touched rows
  // of p 8192 = 16640; written = 8192.
  const OpCall c = op("add_", {tensor(T({1000, 64})), tensor(sparse({1000, 64}, 32)), d(-0.5)});
  expect_cost(cost_of(c), 4096, 0, 16640, 8192);
}

TEST(CostModel, OutOverloadWritesItsOutArgument) {
  // RecordFunction names mul.out "aten::mul" too, with (self, other, out): the out tensor
  // is written, not read. a [10] * b [10]: 10 FLOPs, read 80 B, written 40 B.
  const OpCall c = op("mul", {tensor(T({10})), tensor(T({10})), tensor(T({10}))});
  expect_cost(cost_of(c), 10, 0, 80, 40);
  // Dense + sparse into a dense out (what autograd's accumulation runs): arithmetic on the
  // 32 sparse rows only (x2 for alpha), reads self 256,000 B + the sparse grad 8448 B,
  // writes the 256,000 B result.
  const OpCall sparse_add = op("add", {tensor(T({1000, 64})), tensor(sparse({1000, 64}, 32)),
                                       d(-0.5), tensor(T({1000, 64}))});
  expect_cost(cost_of(sparse_add), 4096, 0, 256000 + 8448, 256000);
}

TEST(CostModel, SumReduction) {
  // sum(x [4,5,6], dim [1], keepdim false) -> [4,6]: 120 adds; read 480; written 96.
  const OpCall c = op("sum", {tensor(T({4, 5, 6})), ints({1}), b(false), none()});
  expect_cost(cost_of(c), 120, 0, 480, 96);
  // Full sum of int32 [10]: int64 result (8 B).
  const OpCall full = op("sum", {tensor(T({10}, ScalarType::Int)), none()});
  expect_cost(cost_of(full), 10, 0, 40, 8);
}

TEST(CostModel, MaxPool2dWithIndices) {
  // x [1,2,6,6], kernel 3, stride 2, pad 1: out = (6 + 2 - 2 - 1)/2 + 1 = 3 -> [1,2,3,3] = 18.
  // FLOPs = 18 * 9 comparisons = 162; read 72*4 = 288; written values 18*4 + int64 indices
  // 18*8 = 216.
  const OpCall c = op(
      "max_pool2d_with_indices",
      {tensor(T({1, 2, 6, 6})), ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({1, 1}), b(false)});
  expect_cost(cost_of(c), 162, 0, 288, 216);
  // ResNet-50 stem pool: [1,64,112,112] -> 56x56.
  const OpCall stem =
      op("max_pool2d_with_indices", {tensor(T({1, 64, 112, 112})), ints({3, 3}), ints({2, 2}),
                                     ints({1, 1}), ints({1, 1}), b(false)});
  EXPECT_DOUBLE_EQ(cost_of(stem).flops, 64.0 * 56 * 56 * 9);
}

TEST(CostModel, AdaptiveAvgPoolToOneByOne) {
  // ResNet-50 head: [2,2048,7,7] -> [2,2048,1,1]: 49 adds + 1 division per output.
  const OpCall c = op("adaptive_avg_pool2d", {tensor(T({2, 2048, 7, 7})), ints({1, 1})});
  expect_cost(cost_of(c), 2.0 * 2048 * 50, 0, 2.0 * 2048 * 49 * 4, 2.0 * 2048 * 4);
}

TEST(CostModel, LogSoftmax) {
  // _log_softmax(x [4,10], dim 1, half_to_float false): 5 FLOPs/element = 200; 160 B each way.
  expect_cost(cost_of(op("_log_softmax", {tensor(T({4, 10})), i(1), b(false)})), 200, 0, 160, 160);
}

TEST(CostModel, NllLoss) {
  // nll_loss_forward(x [4,10], target int64 [4], weight None, reduction mean, ignore -100):
  // 4 accumulates + 1 division = 5 FLOPs. read = target 32 + the 4 picked log-probs 16 = 48;
  // written = loss 4 + total_weight 4 = 8.
  const OpCall c = op("nll_loss_forward", {tensor(T({4, 10})), tensor(T({4}, ScalarType::Long)),
                                           none(), i(1), i(-100)});
  expect_cost(cost_of(c), 5, 0, 48, 8);
}

TEST(CostModel, AdagradAddcdivWithValue) {
  // addcdiv_(p [100], g, std, value -0.01): divide, add, and the value multiply = 3/element.
  // read 3*400; written 400.
  const OpCall c = op("addcdiv_", {tensor(T({100})), tensor(T({100})), tensor(T({100})), d(-0.01)});
  expect_cost(cost_of(c), 300, 0, 1200, 400);
}

TEST(CostModel, RecordedOutputsWinOverRecomputation) {
  // Written bytes come from the recorded output when the observer captured it.
  const OpCall c = op("relu", {tensor(T({10, 10}))}, {T({10, 10}, ScalarType::Half)});
  EXPECT_DOUBLE_EQ(cost_of(c).bytes_written, 200);
}

TEST(CostModel, ViewOpIsCostedAtZero) {
  const OpCost c = cost_of(op("view", {tensor(T({4, 5})), ints({20})}, {T({20})}));
  expect_cost(c, 0, 0, 0, 0);
  expect_cost(cost_of(op("transpose", {tensor(T({4, 5})), i(0), i(1)})), 0, 0, 0, 0);
  // Metadata queries that sparse kernels dispatch do no work either.
  expect_cost(cost_of(op("_nnz", {tensor(sparse({1000, 64}, 32))})), 0, 0, 0, 0);
}

TEST(CostModel, UnknownOperatorIsNotCosted) {
  const OpCost c = cost_of(op("definitely_not_an_operator", {tensor(T({4, 5}))}));
  EXPECT_FALSE(c.costed);
  EXPECT_DOUBLE_EQ(c.flops, 0);
  // A known name with unusable arguments is not costed either (never a silent zero).
  EXPECT_FALSE(cost_of(op("mm", {tensor(T({4, 5}))})).costed);
}

TEST(CostModel, OperatorNamesListTheTable) {
  const std::vector<std::string> names = costed_operator_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* expected :
       {"aten::convolution", "aten::convolution_backward", "aten::mkldnn_convolution",
        "aten::addmm", "aten::native_batch_norm_backward", "aten::max_pool2d_with_indices_backward",
        "aten::embedding_sparse_backward", "aten::_log_softmax_backward_data", "aten::view",
        "aten::multinomial", "aten::_local_scalar_dense"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "aten::definitely_not_an_operator"), names.end());
}

// ---- GEMM shapes (plumb gemm) ----

void expect_gemms(const OpCost& c, std::vector<std::pair<GemmShape, std::string>> expected) {
  ASSERT_EQ(c.gemms.size(), expected.size());
  double macs = 0;
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(expected[k].second);
    EXPECT_EQ(c.gemms[k].shape, expected[k].first) << c.gemms[k].shape.text();
    EXPECT_EQ(c.gemms[k].role, expected[k].second);
    macs += c.gemms[k].shape.macs();
  }
  // The shapes account for exactly the MACs the rule counts.
  EXPECT_DOUBLE_EQ(macs, c.macs);
}

TEST(CostModel, ConvolutionGemmShapesAreIm2col) {
  // x [2,3,8,8], w [4,3,3,3] -> y [2,4,8,8]: M = 2*64 output pixels, N = 4 output channels,
  // K = 3 input channels * 9 taps.
  expect_gemms(cost_of(convolution(T({2, 3, 8, 8}), T({4, 3, 3, 3}), none(), {1, 1}, {1, 1}, false,
                                   {0, 0}, 1)),
               {{{1, 128, 4, 27}, "forward"}});
  // groups 2: x [2,8,5,5], w [6,4,3,3]: 2 GEMMs of 50 pixels x 3 channels x (4 * 9).
  expect_gemms(cost_of(convolution(T({2, 8, 5, 5}), T({6, 4, 3, 3}), none(), {1, 1}, {1, 1}, false,
                                   {0, 0}, 2)),
               {{{2, 50, 3, 36}, "forward"}});
  // Depthwise: 16 GEMMs of 100 pixels x 1 channel x 9 taps (why it is memory-bound).
  expect_gemms(cost_of(convolution(T({1, 16, 10, 10}), T({16, 1, 3, 3}), none(), {1, 1}, {1, 1},
                                   false, {0, 0}, 16)),
               {{{16, 100, 1, 9}, "forward"}});
  // Transposed, w [Cin 4, Cout 2, 3, 3] over 25 input pixels: N = 2 * 9 columns, K = 4.
  expect_gemms(cost_of(convolution(T({1, 4, 5, 5}), T({4, 2, 3, 3}), none(), {2, 2}, {1, 1}, true,
                                   {1, 1}, 1)),
               {{{1, 25, 18, 4}, "forward"}});
}

TEST(CostModel, ConvolutionBackwardGemmShapes) {
  // The 3x3 case: grad_input = dY [128 pixels x 4] x W [4 x 27]; grad_weight = dY^T [4 x 128]
  // x im2col(X) [128 x 27]. grad_bias is no GEMM.
  expect_gemms(cost_of(conv_backward(ints({1, 1, 1}))),
               {{{1, 128, 27, 4}, "grad_input"}, {{1, 4, 27, 128}, "grad_weight"}});
  expect_gemms(cost_of(conv_backward(ints({0, 1, 0}))), {{{1, 4, 27, 128}, "grad_weight"}});
}

TEST(CostModel, MatrixProductGemmShapes) {
  expect_gemms(cost_of(op("mm", {tensor(T({8, 32})), tensor(T({32, 16}))})),
               {{{1, 8, 16, 32}, "forward"}});
  expect_gemms(cost_of(op("bmm", {tensor(T({3, 4, 5})), tensor(T({3, 5, 6}))})),
               {{{3, 4, 6, 5}, "forward"}});
  expect_gemms(
      cost_of(op("addmm", {tensor(T({16})), tensor(T({8, 32})), tensor(T({32, 16})), i(1), i(1)})),
      {{{1, 8, 16, 32}, "forward"}});
  // linear over [2,7,10] rows: M = 14.
  expect_gemms(cost_of(op("linear", {tensor(T({2, 7, 10})), tensor(T({20, 10})), tensor(T({20}))})),
               {{{1, 14, 20, 10}, "forward"}});
  // lstm_cell(x [3,10], (h, c) [3,8], w_ih [32,10], w_hh [32,8]): one GEMM per weight matrix.
  expect_gemms(cost_of(op("lstm_cell", {tensor(T({3, 10})), tensors({T({3, 8}), T({3, 8})}),
                                        tensor(T({32, 10})), tensor(T({32, 8})), none(), none()})),
               {{{1, 3, 32, 10}, "forward"}, {{1, 3, 32, 8}, "forward"}});
  // Elementwise work has no GEMM.
  EXPECT_TRUE(cost_of(op("relu", {tensor(T({4, 4}))})).gemms.empty());
}

TEST(CostModel, SignatureReadsBackToTheSameCall) {
  const std::vector<OpCall> calls = {
      convolution(T({2, 3, 8, 8}), T({4, 3, 3, 3}), tensor(T({4})), {1, 1}, {1, 1}, false, {0, 0},
                  1),
      conv_backward(ints({1, 1, 0})),
      op("addmm", {tensor(T({16})), tensor(T({8, 32}, ScalarType::BFloat16)), tensor(T({32, 16})),
                   i(1), d(0.5)}),
      op("index", {tensor(T({10, 4})), tensors({TensorMeta{}, T({3}, ScalarType::Long)})}),
      op("embedding_backward",
         {tensor(sparse({100, 16}, 5)), tensor(T({5}, ScalarType::Long)), ints({}), b(true)}),
      op("sum", {tensor(T({3, 4})), none()})};
  for (const auto& c : calls) {
    const std::string text = signature(c);
    SCOPED_TRACE(text);
    const OpCall back = parse_signature(text);
    EXPECT_EQ(signature(back), text);
    const OpCost a = cost_of(c), b = cost_of(back);
    EXPECT_DOUBLE_EQ(a.flops, b.flops);
    EXPECT_DOUBLE_EQ(a.macs, b.macs);
    EXPECT_EQ(a.gemms.size(), b.gemms.size());
  }
  for (const char* bad : {"", "|Float[2]", "aten::mm|Float[2,x]", "aten::mm|Quux[2]",
                          "aten::mm|Float[2", "aten::add|d1.5e"})
    EXPECT_THROW(parse_signature(bad), std::invalid_argument) << bad;
}

// A decode's GEMV: a [1, d] x [d, n] linear (or the addmm it runs as) reads its whole weight.
TEST(CostModel, ADecodeLinearReadsItsWholeWeight) {
  const int64_t d = 64, n = 48;
  // MACs d x n; reads input d, weight n x d and bias n floats.
  const OpCost c = cost_of(op("linear", {tensor(T({1, d})), tensor(T({n, d})), tensor(T({n}))}));
  ASSERT_TRUE(c.costed);
  EXPECT_DOUBLE_EQ(c.macs, d * n);
  EXPECT_DOUBLE_EQ(c.bytes_read, (d + n * d + n) * 4.0);
  const OpCost mm = cost_of(op("addmm", {tensor(T({n})), tensor(T({1, d})), tensor(T({d, n}))}));
  EXPECT_DOUBLE_EQ(mm.bytes_read, (n + d + d * n) * 4.0);
}

// LibTorch 2.x's fused attention: one new query over s cached keys and values. MACs = b x h x
// 1 x s x (e + e) (scores and weighted sum), + 5 FLOPs per score; reads q and the whole cache
// (2 x b x h x s x e floats); writes b x h x e.
TEST(CostModel, FusedAttentionReadsTheWholeCache) {
  const int64_t b = 2, h = 4, s = 10, e = 8;
  const std::vector<ArgMeta> qkv = {tensor(T({b, h, 1, e})), tensor(T({b, h, s, e})),
                                    tensor(T({b, h, s, e}))};
  for (const char* name :
       {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_flash_attention"}) {
    const OpCost c = cost_of(op(name, qkv));
    ASSERT_TRUE(c.costed) << name;
    EXPECT_DOUBLE_EQ(c.macs, b * h * 1.0 * s * (e + e)) << name;
    EXPECT_DOUBLE_EQ(c.flops, 2 * c.macs + 5.0 * b * h * s) << name;
    EXPECT_DOUBLE_EQ(c.bytes_read, (b * h * e + 2.0 * b * h * s * e) * 4) << name;
    EXPECT_DOUBLE_EQ(c.bytes_written, b * h * e * 4.0) << name;
  }
}

}  // namespace
}  // namespace plumb::profile
