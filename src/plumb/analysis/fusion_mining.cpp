// Fusion mining and projection (see fusion_mining.h).
#include "plumb/analysis/fusion_mining.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/profile/op_call.h"
#include "plumb/profile/op_category.h"

namespace plumb::analysis {

const char* fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::kGemm:
      return "gemm";
    case FusionClass::kElementwise:
      return "elementwise";
    case FusionClass::kReduction:
      return "reduction";
    case FusionClass::kNormalization:
      return "normalization";
    case FusionClass::kDataMovement:
      return "data movement";
    case FusionClass::kOpaque:
      return "opaque";
  }
  return "opaque";
}

namespace {

// Batch norm's `training` argument (input 5 of batch_norm and native_batch_norm); true when
// the signature does not say.
bool batch_norm_training(const std::string& signature) {
  try {
    const auto call = profile::parse_signature(signature);
    if (call.inputs.size() > 5 && call.inputs[5].kind == profile::ArgMeta::Kind::kBool)
      return call.inputs[5].flag;
  } catch (const std::invalid_argument&) {
  }
  return true;
}

// Operators whose output positions depend on index values or on the whole input's order: not
// data-parallel, so no fusion crosses them.
bool not_data_parallel(const std::string& name) {
  static const char* const kWords[] = {
      "embedding", "index",       "gather",        "scatter",      "nonzero",  "unique", "sort",
      "topk",      "multinomial", "masked_select", "searchsorted", "bincount", "put"};
  for (const char* w : kWords)
    if (name.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

FusionClass fusion_class(const profile::GraphNode& node) {
  // By what the model called when that is the node's only work (a relu_ that runs clamp_min_),
  // else by the operator itself.
  const std::string name = profile::short_op_name(node.label);
  if (not_data_parallel(name)) return FusionClass::kOpaque;
  using profile::OpCategory;
  switch (profile::categorize(node.label)) {
    case OpCategory::kConv:
    case OpCategory::kMatMul:
      return FusionClass::kGemm;
    case OpCategory::kElementwise:
    case OpCategory::kActivation:
    case OpCategory::kOptimizer:
      return FusionClass::kElementwise;
    case OpCategory::kNormalization:
      // In inference batch norm applies fixed per-channel statistics: an elementwise affine map.
      if (name.find("batch_norm") != std::string::npos &&
          name.find("backward") == std::string::npos && !batch_norm_training(node.signature))
        return FusionClass::kElementwise;
      return FusionClass::kNormalization;
    case OpCategory::kPooling:
    case OpCategory::kReduction:
      return FusionClass::kReduction;
    case OpCategory::kSoftmaxLoss:
      return name.find("softmax") != std::string::npos ? FusionClass::kNormalization
                                                       : FusionClass::kReduction;
    case OpCategory::kDataMovement:
      return FusionClass::kDataMovement;
    case OpCategory::kEmbedding:
    case OpCategory::kRecurrent:
    case OpCategory::kOther:
      return FusionClass::kOpaque;
  }
  return FusionClass::kOpaque;
}

bool can_fuse(FusionClass producer, FusionClass consumer) {
  using C = FusionClass;
  if (producer == C::kOpaque || consumer == C::kOpaque) return false;
  switch (producer) {
    case C::kGemm:
      return consumer == C::kElementwise || consumer == C::kDataMovement;
    case C::kDataMovement:
      return true;
    case C::kElementwise:
      return consumer != C::kGemm;
    case C::kNormalization:
      return consumer == C::kElementwise || consumer == C::kDataMovement;
    case C::kReduction:
    case C::kOpaque:
      return false;
  }
  return false;
}

namespace {

// Consumers of every node output, and the roofs each node is placed on, computed once per graph.
class GraphIndex {
 public:
  GraphIndex(const profile::StepGraph& graph, const Ceilings& ceilings)
      : graph_(graph), ceilings_(ceilings) {
    const size_t n = graph.nodes.size();
    consumers_.resize(n);
    compute_s_.resize(n);
    memory_s_.resize(n);
    for (size_t j = 0; j < n; ++j) {
      const auto& node = graph.nodes[j];
      for (const auto& in : node.inputs)
        if (in.producer >= 0)
          consumers_[static_cast<size_t>(in.producer)].push_back(static_cast<int>(j));
      compute_s_[j] = node.flops / peak_for(op_compute_dtype(node.signature));
      memory_s_[j] = node.bytes / level_for_footprint(node.bytes, ceilings).bytes_per_s;
    }
    for (auto& c : consumers_) {
      std::sort(c.begin(), c.end());
      c.erase(std::unique(c.begin(), c.end()), c.end());
    }
  }

  const std::vector<int>& consumers(int node) const {
    return consumers_[static_cast<size_t>(node)];
  }

  GroupProjection project(const std::vector<int>& members) const {
    GroupProjection p;
    const std::set<int> in_group(members.begin(), members.end());
    double compute = 0, largest = 0;
    std::set<std::pair<int, int>> internal;  // (producer, output) passed inside the group
    for (int m : members) {
      const auto& node = graph_.nodes[static_cast<size_t>(m)];
      p.flops += node.flops;
      p.bytes_before += node.bytes;
      p.measured_s += node.time_s;
      compute += compute_s_[static_cast<size_t>(m)];
      largest = std::max(largest, node.bytes);
      p.before_s += std::max(compute_s_[static_cast<size_t>(m)], memory_s_[static_cast<size_t>(m)]);
      for (const auto& in : node.inputs) {
        if (in.producer < 0 || in_group.count(in.producer) == 0) continue;
        p.bytes_after -= in.bytes;  // read inside the kernel, never from memory
        internal.insert({in.producer, in.output});
      }
    }
    for (const auto& [producer, output] : internal) {
      // Not written either when nothing outside the group reads it.
      bool outside = false;
      for (int c : consumers(producer)) {
        if (in_group.count(c) > 0) continue;
        for (const auto& in : graph_.nodes[static_cast<size_t>(c)].inputs)
          outside = outside || (in.producer == producer && in.output == output);
      }
      const auto& outs = graph_.nodes[static_cast<size_t>(producer)].outputs;
      if (!outside && static_cast<size_t>(output) < outs.size())
        p.bytes_after -= outs[static_cast<size_t>(output)];
    }
    p.bytes_after = std::max(0.0, p.bytes_before + p.bytes_after);
    // The fused kernel's working set at any moment is one operator's, not their sum.
    const double bandwidth = level_for_footprint(largest, ceilings_).bytes_per_s;
    p.after_s = std::max(compute, p.bytes_after / bandwidth);
    return p;
  }

 private:
  double peak_for(const std::string& dtype) const {
    const auto found = ceilings_.by_dtype.find(dtype);
    return found != ceilings_.by_dtype.end() && found->second.flops > 0 ? found->second.flops
                                                                        : ceilings_.peak_flops;
  }

  const profile::StepGraph& graph_;
  const Ceilings& ceilings_;
  std::vector<std::vector<int>> consumers_;
  std::vector<double> compute_s_, memory_s_;
};

void require_usable(const Ceilings& ceilings) {
  if (ceilings.memory.empty() || !(ceilings.peak_flops > 0))
    throw std::invalid_argument("fusion projection needs a compute roof and a memory roof");
}

}  // namespace

GroupProjection project_group(const profile::StepGraph& graph, const std::vector<int>& nodes,
                              const Ceilings& ceilings) {
  require_usable(ceilings);
  return GraphIndex(graph, ceilings).project(nodes);
}

namespace {

struct Occurrence {
  std::vector<int> nodes;  // canonical order
  GroupProjection projection;
};

struct Canonical {
  std::string key;
  std::vector<int> order;  // graph node indices in canonical order
  std::vector<std::pair<int, int>> edges;
};

// The smallest encoding over the members' topological orders: labels in order, then edges
// between positions. Subgraphs are small (at most a handful of nodes), so every permutation is
// tried.
Canonical canonical_form(const std::vector<int>& members, const std::vector<std::string>& labels,
                         const std::set<std::pair<int, int>>& edges) {
  std::vector<int> perm = members;
  std::sort(perm.begin(), perm.end());
  Canonical best;
  bool found = false;
  do {
    std::map<int, int> pos;
    for (size_t i = 0; i < perm.size(); ++i) pos[perm[i]] = static_cast<int>(i);
    bool topological = true;
    std::vector<std::pair<int, int>> e;
    for (const auto& [a, b] : edges) {
      if (pos[a] > pos[b]) topological = false;
      e.emplace_back(pos[a], pos[b]);
    }
    if (!topological) continue;
    std::sort(e.begin(), e.end());
    std::string key;
    for (int m : perm) key += labels[static_cast<size_t>(m)] + ",";
    key += ";";
    for (const auto& [a, b] : e) key += fmt::format("{}>{} ", a, b);
    if (!found || key < best.key) {
      best = {key, perm, e};
      found = true;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

std::string pattern_text(const std::vector<std::string>& labels,
                         const std::vector<std::pair<int, int>>& edges) {
  // A label that appears twice gets its position, so "batch_norm#1" and "batch_norm#3" differ.
  std::vector<std::string> names = labels;
  for (size_t i = 0; i < labels.size(); ++i)
    if (std::count(labels.begin(), labels.end(), labels[i]) > 1)
      names[i] = fmt::format("{}#{}", labels[i], i + 1);
  // As paths: from each edge not yet shown, follow unused edges forward; paths joined by ", ".
  std::vector<char> used(edges.size(), 0);
  std::string text;
  for (size_t e = 0; e < edges.size(); ++e) {
    if (used[e]) continue;
    std::string path = names[static_cast<size_t>(edges[e].first)];
    int at = edges[e].first;
    for (bool extended = true; extended;) {
      extended = false;
      for (size_t k = 0; k < edges.size(); ++k) {
        if (used[k] || edges[k].first != at) continue;
        used[k] = 1;
        at = edges[k].second;
        path += " -> " + names[static_cast<size_t>(at)];
        extended = true;
        break;
      }
    }
    text += (text.empty() ? "" : ", ") + path;
  }
  return text;
}

}  // namespace

FusionMining mine_fusion(const profile::StepGraph& graph, const Ceilings& ceilings,
                         const FusionOptions& options) {
  require_usable(ceilings);
  if (options.max_nodes < 2) throw std::invalid_argument("--max-nodes must be at least 2");
  const GraphIndex index(graph, ceilings);
  const int n = static_cast<int>(graph.nodes.size());
  FusionMining out;
  out.nodes = n;
  out.step_s = graph.step_s;
  std::vector<FusionClass> cls(static_cast<size_t>(n));
  std::vector<std::string> labels(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    cls[static_cast<size_t>(i)] = fusion_class(graph.nodes[static_cast<size_t>(i)]);
    labels[static_cast<size_t>(i)] =
        profile::short_op_name(graph.nodes[static_cast<size_t>(i)].label);
  }
  // Directed edges (deduplicated) and the undirected neighbourhoods over fusible edges.
  std::set<std::pair<int, int>> all_edges;
  std::vector<std::set<int>> neighbours(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    const auto& node = graph.nodes[static_cast<size_t>(j)];
    for (const auto& in : node.inputs) {
      const int i = in.producer;
      if (i < 0 || !all_edges.insert({i, j}).second) continue;
      const auto& producer = graph.nodes[static_cast<size_t>(i)];
      if (producer.backward == node.backward &&
          can_fuse(cls[static_cast<size_t>(i)], cls[static_cast<size_t>(j)])) {
        ++out.fusible_edges;
        neighbours[static_cast<size_t>(i)].insert(j);
        neighbours[static_cast<size_t>(j)].insert(i);
      }
    }
  }
  out.edges = static_cast<int>(all_edges.size());
  // Hubs keep no fusible edges (FusionOptions::max_fusible_degree).
  std::vector<char> hub(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i)
    if (static_cast<int>(neighbours[static_cast<size_t>(i)].size()) > options.max_fusible_degree) {
      hub[static_cast<size_t>(i)] = 1;
      ++out.hubs;
    }
  for (int i = 0; i < n; ++i) {
    auto& around = neighbours[static_cast<size_t>(i)];
    if (hub[static_cast<size_t>(i)]) {
      around.clear();
      continue;
    }
    for (auto it = around.begin(); it != around.end();)
      it = hub[static_cast<size_t>(*it)] ? around.erase(it) : std::next(it);
  }

  // A group is valid when every edge between members is fusible, it has at most one GEMM, and
  // no path leaves it and re-enters (nodes are in start order, a topological order).
  const auto valid = [&](const std::vector<int>& members, std::set<std::pair<int, int>>& edges) {
    const std::set<int> in_group(members.begin(), members.end());
    int gemms = 0;
    for (int m : members) gemms += cls[static_cast<size_t>(m)] == FusionClass::kGemm ? 1 : 0;
    if (gemms > 1) return false;
    for (int m : members)
      for (int c : index.consumers(m))
        if (in_group.count(c) > 0) {
          if (neighbours[static_cast<size_t>(m)].count(c) == 0) return false;
          edges.insert({m, c});
        }
    const int last = *std::max_element(members.begin(), members.end());
    std::vector<int> stack;
    std::set<int> seen;
    for (int m : members)
      for (int c : index.consumers(m))
        if (in_group.count(c) == 0 && c < last) stack.push_back(c);
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (!seen.insert(v).second) continue;
      for (int c : index.consumers(v)) {
        if (in_group.count(c) > 0) return false;
        if (c < last) stack.push_back(c);
      }
    }
    return true;
  };

  // Every connected subgraph of 2..max_nodes nodes exactly once (Wernicke's ESU enumeration).
  std::map<std::string, std::vector<Occurrence>> by_key;
  std::map<std::string, Canonical> shape_of;
  const auto record = [&](const std::vector<int>& members) {
    ++out.subgraphs;
    std::set<std::pair<int, int>> edges;
    if (!valid(members, edges)) return;
    Canonical c = canonical_form(members, labels, edges);
    const bool backward = graph.nodes[static_cast<size_t>(members[0])].backward;
    c.key = (backward ? "backward:" : "forward:") + c.key;
    Occurrence o{c.order, index.project(members)};
    by_key[c.key].push_back(std::move(o));
    shape_of.emplace(c.key, std::move(c));
  };
  std::function<void(std::vector<int>&, std::set<int>, int)> grow =
      [&](std::vector<int>& members, std::set<int> extension, int seed) {
        if (members.size() >= 2) record(members);
        if (static_cast<int>(members.size()) == options.max_nodes) return;
        while (!extension.empty()) {
          const int w = *extension.begin();
          extension.erase(extension.begin());
          std::set<int> next = extension;
          for (int u : neighbours[static_cast<size_t>(w)]) {
            if (u <= seed || std::find(members.begin(), members.end(), u) != members.end())
              continue;
            bool exclusive = true;  // not already a neighbour of the subgraph
            for (int m : members)
              exclusive = exclusive && neighbours[static_cast<size_t>(m)].count(u) == 0;
            if (exclusive) next.insert(u);
          }
          members.push_back(w);
          grow(members, next, seed);
          members.pop_back();
        }
      };
  for (int v = 0; v < n; ++v) {
    std::set<int> extension;
    for (int u : neighbours[static_cast<size_t>(v)])
      if (u > v) extension.insert(u);
    std::vector<int> members{v};
    grow(members, extension, v);
  }

  // Closed patterns only: drop one whose every occurrence sits inside an occurrence of a single
  // larger pattern that occurs at least as often.
  std::map<int, std::vector<std::pair<const std::string*, const Occurrence*>>> occurrences_at;
  for (const auto& [key, occs] : by_key)
    for (const auto& o : occs)
      for (int m : o.nodes) occurrences_at[m].push_back({&key, &o});
  for (const auto& [key, occs] : by_key) {
    if (static_cast<int>(occs.size()) < options.min_count) continue;
    std::set<const std::string*> covering;
    bool first = true;
    for (const auto& o : occs) {
      std::set<const std::string*> here;
      const std::set<int> members(o.nodes.begin(), o.nodes.end());
      for (const auto& [other_key, other] : occurrences_at[o.nodes[0]]) {
        if (other->nodes.size() <= o.nodes.size() || *other_key == key) continue;
        if (by_key.at(*other_key).size() < occs.size()) continue;
        bool contains = true;
        for (int m : members)
          contains = contains &&
                     std::find(other->nodes.begin(), other->nodes.end(), m) != other->nodes.end();
        if (contains) here.insert(other_key);
      }
      if (first) {
        covering = here;
        first = false;
      } else {
        std::set<const std::string*> both;
        for (const auto* k : covering)
          if (here.count(k) > 0) both.insert(k);
        covering = both;
      }
      if (covering.empty()) break;
    }
    if (!covering.empty()) continue;

    const Canonical& shape = shape_of.at(key);
    FusionPattern p;
    p.key = key;
    p.backward = key.rfind("backward:", 0) == 0;
    for (int m : shape.order) {
      p.labels.push_back(labels[static_cast<size_t>(m)]);
      p.classes.push_back(fusion_class_name(cls[static_cast<size_t>(m)]));
    }
    p.edges = shape.edges;
    p.text = pattern_text(p.labels, p.edges);
    p.count = static_cast<int>(occs.size());
    const Occurrence* heaviest = nullptr;
    for (const auto& o : occs) {
      p.measured_s += o.projection.measured_s;
      p.before_s += o.projection.before_s;
      p.after_s += o.projection.after_s;
      if (heaviest == nullptr || o.projection.measured_s > heaviest->projection.measured_s)
        heaviest = &o;
    }
    p.saving_s = p.before_s - p.after_s;
    p.step_s = graph.step_s;
    p.saving_share = graph.step_s > 0 ? p.saving_s / graph.step_s : 0;
    p.example_layer = graph.nodes[static_cast<size_t>(heaviest->nodes[0])].layer;
    for (int m : heaviest->nodes)
      p.example_signatures.push_back(graph.nodes[static_cast<size_t>(m)].root_signature);
    out.patterns.push_back(std::move(p));
  }
  std::stable_sort(out.patterns.begin(), out.patterns.end(),
                   [](const auto& a, const auto& b) { return a.saving_s > b.saving_s; });
  return out;
}

std::vector<FusionPattern> merge_patterns(const std::vector<FusionMining>& minings,
                                          const std::vector<std::string>& names) {
  std::map<std::string, FusionPattern> merged;
  std::map<std::string, double> heaviest;
  double steps = 0;
  for (const auto& m : minings) steps += m.step_s;
  for (size_t i = 0; i < minings.size(); ++i) {
    for (const auto& p : minings[i].patterns) {
      auto [it, fresh] = merged.emplace(p.key, p);
      FusionPattern& q = it->second;
      const double example_s = p.measured_s / std::max(1, p.count);
      if (fresh) {
        q.workloads.clear();
        heaviest[p.key] = example_s;
      } else {
        q.count += p.count;
        q.measured_s += p.measured_s;
        q.before_s += p.before_s;
        q.after_s += p.after_s;
        q.saving_s += p.saving_s;
        if (example_s > heaviest[p.key]) {
          heaviest[p.key] = example_s;
          q.example_layer = p.example_layer;
          q.example_signatures = p.example_signatures;
        }
      }
      if (i < names.size()) q.workloads.push_back(names[i]);
    }
  }
  std::vector<FusionPattern> out;
  for (auto& [key, p] : merged) {
    p.step_s = steps;
    p.saving_share = steps > 0 ? p.saving_s / steps : 0;
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.saving_s > b.saving_s; });
  return out;
}

}  // namespace plumb::analysis
