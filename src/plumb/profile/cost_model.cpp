// The operator cost model's dispatch: one table from ATen operator name to cost rule, built
// once from the rule families (cost_rules_*.cpp). An operator without a rule is "not costed",
// never a silent zero. The per-op conventions are documented next to each rule.
#include <algorithm>

#include "plumb/profile/cost_model.h"
#include "plumb/profile/cost_rules.h"

namespace plumb::profile {

namespace {

const cost::CostTable& table() {
  static const cost::CostTable t = [] {
    cost::CostTable built;
    cost::add_gemm_rules(built);
    cost::add_elementwise_rules(built);
    cost::add_reduction_rules(built);
    cost::add_nn_rules(built);
    cost::add_data_rules(built);
    cost::add_index_rules(built);
    cost::add_huber_rules(built);
    cost::add_masked_rules(built);
    return built;
  }();
  return t;
}

}  // namespace

OpCost cost_of(const OpCall& call) {
  const auto& t = table();
  auto found = t.find(call.name);
  if (found == t.end()) return OpCost{};
  return found->second(call);
}

std::vector<std::string> costed_operator_names() {
  std::vector<std::string> names;
  names.reserve(table().size());
  for (const auto& kv : table()) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace plumb::profile
