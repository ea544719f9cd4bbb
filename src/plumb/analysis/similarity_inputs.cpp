// Builds the similarity vectors from stored profiles (see similarity_inputs.h).
#include "plumb/analysis/similarity_inputs.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/breakdown.h"
#include "plumb/core/errors.h"
#include "plumb/core/mode.h"
#include "plumb/core/text.h"
#include "plumb/store/profile_records.h"

namespace plumb::analysis {
namespace {

bool from_sweep(const store::StoredProfile& p) {
  return p.group.rfind(store::kSweepGroupPrefix, 0) == 0;
}

bool usable(const store::StoredProfile& p) {
  return p.result.status == run::RunStatus::kOk && p.result.profile.op_self_s > 0 &&
         !p.result.profile.ops.empty() && !from_sweep(p);
}

// "mode train, threads 2, tag 'x', 3 workloads" for the error message.
std::string filters_text(const SimilarityQuery& q) {
  std::vector<std::string> parts;
  if (!q.mode.empty()) parts.push_back("mode " + q.mode);
  if (q.threads > 0) parts.push_back(fmt::format("threads {}", q.threads));
  if (!q.tag.empty()) parts.push_back("tag '" + q.tag + "'");
  if (!q.workloads.empty())
    parts.push_back(q.workloads.size() <= 4 ? "workloads " + join(q.workloads, ", ")
                                            : fmt::format("{} workloads", q.workloads.size()));
  return parts.empty() ? "" : " (" + join(parts, ", ") + ")";
}

}  // namespace

FeatureVectors profile_vectors(const store::ResultsStore& store, const SimilarityQuery& query) {
  if (query.by != "category" && query.by != "op")
    throw UsageError("unknown --by '" + query.by +
                     "'; valid: category (op categories), op (operator types)");
  if (!query.mode.empty()) parse_mode(query.mode);  // throws for anything else

  // Workload rank for ordering rows; also the filter when a list is given.
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < query.workloads.size(); ++i) rank.emplace(query.workloads[i], i);

  // (rank, workload, mode: train first, threads) -> latest usable profile. Profiles come in id
  // order, so a later one simply replaces an earlier one.
  using Key = std::tuple<size_t, std::string, int, int>;
  std::map<Key, store::StoredProfile> latest;
  for (auto& p : store.load_profiles()) {
    if (!usable(p)) continue;
    if (!query.mode.empty() && p.mode != query.mode) continue;
    if (query.threads > 0 && p.threads != query.threads) continue;
    if (!query.tag.empty() && p.tag != query.tag) continue;
    const auto r = rank.find(p.workload);
    if (!rank.empty() && r == rank.end()) continue;
    const Key key{rank.empty() ? 0 : r->second, p.workload, p.mode == "train" ? 0 : 1, p.threads};
    latest[key] = std::move(p);
  }
  if (latest.size() < 2)
    throw UsageError(fmt::format(
        "'{}' holds {} finished profile(s){}; similarity compares at least 2: create them with "
        "plumb profile W --mode {} --db {} for each workload W to compare",
        store.path(), latest.size(), filters_text(query), query.mode.empty() ? "train" : query.mode,
        store.path()));

  std::set<int> thread_counts;
  for (const auto& [key, p] : latest) thread_counts.insert(p.threads);
  std::vector<std::map<std::string, double>> shares;
  FeatureVectors out;
  for (const auto& [key, p] : latest) {
    out.labels.push_back(p.workload + " " + p.mode +
                         (thread_counts.size() > 1 ? fmt::format(" {}thr", p.threads) : ""));
    shares.push_back(query.by == "op" ? op_type_shares(p.result.profile)
                                      : category_shares(p.result.profile));
  }

  std::map<std::string, double> mean_share;
  for (const auto& row : shares)
    for (const auto& [name, share] : row) mean_share[name] += share / shares.size();
  std::vector<std::pair<std::string, double>> columns(mean_share.begin(), mean_share.end());
  std::stable_sort(columns.begin(), columns.end(),  // map order: ties stay by name
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, mean] : columns) out.features.push_back(name);
  for (const auto& row : shares) {
    std::vector<double> values;
    for (const auto& name : out.features) {
      const auto it = row.find(name);
      values.push_back(it == row.end() ? 0.0 : it->second);
    }
    out.values.push_back(std::move(values));
  }
  return out;
}

}  // namespace plumb::analysis
