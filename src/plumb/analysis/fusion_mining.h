// Fusion opportunities from a step's data-flow graph (Facebook paper Sec. 3.3): frequent
// connected subgraphs of operators that a compiler could run as one kernel, each projected on
// the machine's measured roofs before fusion (every operator reads its inputs and writes its
// outputs) and after (tensors passed inside the group are neither written nor read back).
// Pure functions over profile::StepGraph and analysis::Ceilings.
//
// What may fuse, by operator class:
//   GEMM-like (conv, linear, matmul, bmm)  -> elementwise or data movement   (an epilogue)
//   data movement (cat, copy, transpose)   -> GEMM-like                      (a strided load)
//   elementwise, data movement             -> elementwise, data movement, reduction,
//                                             normalisation                  (loop fusion)
//   normalisation (softmax, layer norm, training batch norm) -> elementwise, data movement
//   a reduction ends a group: what follows needs all of its input first;
//   opaque operators (embedding lookups, gathers, sorts, whole recurrent layers, random
//   numbers, anything unclassified) are not data-parallel and never fuse.
// Inference batch norm is a per-channel affine map, so it counts as elementwise (and folds into
// the convolution before it). A group holds at most one GEMM-like operator, has every edge
// between its members fusible, stays within forward or backward, and is convex: no path leaves
// it and comes back.
#pragma once

#include <string>
#include <vector>

#include "plumb/analysis/roofline.h"
#include "plumb/profile/op_graph.h"

namespace plumb::analysis {

enum class FusionClass { kGemm, kElementwise, kReduction, kNormalization, kDataMovement, kOpaque };
const char* fusion_class_name(FusionClass c);  // "gemm", "elementwise", ...
FusionClass fusion_class(const profile::GraphNode& node);
bool can_fuse(FusionClass producer, FusionClass consumer);

// The roofline of a set of nodes run unfused and fused into one kernel.
struct GroupProjection {
  double flops = 0;
  double bytes_before = 0, bytes_after = 0;  // after: intermediates neither written nor read
  double before_s = 0;    // sum over nodes of max(compute, memory) time at each node's own roofs
  double after_s = 0;     // max(compute, memory) of the group as one kernel
  double measured_s = 0;  // the nodes' measured times, summed
  double saving_s() const { return before_s - after_s; }
};
// `nodes`: indices into graph.nodes (any set: the fusion rules are not applied here).
GroupProjection project_group(const profile::StepGraph& graph, const std::vector<int>& nodes,
                              const Ceilings& ceilings);

struct FusionOptions {
  int max_nodes = 4;  // largest subgraph mined
  int min_count = 2;  // occurrences per step for a pattern to be frequent
  // A node with more fusible neighbours than this (a cat or stack over hundreds of time steps,
  // a gradient summed from many uses) takes part in no pattern: a small group around it would
  // count the same hub once per combination of its neighbours, and enumerating those is
  // combinatorial (C(1566, 3) subgraphs around one stack of 1566 steps).
  int max_fusible_degree = 16;
};

struct FusionPattern {
  std::string key;   // canonical form: the scope, labels in a canonical topological order, edges
  std::string text;  // "conv2d -> batch_norm -> relu" (a chain) or its edges otherwise
  std::vector<std::string> labels;         // canonical order
  std::vector<std::string> classes;        // fusion_class_name per label
  std::vector<std::pair<int, int>> edges;  // between canonical positions
  bool backward = false;
  int count = 0;          // occurrences in the step
  double measured_s = 0;  // per step: the measured time of its nodes over every occurrence
  double before_s = 0, after_s = 0;  // per step, roofline, summed over occurrences
  double saving_s = 0;               // per step: before - after
  double step_s = 0;                 // the step it was found in (suite: summed over workloads)
  double saving_share = 0;           // saving_s / step_s
  // The occurrence with the largest measured time: its layer and each node's model-level
  // call (root signature), in canonical order; what a realized check rebuilds.
  std::string example_layer;
  std::vector<std::string> example_signatures;
  std::vector<std::string> workloads;  // where it was found (a suite)
};

struct FusionMining {
  std::vector<FusionPattern> patterns;  // closed frequent patterns, largest saving first
  int nodes = 0, edges = 0, fusible_edges = 0;
  int subgraphs = 0;  // connected fusible subgraphs enumerated
  int hubs = 0;       // nodes left out for having more than max_fusible_degree fusible edges
  double step_s = 0;
};

// Mines one step's graph. Patterns are "closed": one whose every occurrence lies inside an
// occurrence of a larger pattern seen as often is left out (that larger pattern is the
// opportunity).
FusionMining mine_fusion(const profile::StepGraph& graph, const Ceilings& ceilings,
                         const FusionOptions& options = {});

// Patterns of several workloads merged by key (counts, times and savings summed; the example
// of the largest measured time kept), largest saving first. `names` labels each mining.
std::vector<FusionPattern> merge_patterns(const std::vector<FusionMining>& minings,
                                          const std::vector<std::string>& names);

}  // namespace plumb::analysis
