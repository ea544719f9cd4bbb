// plumb report: everything a results database holds, as one self-contained HTML page of
// workload cards, Vega-Lite charts and sortable tables (page.h). Sections appear only when the
// database has their data: first a card per workload (what bounds it and why, its time and
// memory mix, its precision gains), then the views across workloads (operator categories,
// cumulative curves, training vs inference, similarity), then the detail: machine and
// ceilings, throughput and latency, precision, thread scaling and rooflines, memory by
// category, data-parallel scaling, sweeps, and a comparison of two sources.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/similarity.h"
#include "plumb/report/page.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/serve_records.h"
#include "plumb/store/sweep_records.h"
#include "plumb/store/tune_record.h"

namespace plumb::report {

// What the report reads, loaded once from a store.
struct ReportData {
  std::string db_path;
  std::vector<store::StoredRun> runs;  // summaries only: samples are not needed for the charts
  std::vector<store::StoredProfile> profiles;
  std::vector<store::StoredMemoryProfile> memory;
  std::vector<store::StoredSweep> sweeps;
  std::map<int64_t, std::vector<store::SweepPointRecord>> sweep_points;  // by sweep id
  std::vector<store::StoredProbe> probes;
  std::vector<store::PrecisionComparisonRecord> precision;  // plumb precision's findings
  std::vector<store::UntimedPrecision> untimed;             // left untimed by quick passes
  std::vector<store::StoredDistWorld> dist;                 // plumb dist's worlds
  std::vector<store::StoredServeSession> serve;             // plumb serve's sessions
  // The engine iterations of the token-level measurements whose timeline the serving section
  // draws (token_timelines), by measurement id; no other measurement's are loaded.
  std::map<int64_t, std::vector<run::IterationRecord>> serve_iterations;
  std::vector<store::StoredTuneSession> tune;  // plumb tune's sessions
  // Operator graphs of the newest successful profile per workload, mode and precision (by
  // profile id; profiles stored before graph capture have none), and the fused-kernel checks.
  std::map<int64_t, profile::StepGraph> graphs;
  std::vector<store::StoredFusedKernelCheck> fused_checks;
  // Per mode: each workload's operator-category time shares (analysis/similarity_inputs.h) at
  // the thread count most of that mode's profiles used; absent with fewer than two workloads.
  std::map<std::string, analysis::FeatureVectors> similarity;
};
ReportData load_report_data(const store::ResultsStore& store);

struct ReportRequest {
  std::string db;            // the database the report describes
  std::string compare_db;    // optional second database: a comparison section (B vs the db)
  std::string tag_a, tag_b;  // optional: compare two tagged groups within the db
  std::string generated_at;  // shown in the header; empty = now (UTC)
};

// The page; throws UsageError for an unreadable database or a bad comparison request.
Page build_report(const ReportRequest& request);

// Sections (each file report_*.cpp); nullopt when the data for it is absent.
std::optional<Section> machine_section(const ReportData& data);
std::optional<Section> throughput_section(const ReportData& data);
// The front page: one card per workload (report_workloads.cpp).
std::optional<Section> workloads_section(const ReportData& data);
// Operator-time views across workloads (heat map, cumulative curves, modes, similarity).
std::optional<Section> cross_workload_section(const ReportData& data);
// Thread scaling and each profile's roofline.
std::optional<Section> time_section(const ReportData& data);
std::optional<Section> memory_section(const ReportData& data);
std::optional<Section> precision_section(const ReportData& data);
// plumb dist: throughput over workers, the step's split, every world (report_dist.cpp).
std::optional<Section> dist_section(const ReportData& data);
// plumb serve: tail latency over throughput with the bound, the rates found (report_serve.cpp).
// Its chart and table take one-shot sessions (kind "query") only; token_serve_blocks follow them.
std::optional<Section> serve_section(const ReportData& data);
// plumb serve on generative models (report_token_serve.cpp), part of the serving section: TTFT
// and TPOT at the bounds' percentile and goodput over the offered request rate, the engine's
// decode batch and KV occupancy over one measurement per series, and a table of every token-level
// session; empty when the database holds none.
std::vector<Block> token_serve_blocks(const ReportData& data);
// The token-level sessions those charts draw: ok ones, the newest per series and setting, in id
// order.
std::vector<const store::StoredServeSession*> drawn_token_sessions(
    const std::vector<store::StoredServeSession>& sessions);
// Per series of the drawn sessions, the one measurement whose engine timeline is drawn: the
// newest searched session's trial at its found rate, else the newest run at a given rate, else
// the newest Offline run.
struct TokenTimeline {
  const store::StoredServeSession* session = nullptr;
  const store::StoredServeMeasurement* measurement = nullptr;
};
std::vector<TokenTimeline> token_timelines(const std::vector<store::StoredServeSession>& sessions);
// plumb tune: best over stock, what each change is worth, headroom (report_tune.cpp).
std::optional<Section> tune_section(const ReportData& data);
// Fusion opportunities mined from the stored graphs (report_fusion.cpp).
std::optional<Section> fusion_section(const ReportData& data);
// The similarity dendrogram per mode (part of the cross-workload section), for three or more
// workloads.
std::vector<Block> similarity_blocks(const ReportData& data);
std::vector<Section> sweep_sections(const ReportData& data, const ReportData* other);
// plumb compare's result for --compare or --tag-a/--tag-b; the reason in the intro when the
// two sides have nothing in common.
std::optional<Section> comparison_section(const ReportRequest& request);

// The records the report shows when several measured the same thing: the newest per key.
template <typename Record, typename KeyFn>
std::vector<Record> newest_per_key(const std::vector<Record>& records, KeyFn key) {
  std::map<decltype(key(records.front())), size_t> newest;
  std::vector<Record> out;
  for (size_t i = 0; i < records.size(); ++i) newest[key(records[i])] = i;  // ids ascend
  for (const auto& [k, i] : newest) out.push_back(records[i]);
  return out;
}

// " [tag]" after a label, or nothing for an untagged record: how every label names its tag.
std::string tag_suffix(const std::string& tag);

// "resnet50 train" / "resnet50 infer" (+ " [tag]" when tagged): how a record is labelled.
std::string record_label(const store::StoredRecord& record);

// "resnet50 infer b8 t4" (+ " [tag]"): a setting in the charts of records that keep their
// workload, mode, batch, threads and tag (tune sessions, precision comparisons).
template <typename Record>
std::string setting_label(const Record& r) {
  return r.workload + " " + r.mode + " b" + std::to_string(r.batch) + " t" +
         std::to_string(r.threads) + tag_suffix(r.tag);
}

}  // namespace plumb::report
