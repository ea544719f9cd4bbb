// The report's front page: one card per workload saying what it does to the machine, drawn
// from the newest records of each kind (analysis/workload_findings.h): what bounds each
// profiled mode and why (a generation: each phase too, with its TTFT and TPOT), the step's time
// by operator category and its top operator types, the memory mix at the step's peak, the fp32
// throughput, and what each reduced precision gained.
// A field whose record is missing says which command measures it.
#include <map>
#include <set>

#include <fmt/format.h>

#include "plumb/analysis/workload_findings.h"
#include "plumb/core/text.h"
#include "plumb/report/generation_card.h"
#include "plumb/report/report.h"
#include "plumb/report/text_table.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/run_record.h"

namespace plumb::report {
namespace {

constexpr const char* kModes[] = {"train", "infer"};

// The newest records of one workload that a card reads (pointers into ReportData).
struct WorkloadRecords {
  std::map<std::string, const store::StoredRun*> runs;          // mode -> newest ok fp32 run
  std::map<std::string, const store::StoredProfile*> profiles;  // mode -> newest ok profile
  const store::StoredMemoryProfile* memory = nullptr;           // newest ok pass, train first
  std::map<std::string, const store::PrecisionComparisonRecord*> precisions;  // dtype -> newest
  std::set<std::string> unsupported;  // precisions that could not run here
  std::set<std::string> ran;          // precisions with any inference run (ok or not)
  // Precisions a quick characterization left untimed: dtype -> why, and the command that times it
  std::map<std::string, const store::UntimedPrecision*> untimed;
};

bool ok(const store::StoredRecord& r, run::RunStatus status) {
  return status == run::RunStatus::kOk && r.dtype == Dtype::kFp32;
}

// Workloads in the order they were first measured (a characterization's suite order).
std::vector<std::string> workload_order(const ReportData& d) {
  std::map<int64_t, std::string> first;  // the lowest id per workload over runs and profiles
  std::map<std::string, int64_t> seen;
  auto note = [&](const store::StoredRecord& r, int64_t rank) {
    const auto [it, inserted] = seen.emplace(r.workload, rank);
    if (!inserted && rank < it->second) it->second = rank;
  };
  // Ids of different tables are not comparable; runs first, then records of workloads never run.
  for (const auto& r : d.runs) note(r, r.id);
  for (const auto& p : d.profiles) note(p, (int64_t{1} << 40) + p.id);
  for (const auto& m : d.memory) note(m, (int64_t{1} << 41) + m.id);
  for (const auto& [workload, rank] : seen) first[rank] = workload;
  std::vector<std::string> out;
  for (const auto& [rank, workload] : first) out.push_back(workload);
  return out;
}

std::map<std::string, WorkloadRecords> records_by_workload(const ReportData& d) {
  std::map<std::string, WorkloadRecords> by;
  for (const auto& r : d.runs) {  // id order: the last one wins
    if (ok(r, r.result.status)) by[r.workload].runs[r.mode] = &r;
    if (r.result.status == run::RunStatus::kUnsupported)
      by[r.workload].unsupported.insert(dtype_name(r.dtype));
    if (r.mode == "infer") by[r.workload].ran.insert(dtype_name(r.dtype));
  }
  for (const auto& p : d.profiles)
    if (ok(p, p.result.status) && !p.result.profile.ops.empty())
      by[p.workload].profiles[p.mode] = &p;
  for (const auto& m : d.memory) {
    if (!ok(m, m.result.status)) continue;
    auto& current = by[m.workload].memory;
    // A training step's mix explains more (gradients, optimizer state) than inference's.
    if (current == nullptr || m.mode == "train" || current->mode != "train") current = &m;
  }
  for (const auto& c : d.precision) by[c.workload].precisions[dtype_name(c.dtype)] = &c;
  for (const auto& u : d.untimed) {  // id order: the newest decision wins
    const auto it = by.find(u.workload);
    if (it != by.end() && it->second.ran.count(u.dtype) == 0) it->second.untimed[u.dtype] = &u;
  }
  return by;
}

std::string profile_hint(const std::string& workload, const std::string& db) {
  return fmt::format("not profiled: plumb profile {} --db {}", workload, db);
}

Card card_for(const std::string& workload, const WorkloadRecords& r, const ReportData& d) {
  Card card;
  card.id = "card-" + workload;
  card.title = workload;
  std::vector<std::string> sub;
  for (const char* mode : kModes) {
    const auto it = r.runs.find(mode);
    if (it == r.runs.end()) continue;
    const auto& run = *it->second;
    sub.push_back(fmt::format("{} {} {} (batch {}, {} threads)", mode,
                              format_rate(run.result.throughput), run.result.throughput_unit,
                              run.batch, run.threads));
  }
  card.subtitle = sub.empty() ? "no fp32 timed run stored" : join(sub, " · ");
  const auto infer = r.runs.find("infer");
  if (infer != r.runs.end())
    if (auto field = generation_field(*infer->second)) card.fields.push_back(std::move(*field));

  // The mode that explains the workload first: training where it was profiled.
  const store::StoredProfile* main_profile = nullptr;
  for (const char* mode : kModes) {
    const auto it = r.profiles.find(mode);
    if (it == r.profiles.end()) continue;
    const auto& p = *it->second;
    if (main_profile == nullptr) main_profile = &p;
    const auto ceilings = analysis::profile_ceilings(p, d.probes);
    const auto finding = analysis::bound_finding(p.result.profile, ceilings ? &*ceilings : nullptr);
    std::string text = fmt::format(
        "{}: {}", mode == std::string("train") ? "Training" : "Inference", finding.sentence);
    if (finding.step_utilisation >= 0)
      text +=
          fmt::format(" (whole step: {:.0f}% of the fp32 peak).", finding.step_utilisation * 100);
    else
      text += ".";
    card.findings.push_back(text);
    // A generation: what bounds each of its phases, one sentence each.
    for (auto& line : phase_bound_findings(p, ceilings ? &*ceilings : nullptr))
      card.findings.push_back(std::move(line));
  }
  if (main_profile == nullptr) {
    card.findings.push_back("What bounds it is unknown until an operator profile is stored.");
    card.fields.push_back({"Where the time goes", profile_hint(workload, d.db_path), {}, true});
    card.fields.push_back({"Top operators", profile_hint(workload, d.db_path), {}, true});
  } else {
    const auto& profile = main_profile->result.profile;
    const ShareBar bar{"time", analysis::category_time_shares(profile)};
    card.fields.push_back(
        {fmt::format("Where the {} step's time goes (by operator category)", main_profile->mode),
         analysis::shares_text(bar.parts, 4), bar, false});
    card.fields.push_back({"Top operators (share of operator time)",
                           analysis::shares_text(analysis::top_operator_types(profile, 4), 4),
                           {},
                           false});
  }

  if (r.memory == nullptr) {
    card.fields.push_back(
        {"Memory at the step's peak",
         fmt::format("not measured: plumb memory {} --db {}", workload, d.db_path),
         {},
         true});
  } else {
    const auto mix = analysis::memory_mix(r.memory->result.breakdown);
    card.fields.push_back(
        {fmt::format("Memory at the {} step's peak: {} MiB (batch {})", r.memory->mode,
                     format_rate(static_cast<double>(r.memory->result.breakdown.total_peak) /
                                 (1024.0 * 1024.0)),
                     r.memory->batch),
         analysis::shares_text(mix, 4), ShareBar{"memory", mix}, false});
  }

  std::vector<std::string> gains;
  for (const auto& [dtype, c] : r.precisions) gains.push_back(analysis::precision_gain_text(*c));
  for (const auto& dtype : r.unsupported)
    if (r.precisions.count(dtype) == 0) gains.push_back(dtype + " unsupported here");
  for (const auto& [dtype, u] : r.untimed)
    gains.push_back(fmt::format("{} not timed: {} (time it anyway: {})", dtype,
                                u->reason.substr(u->reason.find(": ") + 2), u->command));
  if (gains.empty())
    card.fields.push_back(
        {"Inference speed per precision against fp32",
         fmt::format("not measured: plumb precision {} --db {}", workload, d.db_path),
         {},
         true});
  else
    card.fields.push_back(
        {"Inference speed per precision against fp32", join(gains, ", "), {}, false});
  return card;
}

}  // namespace

std::optional<Section> workloads_section(const ReportData& d) {
  const auto by = records_by_workload(d);
  CardGrid grid;
  for (const auto& workload : workload_order(d)) {
    const auto it = by.find(workload);
    if (it == by.end()) continue;  // only failed records: listed in the detail sections
    grid.cards.push_back(card_for(workload, it->second, d));
  }
  if (grid.cards.empty()) return std::nullopt;
  grid.how_to_read =
      "Each card is one workload. Its first lines say what bounds each profiled step: the "
      "operator category with the most time, placed on this machine's measured roofs (compute-, "
      "memory- or overhead-bound, and how close to that roof it runs), the time other "
      "categories spend memory-bound, and the framework's own time. The bars split the step's "
      "time by operator category and the memory at the step's peak by what the bytes are (hover "
      "for each part). Precisions are inference throughput against fp32 with the output error. A "
      "generative model's card adds a line per phase of its generation (prefill, decode): the "
      "bytes and FLOPs its operators move and compute per token, and the phase placed on the "
      "roofs, with the time to first token and per output token of its newest run.";
  Section s{"workloads",
            "What each workload does to the machine",
            "From the newest fp32 timed runs, operator profiles, memory passes and precision "
            "comparisons of each workload (plumb characterize measures all of them in one pass). "
            "The sections after this one show the same records across workloads and in detail.",
            {}};
  s.blocks.push_back(std::move(grid));
  return s;
}

}  // namespace plumb::report
