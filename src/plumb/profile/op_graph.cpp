// Data-flow graph of a step (see op_graph.h).
#include "plumb/profile/op_graph.h"

#include <stdexcept>
#include <unordered_map>

namespace plumb::profile {
namespace {

using Calls = std::vector<OpObserver::CallRecord>;

bool ends_with_underscore(const std::string& name) {
  return !name.empty() && name.back() == '_';
}

// A call that returns (part of) an input's storage without writing it: a view, a no-op
// contiguous() or to(). In-place operators (trailing underscore) write what they return.
bool returns_an_input(const OpObserver::CallRecord& call) {
  if (call.outputs.empty() || ends_with_underscore(call.totals->key.name)) return false;
  for (const auto& out : call.outputs) {
    bool aliased = false;
    for (const auto& in : call.inputs) aliased = aliased || in.storage == out.storage;
    if (!aliased) return false;
  }
  return true;
}

// Whether a unit-of-work call is left out of the graph: one that does no work (a costed view,
// an allocation, a metadata change) or an uncosted one that only returns an input's storage.
bool does_no_work(const OpObserver::CallRecord& call) {
  const OpCost& cost = call.totals->cost;
  if (cost.costed) return cost.flops == 0 && cost.bytes_read + cost.bytes_written == 0;
  return returns_an_input(call);
}

}  // namespace

std::string short_op_name(const std::string& name) {
  std::string s = name.rfind("aten::", 0) == 0 ? name.substr(6) : name;
  if (s.size() > 1 && s.back() == '_') s.pop_back();
  return s;
}

StepGraph build_step_graph(const OpObserver& observer, int64_t step_start_ns, double step_s) {
  const Calls& calls = observer.graph_calls();
  const size_t n = calls.size();
  // A node is the outermost call that is not composite: below it are only the kernel's own small
  // helpers. Parents are captured before their children, so one pass in order decides it.
  std::vector<char> node(n, 0), below_node(n, 0);
  std::vector<int> root(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const auto& c = calls[i];
    const int p = c.parent;
    below_node[i] = p >= 0 && (node[static_cast<size_t>(p)] || below_node[static_cast<size_t>(p)]);
    node[i] = !c.autograd_node && !c.composite && !below_node[i] && !does_no_work(c);
    // The model-level call: the outermost operator, or the first one inside an autograd node.
    root[i] = (p < 0 || calls[static_cast<size_t>(p)].autograd_node) ? static_cast<int>(i)
                                                                     : root[static_cast<size_t>(p)];
  }
  std::unordered_map<int, int> nodes_under_root;
  for (size_t i = 0; i < n; ++i)
    if (node[i]) ++nodes_under_root[root[i]];

  StepGraph graph;
  graph.step_s = step_s;
  std::unordered_map<uintptr_t, std::pair<int, int>> producer;  // storage -> (node, output)
  for (size_t i = 0; i < n; ++i) {
    if (!node[i]) continue;
    const auto& c = calls[i];
    const auto& r = calls[static_cast<size_t>(root[i])];
    GraphNode g;
    g.name = c.totals->key.name;
    g.root = r.totals->key.name;
    g.label = nodes_under_root[root[i]] == 1 ? g.root : g.name;
    g.layer = observer.layer_name(c.layer);
    g.backward = c.backward;
    g.signature = c.totals->key.signature;
    g.root_signature = r.totals->key.signature;
    const OpCost& cost = c.totals->cost;
    g.costed = cost.costed;
    if (cost.costed) {
      g.flops = cost.flops;
      g.bytes = cost.bytes_read + cost.bytes_written;
    } else {
      for (const auto& t : c.inputs) g.bytes += static_cast<double>(t.bytes);
      for (const auto& t : c.outputs) g.bytes += static_cast<double>(t.bytes);
    }
    g.start_s = static_cast<double>(c.start_ns - step_start_ns) * 1e-9;
    g.time_s = static_cast<double>(c.inclusive_ns) * 1e-9;
    for (const auto& t : c.inputs) {
      GraphInput in;
      in.bytes = static_cast<double>(t.bytes);
      const auto found = producer.find(t.storage);
      if (found != producer.end()) {
        in.producer = found->second.first;
        in.output = found->second.second;
      }
      g.inputs.push_back(in);
    }
    const int index = static_cast<int>(graph.nodes.size());
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      g.outputs.push_back(static_cast<double>(c.outputs[k].bytes));
      producer[c.outputs[k].storage] = {index, static_cast<int>(k)};
    }
    graph.nodes.push_back(std::move(g));
  }
  return graph;
}

nlohmann::json graph_to_json(const StepGraph& graph) {
  std::vector<std::string> strings;
  std::unordered_map<std::string, int> index;
  const auto id = [&](const std::string& s) {
    const auto found = index.emplace(s, static_cast<int>(strings.size()));
    if (found.second) strings.push_back(s);
    return found.first->second;
  };
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& g : graph.nodes) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& in : g.inputs) inputs.push_back({in.producer, in.output, in.bytes});
    nodes.push_back({id(g.name), id(g.label), id(g.root), id(g.layer), g.backward, id(g.signature),
                     id(g.root_signature), g.flops, g.bytes, g.costed, g.start_s, g.time_s, inputs,
                     g.outputs});
  }
  return {{"version", 1}, {"step_s", graph.step_s}, {"strings", strings}, {"nodes", nodes}};
}

StepGraph graph_from_json(const nlohmann::json& doc) {
  try {
    if (doc.at("version").get<int>() != 1)
      throw std::invalid_argument("operator graph of an unknown version");
    const auto strings = doc.at("strings").get<std::vector<std::string>>();
    const auto text = [&](const nlohmann::json& v) { return strings.at(v.get<size_t>()); };
    StepGraph graph;
    graph.step_s = doc.at("step_s").get<double>();
    const auto& nodes = doc.at("nodes");
    for (const auto& v : nodes) {
      GraphNode g;
      g.name = text(v.at(0));
      g.label = text(v.at(1));
      g.root = text(v.at(2));
      g.layer = text(v.at(3));
      g.backward = v.at(4).get<bool>();
      g.signature = text(v.at(5));
      g.root_signature = text(v.at(6));
      g.flops = v.at(7).get<double>();
      g.bytes = v.at(8).get<double>();
      g.costed = v.at(9).get<bool>();
      g.start_s = v.at(10).get<double>();
      g.time_s = v.at(11).get<double>();
      for (const auto& in : v.at(12)) {
        GraphInput i{in.at(0).get<int>(), in.at(1).get<int>(), in.at(2).get<double>()};
        if (i.producer >= static_cast<int>(graph.nodes.size()) || i.producer < -1)
          throw std::invalid_argument("operator graph with an edge from a later node");
        g.inputs.push_back(i);
      }
      g.outputs = v.at(13).get<std::vector<double>>();
      graph.nodes.push_back(std::move(g));
    }
    return graph;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("malformed operator graph: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw std::invalid_argument(std::string("malformed operator graph: ") + e.what());
  }
}

}  // namespace plumb::profile
