// Fusion mining tests: graph capture on a tiny hand-built model (its nodes, producers, views and
// in-place ops known by hand), the fusion rules, mining and projection on a hand-built graph whose
// patterns, counts and savings are computed here by hand, the graph's JSON form, and the fused
// kernels (each computes what its unfused sequence computes), and a fused-kernel check's round
// trip through the store.
#include <cmath>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "plumb/analysis/fusion_mining.h"
#include "plumb/analysis/fusion_realized.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/fused_kernels.h"
#include "plumb/profile/op_graph.h"
#include "plumb/profile/op_observer.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "report_fixture.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

using profile::GraphNode;
using profile::StepGraph;

// Captures the graph of `fn` run once under an observer.
template <typename Fn>
StepGraph capture(Fn fn) {
  profile::OpObserver observer;
  observer.attach();
  observer.capture_graph(true);
  fn();
  observer.capture_graph(false);
  observer.detach();
  return profile::build_step_graph(observer, 0, 1.0);
}

int find_node(const StepGraph& g, const std::string& label, int from = 0) {
  for (size_t i = static_cast<size_t>(from); i < g.nodes.size(); ++i)
    if (g.nodes[i].label == label) return static_cast<int>(i);
  return -1;
}

TEST(GraphCapture, TinyModelHasTheNodesAndProducersKnownByHand) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({4, 8}), w = torch::randn({16, 8}), b = torch::randn({16});
  const auto y = torch::randn({4, 16});
  const StepGraph g = capture([&] {
    auto h = at::linear(x, w, b).relu_();  // addmm (t is a view), relu_ in place
    auto v = h.view({4, 4, 4});            // a view: no node, shares h's producer
    v.mul_(2.0);                           // in place on the view: reads relu_'s output
    auto s = at::add(h, y);                // reads mul_'s write (same storage)
    return at::relu(s).sum();
  });
  // Units of work in order; the view, the transpose inside linear and allocations are not nodes.
  std::vector<std::string> labels;
  for (const auto& n : g.nodes) labels.push_back(n.label);
  ASSERT_EQ(labels, (std::vector<std::string>{"aten::linear", "aten::relu_", "aten::mul_",
                                              "aten::add", "aten::relu", "aten::sum"}))
      << ::testing::PrintToString(labels);
  EXPECT_EQ(g.nodes[0].name, "aten::addmm");  // the kernel that did linear's work
  // Producers: weights and inputs come from outside the step (-1).
  for (const auto& in : g.nodes[0].inputs) EXPECT_EQ(in.producer, -1);
  const auto producers = [&](int node) {
    std::vector<int> p;
    for (const auto& in : g.nodes[static_cast<size_t>(node)].inputs) p.push_back(in.producer);
    return p;
  };
  EXPECT_EQ(producers(1), std::vector<int>{0});  // relu_ reads addmm's output
  // mul_ on the view reads relu_'s output (its scalar comes from outside).
  const auto mul_inputs = producers(2);
  EXPECT_NE(std::find(mul_inputs.begin(), mul_inputs.end(), 1), mul_inputs.end());
  for (int p : mul_inputs) EXPECT_TRUE(p == 1 || p == -1) << p;
  EXPECT_EQ(producers(3), (std::vector<int>{2, -1}));  // add reads the storage mul_ wrote last
  EXPECT_EQ(producers(4), std::vector<int>{3});
  EXPECT_EQ(producers(5), std::vector<int>{4});
  // Sizes: a [4, 16] fp32 tensor is 256 bytes, as read and as written.
  EXPECT_EQ(g.nodes[1].inputs[0].bytes, 256);
  ASSERT_EQ(g.nodes[0].outputs.size(), 1u);
  EXPECT_EQ(g.nodes[0].outputs[0], 256);
  // The cost model's work: addmm is 2 x 4 x 8 x 16 FLOPs of products plus the 4 x 16 bias adds.
  EXPECT_EQ(g.nodes[0].flops, 2.0 * 4 * 8 * 16 + 4 * 16);
  EXPECT_TRUE(g.nodes[0].costed);
  EXPECT_GT(g.nodes[0].time_s, 0);
}

TEST(GraphCapture, BackwardOperatorsAreNodesWithTheirProducers) {
  auto w = torch::randn({8, 8}, torch::requires_grad());
  const auto x = torch::randn({4, 8});
  const StepGraph g = capture([&] { at::relu(at::mm(x, w)).sum().backward(); });
  bool backward_mm = false, threshold = false;
  for (const auto& n : g.nodes) {
    backward_mm = backward_mm || (n.backward && profile::short_op_name(n.name) == "mm");
    threshold = threshold || (n.backward && n.name == "aten::threshold_backward");
  }
  EXPECT_TRUE(backward_mm);
  EXPECT_TRUE(threshold);
  // threshold_backward reads relu's forward output: an edge from forward to backward.
  const int relu = find_node(g, "aten::relu");
  const int tb = find_node(g, "aten::threshold_backward");
  ASSERT_GE(relu, 0);
  ASSERT_GE(tb, 0);
  bool reads_relu = false;
  for (const auto& in : g.nodes[static_cast<size_t>(tb)].inputs) reads_relu |= in.producer == relu;
  EXPECT_TRUE(reads_relu);
}

TEST(GraphCapture, JsonRoundTripKeepsEverythingAndRejectsGarbage) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 3});
  const StepGraph g = capture([&] { return at::relu(at::add(x, x)); });
  const StepGraph back = profile::graph_from_json(profile::graph_to_json(g));
  ASSERT_EQ(back.nodes.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].label, g.nodes[i].label);
    EXPECT_EQ(back.nodes[i].signature, g.nodes[i].signature);
    EXPECT_EQ(back.nodes[i].bytes, g.nodes[i].bytes);
    ASSERT_EQ(back.nodes[i].inputs.size(), g.nodes[i].inputs.size());
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k)
      EXPECT_EQ(back.nodes[i].inputs[k].producer, g.nodes[i].inputs[k].producer);
  }
  EXPECT_THROW(profile::graph_from_json(nlohmann::json::parse("{\"version\": 1}")),
               std::invalid_argument);
  auto bad = profile::graph_to_json(g);
  bad["nodes"][0][12] = nlohmann::json::array({nlohmann::json::array({5, 0, 1.0})});
  EXPECT_THROW(profile::graph_from_json(bad), std::invalid_argument);  // edge from a later node
}

// --- mining on a hand-built graph -------------------------------------------------------------

GraphNode node(const std::string& name, double flops, double bytes, std::vector<int> producers,
               double out_bytes, const std::string& signature = "") {
  GraphNode n;
  n.name = n.label = n.root = name;
  n.signature = n.root_signature = signature.empty() ? name + "|Float[10]" : signature;
  n.flops = flops;
  n.bytes = bytes;
  n.time_s = 1e-3;
  for (int p : producers) n.inputs.push_back({p, 0, p < 0 ? 0.0 : 1e6});
  n.outputs = {out_bytes};
  return n;
}

analysis::Ceilings hand_ceilings() {
  analysis::Ceilings c;
  c.peak_flops = 100e9;            // 100 GFLOP/s
  c.memory = {{"dram", 10e9, 0}};  // 10 GB/s, unlimited
  return c;
}

// Three blocks of conv (1 MFLOP, 1 MB) -> inference batch norm (2 MB) -> relu (2 MB), each
// intermediate 1 MB and read only inside the block; the blocks are chained by a max pool (a
// reduction: nothing fuses across it).
StepGraph three_blocks() {
  StepGraph g;
  g.step_s = 0.01;
  const std::string bn_sig =
      "aten::native_batch_norm|Float[10]|Float[1]|Float[1]|Float[1]|Float[1]|F|d0.1|d1e-05";
  int prev = -1;
  for (int b = 0; b < 3; ++b) {
    const int base = static_cast<int>(g.nodes.size());
    g.nodes.push_back(node("aten::conv2d", 1e6, 1e6, {prev}, 1e6));
    g.nodes.push_back(node("aten::batch_norm", 0, 2e6, {base}, 1e6, bn_sig));
    g.nodes.push_back(node("aten::relu_", 0, 2e6, {base + 1}, 1e6));
    g.nodes.push_back(node("aten::max_pool2d", 0, 2e6, {base + 2}, 1e6));
    prev = base + 3;
  }
  return g;
}

TEST(FusionMining, FindsTheBlockPatternWithTheSavingComputedByHand) {
  const auto mining = analysis::mine_fusion(three_blocks(), hand_ceilings());
  ASSERT_FALSE(mining.patterns.empty());
  const auto& top = mining.patterns.front();
  // relu -> max_pool is fusible too (a reduction may end a group), so the largest pattern is the
  // whole block; conv -> batch_norm -> relu lies inside it every time and is not listed.
  EXPECT_EQ(top.text, "conv2d -> batch_norm -> relu -> max_pool2d");
  EXPECT_EQ(top.count, 3);
  EXPECT_EQ(top.classes,
            (std::vector<std::string>{"gemm", "elementwise", "elementwise", "reduction"}));
  // Before, per block: conv max(1e6/100e9, 1e6/10e9) = 0.1 ms; bn, relu, pool 2e6/10e9 = 0.2 ms
  // each: 0.7 ms. After: 7 MB minus three intermediates read and never written (2 MB each)
  // = 1 MB: 0.1 ms. Saving 0.6 ms per block, 1.8 ms per step.
  EXPECT_NEAR(top.before_s, 3 * 0.7e-3, 1e-12);
  EXPECT_NEAR(top.after_s, 3 * 0.1e-3, 1e-12);
  EXPECT_NEAR(top.saving_s, 1.8e-3, 1e-12);
  EXPECT_NEAR(top.saving_share, 0.18, 1e-9);
  for (const auto& p : mining.patterns) {
    EXPECT_NE(p.text, "conv2d -> batch_norm -> relu") << "not closed: always inside the block";
    // Nothing crosses the max pool: no pattern holds two GEMMs.
    EXPECT_LE(std::count(p.classes.begin(), p.classes.end(), "gemm"), 1);
  }
  EXPECT_EQ(mining.nodes, 12);
  EXPECT_EQ(mining.edges, 11);
  EXPECT_EQ(mining.fusible_edges, 9);  // pool -> next conv is not
}

TEST(FusionMining, AnIntermediateReadOutsideTheGroupIsStillWritten) {
  StepGraph g = three_blocks();
  // A node outside the block reads the first conv's output (as backward would): fusing the block
  // saves that tensor's read inside the group but not its write.
  g.nodes.push_back(node("aten::sum", 0, 1e6, {0}, 4));
  const auto p = analysis::project_group(g, {0, 1, 2, 3}, hand_ceilings());
  EXPECT_NEAR(p.bytes_after, 2e6, 1);  // 1 MB more than the block alone
  EXPECT_NEAR(p.after_s, 0.2e-3, 1e-12);
}

TEST(FusionMining, RulesKeepGroupsDataParallelAndConvex) {
  using analysis::FusionClass;
  EXPECT_TRUE(analysis::can_fuse(FusionClass::kGemm, FusionClass::kElementwise));
  EXPECT_TRUE(analysis::can_fuse(FusionClass::kGemm, FusionClass::kDataMovement));
  EXPECT_FALSE(analysis::can_fuse(FusionClass::kGemm, FusionClass::kGemm));
  EXPECT_FALSE(analysis::can_fuse(FusionClass::kReduction, FusionClass::kElementwise));
  EXPECT_FALSE(analysis::can_fuse(FusionClass::kElementwise, FusionClass::kOpaque));
  EXPECT_FALSE(analysis::can_fuse(FusionClass::kGemm, FusionClass::kNormalization));
  // Training batch norm needs the whole batch's statistics: a normalisation, not elementwise.
  GraphNode bn = node("aten::native_batch_norm", 0, 1, {-1}, 1,
                      "aten::native_batch_norm|Float[10]|-|-|-|-|T|d0.1|d1e-05");
  EXPECT_EQ(analysis::fusion_class(bn), FusionClass::kNormalization);
  GraphNode embedding = node("aten::embedding_bag", 0, 1, {-1}, 1);
  EXPECT_EQ(analysis::fusion_class(embedding), FusionClass::kOpaque);

  // a -> b and a -> opaque -> b: {a, b} would need the opaque node's result inside the group.
  StepGraph g;
  g.step_s = 1;
  for (int i = 0; i < 2; ++i) {
    const int base = static_cast<int>(g.nodes.size());
    g.nodes.push_back(node("aten::mul", 0, 2e6, {-1}, 1e6));
    g.nodes.push_back(node("aten::index_select", 0, 2e6, {base}, 1e6));
    GraphNode add = node("aten::add", 0, 3e6, {base, base + 1}, 1e6);
    g.nodes.push_back(add);
  }
  const auto mining = analysis::mine_fusion(g, hand_ceilings());
  for (const auto& p : mining.patterns) EXPECT_NE(p.text, "mul -> add") << "a non-convex group";
}

TEST(FusionMining, SuiteMergeSumsCountsAndSavings) {
  const auto a = analysis::mine_fusion(three_blocks(), hand_ceilings());
  const auto merged = analysis::merge_patterns({a, a}, {"w1", "w2"});
  ASSERT_FALSE(merged.empty());
  EXPECT_EQ(merged.front().count, 6);
  EXPECT_NEAR(merged.front().saving_s, 3.6e-3, 1e-12);
  EXPECT_NEAR(merged.front().saving_share, 0.18, 1e-9);  // of both steps
  EXPECT_EQ(merged.front().workloads, (std::vector<std::string>{"w1", "w2"}));
}

// --- fused kernels ----------------------------------------------------------------------------

TEST(FusedKernels, EachFusedKernelComputesWhatItsSequenceComputes) {
  struct Case {
    std::string kind;
    std::vector<std::string> labels, signatures;
    size_t unfused_nodes;
  };
  const std::vector<Case> cases = {
      {"conv_bn",
       {"conv2d", "batch_norm"},
       {"aten::conv2d|Float[2,4,8,8]|Float[6,4,3,3]|Float[6]|i1,1|i1,1|i1,1|i1",
        "aten::batch_norm|Float[2,6,8,8]|Float[6]|Float[6]|Float[6]|Float[6]|F|d0.1|d1e-05|T"},
       2},
      {"conv_bn",  // a 3-D convolution without bias, as resnext3d's
       {"conv3d", "batch_norm"},
       {"aten::conv3d|Float[1,4,3,6,6]|Float[6,4,1,3,3]|-|i1,1,1|i0,1,1|i1,1,1|i1",
        "aten::batch_norm|Float[1,6,3,6,6]|Float[6]|Float[6]|Float[6]|Float[6]|F|d0.1|d0.001|T"},
       2},
      {"linear_relu",
       {"linear", "relu"},
       {"aten::linear|Float[4,8]|Float[16,8]|Float[16]", "aten::relu_|Float[4,16]"},
       2},
      {"add_relu",
       {"add", "relu"},
       {"aten::add|Float[4,8]|Float[4,8]|i1", "aten::relu_|Float[4,8]"},
       2},
      {"softmax", {"softmax"}, {"aten::softmax|Float[4,32]|i1|"}, 5},
  };
  for (const auto& c : cases) {
    std::vector<std::pair<int, int>> edges;
    if (c.labels.size() == 2) edges.push_back({0, 1});
    EXPECT_EQ(profile::fused_kernel_kind(c.labels, edges), c.kind);
    const auto check = profile::run_fused_kernel_check(c.kind, c.labels, c.signatures, 1, 0.02);
    EXPECT_LT(check.max_abs_diff, 1e-3) << c.kind;
    EXPECT_GT(check.unfused_s, 0) << c.kind;
    EXPECT_GT(check.fused_s, 0) << c.kind;
    EXPECT_GE(check.repetitions, 10) << c.kind;
    EXPECT_EQ(check.unfused_graph.nodes.size(), c.unfused_nodes) << c.kind;
    const auto r = analysis::realized_fusion(check, hand_ceilings());
    EXPECT_GT(r.projection.before_s, r.projection.after_s) << c.kind;
    EXPECT_NEAR(r.realized_fraction, 1 - check.fused_s / check.unfused_s, 1e-12);
  }
  EXPECT_EQ(profile::fused_kernel_kind({"matmul", "add"}, {{0, 1}}), "");
  EXPECT_THROW(profile::run_fused_kernel_check("conv_bn", {"add"}, {"aten::add|Float[2]"}, 1, 0.01),
               std::invalid_argument);
}

}  // namespace
}  // namespace plumb

namespace plumb {
namespace {

TEST(FusionMining, AHubWithManyFusibleNeighboursTakesPartInNoPattern) {
  // Twenty relu -> mul chains all concatenated by one cat: with the default limit of 16 the cat
  // is a hub (20 fusible neighbours, the muls), so only relu -> mul is mined.
  StepGraph g;
  g.step_s = 1;
  std::vector<int> muls;
  for (int i = 0; i < 20; ++i) {
    const int base = static_cast<int>(g.nodes.size());
    g.nodes.push_back(node("aten::relu", 0, 2e6, {-1}, 1e6));
    g.nodes.push_back(node("aten::mul", 0, 2e6, {base}, 1e6));
    muls.push_back(base + 1);
  }
  g.nodes.push_back(node("aten::cat", 0, 4e7, muls, 2e7));
  const auto mining = analysis::mine_fusion(g, hand_ceilings());
  EXPECT_EQ(mining.hubs, 1);
  ASSERT_EQ(mining.patterns.size(), 1u);
  EXPECT_EQ(mining.patterns[0].text, "relu -> mul");
  EXPECT_EQ(mining.patterns[0].count, 20);
  analysis::FusionOptions wide;
  wide.max_fusible_degree = 32;  // no hub: the cat joins its producers' chains
  const auto with_cat = analysis::mine_fusion(g, hand_ceilings(), wide);
  EXPECT_EQ(with_cat.hubs, 0);
  EXPECT_EQ(with_cat.patterns.front().text.find("cat") != std::string::npos, true);
}

}  // namespace
}  // namespace plumb

namespace plumb {
namespace {

class FusedCheckStore : public testing::ScratchDirTest {};

// A stored fused-kernel check reads back with every column it was saved with (the graph too).
TEST_F(FusedCheckStore, RoundTripKeepsEveryColumn) {
  profile::FusedKernelCheck c;
  c.kind = "conv_bn";
  c.shapes = "conv2d([1, 3, 8, 8]); batch_norm([1, 4, 8, 8])";
  c.unfused = "conv2d, batch_norm";
  c.fused_op = "conv2d (batch norm folded into its weights)";
  c.dtype = "Float";
  c.threads = 3;
  c.repetitions = 7;
  c.unfused_s = 2.5e-4;
  c.fused_s = 1.25e-4;
  c.max_abs_diff = std::nan("");  // an undefined difference survives as NaN
  c.unfused_graph.nodes.push_back(GraphNode{});
  c.unfused_graph.nodes.back().name = "aten::conv2d";
  auto store = store::ResultsStore::open((dir_ / "checks.db").string());
  const int64_t id = store->save_fused_kernel_check(c, testing::report_environment());
  const auto loaded = store->load_fused_kernel_checks();
  ASSERT_EQ(loaded.size(), 1u);
  const store::StoredFusedKernelCheck& s = loaded.front();
  EXPECT_EQ(s.id, id);
  EXPECT_FALSE(s.measured_at.empty());
  EXPECT_EQ(s.machine, platform::machine_key(testing::report_environment()));
  EXPECT_EQ(s.check.kind, c.kind);
  EXPECT_EQ(s.check.shapes, c.shapes);
  EXPECT_EQ(s.check.unfused, c.unfused);
  EXPECT_EQ(s.check.fused_op, c.fused_op);
  EXPECT_EQ(s.check.dtype, c.dtype);
  EXPECT_EQ(s.check.threads, 3);
  EXPECT_EQ(s.check.repetitions, 7);
  EXPECT_DOUBLE_EQ(s.check.unfused_s, 2.5e-4);
  EXPECT_DOUBLE_EQ(s.check.fused_s, 1.25e-4);
  EXPECT_TRUE(std::isnan(s.check.max_abs_diff));
  ASSERT_EQ(s.check.unfused_graph.nodes.size(), 1u);
  EXPECT_EQ(s.check.unfused_graph.nodes.front().name, "aten::conv2d");
}

}  // namespace
}  // namespace plumb
