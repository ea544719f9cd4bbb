// GEMM shapes of profiled steps (see gemm_census.h).
#include "plumb/analysis/gemm_census.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "plumb/profile/cost_model.h"
#include "plumb/profile/op_call.h"

namespace plumb::analysis {
namespace {

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

}  // namespace

GemmCensus gemm_census(const std::vector<GemmSource>& sources) {
  GemmCensus census;
  std::map<GemmShape, GemmCensusRow> by_shape;
  for (const auto& source : sources) {
    if (source.profile == nullptr) continue;
    double op_time = 0;
    for (const auto& op : source.profile->ops) op_time += op.self_s;
    if (op_time <= 0) continue;
    ++census.sources;
    const std::string label = source.workload + " " + source.mode;
    for (const auto& op : source.profile->ops) {
      if (op.kind != profile::kCosted || op.macs <= 0) continue;
      profile::OpCost cost;
      try {
        cost = profile::cost_of(profile::parse_signature(op.signature));
      } catch (const std::invalid_argument&) {
        cost = {};
      }
      double macs = 0;
      for (const auto& g : cost.gemms) macs += g.shape.macs();
      if (macs <= 0) {
        add_unique(census.unread, op.name);
        continue;
      }
      for (const auto& g : cost.gemms) {
        const double part = g.shape.macs() / macs;
        auto& row = by_shape[g.shape];
        row.shape = g.shape;
        row.calls += op.calls;
        row.time_s += op.self_s * part;
        row.share += op.self_s * part / op_time;
        census.gemm_share += op.self_s * part / op_time;
        add_unique(row.workloads, label);
        add_unique(row.ops, op.name + " " + g.role);
      }
    }
  }
  for (auto& [shape, row] : by_shape) {
    if (census.sources > 0) row.share /= static_cast<double>(census.sources);
    census.rows.push_back(std::move(row));
  }
  if (census.sources > 0) census.gemm_share /= static_cast<double>(census.sources);
  std::stable_sort(
      census.rows.begin(), census.rows.end(),
      [](const GemmCensusRow& a, const GemmCensusRow& b) { return a.share > b.share; });
  return census;
}

}  // namespace plumb::analysis
