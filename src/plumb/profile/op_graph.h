// The data-flow graph of one profiled step (Facebook paper Sec. 3.3: operator graphs with their
// dependencies and tensor shapes): one node per unit of work, i.e. the outermost operator call
// that does its own arithmetic or data movement (a conv2d's mkldnn_convolution, each of an
// lstm_cell's addmm, sigmoid_, mul ...), with its FLOPs, bytes and measured time, and for each
// tensor it reads the node that produced it. Views are not nodes: a view shares its base's
// storage and so its producer; an in-place operator becomes the new producer of the storage it
// writes. What plumb analyze fusion mines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/profile/op_observer.h"

namespace plumb::profile {

struct GraphInput {
  int producer = -1;  // index of the node that wrote this tensor; -1: from outside the step
                      // (weights, the input batch) or from an operator that is not a node
  int output = 0;     // which of the producer's outputs
  double bytes = 0;   // of the tensor as read (a view: its own size)
};

struct GraphNode {
  std::string name;   // the operator that did the work: "aten::mkldnn_convolution"
  std::string label;  // what the model called when it is this node's only work ("aten::conv2d"),
                      // otherwise `name` (an lstm_cell's several operators keep their names)
  std::string root;   // the model-level operator it ran inside ("aten::lstm_cell")
  std::string layer;  // module path ("" when none)
  bool backward = false;
  std::string signature;       // of `name` (op_call.h)
  std::string root_signature;  // of `root` (its shapes and arguments: what rebuilds the call)
  double flops = 0;            // the cost model's, for this one call
  double bytes = 0;            // read + written; costed == false: the sizes of its tensors
  bool costed = true;          // the cost model knows this operator
  double start_s = 0;          // from the start of the step
  double time_s = 0;           // inclusive wall time of the call
  std::vector<GraphInput> inputs;
  std::vector<double> outputs;  // bytes of each tensor it writes
};

struct StepGraph {
  std::vector<GraphNode> nodes;  // in the order the calls started
  double step_s = 0;             // wall time of the captured step
};

// "aten::relu_" -> "relu": how a pattern names an operator (in-place and out-of-place alike).
std::string short_op_name(const std::string& name);

// Builds the graph from the calls the observer captured during one step that started at
// `step_start_ns`.
StepGraph build_step_graph(const OpObserver& observer, int64_t step_start_ns, double step_s);

// Compact JSON (signatures listed once), as the store keeps it, and back. from_json throws
// std::invalid_argument on a document to_json cannot have written.
nlohmann::json graph_to_json(const StepGraph& graph);
StepGraph graph_from_json(const nlohmann::json& document);

}  // namespace plumb::profile
