// Builds the report page from one database (and optionally a second one to compare with) and
// writes it atomically.
#include "plumb/report/report.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "plumb/analysis/similarity_inputs.h"
#include "plumb/core/errors.h"
#include "plumb/core/version.h"

namespace plumb::report {
namespace {

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

}  // namespace

std::string tag_suffix(const std::string& tag) {
  return tag.empty() ? "" : " [" + tag + "]";
}

std::string record_label(const store::StoredRecord& record) {
  return record.workload + " " + record.mode + tag_suffix(record.tag);
}

ReportData load_report_data(const store::ResultsStore& store) {
  ReportData d;
  d.db_path = store.path();
  d.sweeps = store.load_sweeps();
  std::set<int64_t> sweep_runs;  // shown with their sweep, not among the workload runs
  for (const auto& s : d.sweeps) {
    d.sweep_points[s.id] = store.load_sweep_points(s.id);
    for (const auto& p : d.sweep_points[s.id]) sweep_runs.insert(p.run_id);
  }
  for (auto& r : store.load_runs(/*with_samples=*/false))
    if (sweep_runs.count(r.id) == 0) d.runs.push_back(std::move(r));
  // Passes a sweep made belong to its points (the sweep sections); the workload sections
  // show what was profiled on its own.
  for (auto& p : store.load_profiles())
    if (p.group.rfind(store::kSweepGroupPrefix, 0) != 0) d.profiles.push_back(std::move(p));
  for (auto& m : store.load_memory_profiles())
    if (m.group.rfind(store::kSweepGroupPrefix, 0) != 0) d.memory.push_back(std::move(m));
  d.probes = store.load_probes();
  d.precision = store.load_precision_comparisons();
  d.untimed = store.load_untimed_precisions();
  d.dist = store.load_dist_worlds();
  d.serve = store.load_serve_sessions();
  // A measurement's iterations can number tens of thousands: only the timelines drawn are read.
  for (const auto& t : token_timelines(d.serve))
    d.serve_iterations[t.measurement->id] = store.load_serve_iterations(t.measurement->id);
  d.tune = store.load_tune_sessions();
  d.fused_checks = store.load_fused_kernel_checks();
  {
    std::map<std::tuple<std::string, std::string, std::string>, int64_t> newest;
    for (const auto& p : d.profiles)
      if (p.result.status == run::RunStatus::kOk)
        newest[{p.workload, p.mode, dtype_name(p.dtype)}] = p.id;
    for (const auto& [key, id] : newest) {
      try {
        if (auto graph = store.load_profile_graph(id)) d.graphs.emplace(id, std::move(*graph));
      } catch (const UsageError&) {
        // An unreadable graph leaves its workload out of the fusion section, not the report.
      }
    }
  }
  for (const char* mode : {"train", "infer"}) {
    std::map<int, int> profiles_at;  // threads -> profiles of this mode
    for (const auto& p : d.profiles)
      if (p.mode == mode && p.result.status == run::RunStatus::kOk) ++profiles_at[p.threads];
    if (profiles_at.empty()) continue;
    analysis::SimilarityQuery query;
    query.mode = mode;
    query.threads = std::max_element(profiles_at.begin(), profiles_at.end(), [](auto& a, auto& b) {
                      return a.second < b.second;
                    })->first;
    try {
      d.similarity[mode] = analysis::profile_vectors(store, query);
    } catch (const UsageError&) {
      // Fewer than two workloads profiled in this mode: nothing to cluster.
    }
  }
  return d;
}

Page build_report(const ReportRequest& request) {
  const auto store = store::ResultsStore::open(request.db, /*read_only=*/true);
  const ReportData data = load_report_data(*store);
  std::optional<ReportData> other;
  if (!request.compare_db.empty()) {
    const auto store_b = store::ResultsStore::open(request.compare_db, /*read_only=*/true);
    other = load_report_data(*store_b);
  }
  Page page;
  page.title = "plumb report";
  page.subtitle =
      fmt::format("{} · {} runs, {} profiles, {} memory passes, {} sweeps · written {}", request.db,
                  data.runs.size(), data.profiles.size(), data.memory.size(), data.sweeps.size(),
                  request.generated_at.empty() ? utc_now() : request.generated_at);
  for (auto section :
       {workloads_section(data), cross_workload_section(data), machine_section(data),
        throughput_section(data), precision_section(data), time_section(data), memory_section(data),
        dist_section(data), serve_section(data), tune_section(data), fusion_section(data)})
    if (section) page.sections.push_back(std::move(*section));
  for (auto& s : sweep_sections(data, other ? &*other : nullptr))
    page.sections.push_back(std::move(s));
  if (auto c = comparison_section(request)) page.sections.push_back(std::move(*c));
  if (page.sections.empty())
    page.sections.push_back(
        Section{"empty",
                "Nothing measured yet",
                "This database holds no runs, profiles, memory passes, sweeps or probes. "
                "Measure something first, e.g. plumb run resnet50 --mode train --batch 8.",
                {}});
  page.footer = fmt::format("plumb {} ({}).", plumb_version(), plumb_git_commit());
  return page;
}

}  // namespace plumb::report
