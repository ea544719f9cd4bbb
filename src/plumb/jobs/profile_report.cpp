// plumb profile's reporters (see profile_report.h).
#include "plumb/jobs/profile_report.h"

#include <map>

#include <fmt/format.h>

#include "plumb/analysis/phase_profile.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"
#include "plumb/core/json_number.h"
#include "plumb/report/text_table.h"
#include "plumb/store/profile_records.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;
using report::format_seconds;

// A row's place on the roofs (bound, the roof in words, the fraction of it reached); nulls
// without roofs.
void add_bound_json(nlohmann::ordered_json& row, const analysis::Placement* p,
                    const analysis::Ceilings* roofs) {
  row["bound"] = row["roof"] = row["roof_fraction"] = nullptr;
  if (p == nullptr || roofs == nullptr) return;
  row["bound"] = p->bound;
  if (p->flops <= 0 && p->bytes <= 0) return;  // no costed work: on no roof
  row["roof"] = analysis::roof_words(*p, *roofs);
  row["roof_fraction"] = json_number(p->roof_fraction);
}

// The breakdown of `prof` (a whole step, or one phase of a generation: phase_profile.h) into `j`,
// each row placed on `roofs` when there are roofs.
void add_breakdown_json(nlohmann::ordered_json& j, const profile::StepProfile& prof,
                        const ProfileView& view, const analysis::Ceilings* roofs) {
  const auto b = analysis::breakdown(prof, view.by);
  const auto placed = roofs ? analysis::place_rows(prof, view.by, *roofs)
                            : std::map<std::string, analysis::Placement>{};
  const auto curve = analysis::cumulative_curve(prof);
  double flops = 0, bytes = 0;
  for (const auto& row : b.rows) {
    flops += row.flops;
    bytes += row.bytes;
  }
  j["op_time_s"] = json_number(b.op_time_s);
  j["overhead_s"] = json_number(b.overhead_s);
  j["cpu_utilization"] = json_number(prof.cpu_utilization);
  j["flops"] = flops;
  j["bytes"] = bytes;
  j["uncosted_time_s"] = b.uncosted_time_s;
  j["uncosted_share"] = json_number(b.uncosted_share);
  j["uncosted_ops"] = b.uncosted_ops;
  j["ops_for_90_percent"] = curve.count_for_90;
  j["rows"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < b.rows.size() && (view.top == 0 || i < view.top); ++i) {
    const auto& row = b.rows[i];
    nlohmann::ordered_json r = {{"name", row.name},
                                {"time_s", row.time_s},
                                {"time_share", json_number(row.time_share)},
                                {"calls", row.calls},
                                {"flops", row.flops},
                                {"bytes", row.bytes},
                                {"gflops_per_s", row.gflops_per_s},
                                {"gbytes_per_s", row.gbytes_per_s},
                                {"intensity", row.intensity},
                                {"uncosted_time_s", row.uncosted_time_s}};
    const auto at = placed.find(row.name);
    add_bound_json(r, at == placed.end() ? nullptr : &at->second, roofs);
    j["rows"].push_back(std::move(r));
  }
  nlohmann::ordered_json cum = nlohmann::ordered_json::array();
  for (size_t i = 0; i < curve.names.size(); ++i)
    cum.push_back(
        {{"name", curve.names[i]}, {"share", curve.share[i]}, {"cumulative", curve.cumulative[i]}});
  j["cumulative"] = cum;
}

// One phase of a generation: its time per step and per call (a decode call makes one token),
// and its own breakdown, with shares of the phase's time.
nlohmann::ordered_json phase_json(const profile::StepProfile& prof, const analysis::PhaseTime& t,
                                  const ProfileView& view, const analysis::Ceilings* roofs) {
  nlohmann::ordered_json j;
  j["phase"] = phase_name(t.phase);
  j["calls"] = t.calls;
  j["time_s"] = t.seconds;
  j["time_per_call_s"] = t.per_call_s();
  add_breakdown_json(j, analysis::phase_profile(prof, t.phase), view, roofs);
  j["flops_per_call"] = t.calls > 0 ? j["flops"].get<double>() / t.calls : 0.0;
  j["bytes_per_call"] = t.calls > 0 ? j["bytes"].get<double>() / t.calls : 0.0;
  return j;
}

nlohmann::ordered_json profile_pass_json(const store::StoredProfile& p, const ProfileView& view,
                                         const analysis::Ceilings* roofs) {
  const auto& r = p.result;
  nlohmann::ordered_json j;
  j["profile_id"] = p.id;
  j["threads"] = p.threads;
  j["mode"] = p.mode;
  j["status"] = run::status_name(r.status);
  j["message"] = r.message;
  j["command"] = r.command;
  j["steps"] = r.profile.steps;
  j["step_s"] = json_number(r.profile.step_s);
  j["learning_step_s"] = json_number(r.learning_step_s);
  j["replayed_steps"] =
      r.replayed_steps >= 0 ? nlohmann::ordered_json(r.replayed_steps) : nlohmann::ordered_json();
  if (r.status != run::RunStatus::kOk && r.profile.ops.empty()) return j;
  if (!analysis::has_phases(r.profile)) {
    add_breakdown_json(j, r.profile, view, roofs);
    return j;
  }
  // A generation: the pass's own rows are the phase asked for (the whole step for both), and
  // each phase shown has its own breakdown.
  j["phase"] = view.phase ? phase_name(*view.phase) : "both";
  add_breakdown_json(j, view.phase ? analysis::phase_profile(r.profile, *view.phase) : r.profile,
                     view, roofs);
  j["phases"] = nlohmann::ordered_json::array();
  for (const auto& t : analysis::phase_times(r.profile, view.phase))
    j["phases"].push_back(phase_json(r.profile, t, view, roofs));
  return j;
}

nlohmann::ordered_json scaling_fits_json(const std::vector<analysis::ScalingFit>& fits) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : fits)
    out.push_back({{"name", f.name},
                   {"threads", f.threads},
                   {"time_s", f.time_s},
                   {"speedup", f.speedup},
                   {"serial_fraction", f.serial_fraction},
                   {"r_squared", json_number(f.r_squared)}});
  return out;
}

// The rows of `prof` (a step, or one phase); `per_call` > 0 (a phase's calls per step) adds
// each row's time per call of the phase: a decode call makes one token. With `roofs`, each
// row's bound and the share of its roof it reached.
void print_breakdown(std::ostream& out, const profile::StepProfile& prof, const ProfileView& view,
                     double per_call, const analysis::Ceilings* roofs) {
  const auto b = analysis::breakdown(prof, view.by);
  const auto placed = roofs ? analysis::place_rows(prof, view.by, *roofs)
                            : std::map<std::string, analysis::Placement>{};
  std::vector<std::string> header = {"name", "time",    "share", "calls", "GFLOP",
                                     "MB",   "GFLOP/s", "GB/s",  "FLOP/B"};
  if (per_call > 0) header.insert(header.begin() + 2, "per call");
  if (roofs) header.push_back("bound");
  report::TextTable t(header);
  const size_t limit = view.top == 0 ? 15 : view.top;
  for (size_t i = 0; i < b.rows.size() && i < limit; ++i) {
    const auto& row = b.rows[i];
    std::vector<std::string> cells = {row.name,
                                      format_seconds(row.time_s),
                                      format_percent(row.time_share),
                                      format_number(row.calls, 0),
                                      format_number(row.flops / 1e9, 3),
                                      format_number(row.bytes / 1e6, 1),
                                      format_number(row.gflops_per_s, 2),
                                      format_number(row.gbytes_per_s, 2),
                                      format_number(row.intensity, 2)};
    if (per_call > 0) cells.insert(cells.begin() + 2, format_seconds(row.time_s / per_call));
    if (roofs) {
      const auto at = placed.find(row.name);
      cells.push_back(at == placed.end() ? "" : analysis::bound_text(at->second, *roofs));
    }
    t.add_row(cells);
  }
  std::vector<std::string> overhead(header.size(), "");
  overhead[0] = "(framework overhead)";
  overhead[1] = format_seconds(b.overhead_s);
  overhead[per_call > 0 ? 3 : 2] = format_percent(b.overhead_s / prof.step_s);
  t.add_row(overhead);
  t.print(out);
  if (b.rows.size() > limit) out << "(" << b.rows.size() - limit << " more rows; --top N)\n";
}

void print_profile_pass(std::ostream& out, const store::StoredProfile& p, const ProfileView& view,
                        const analysis::Ceilings* roofs) {
  const auto& r = p.result;
  out << fmt::format("\n{} {} batch {}, {} thread(s): {} step(s) observed, {} per step\n",
                     p.workload, p.mode, p.batch, p.threads, r.profile.steps,
                     format_seconds(r.profile.step_s));
  if (r.status != run::RunStatus::kOk)
    out << "profile incomplete (" << run::status_name(r.status) << "): " << r.message << '\n';
  if (r.profile.ops.empty()) return;
  if (!analysis::has_phases(r.profile)) print_breakdown(out, r.profile, view, 0, roofs);
  for (const auto& t : analysis::phase_times(r.profile, view.phase)) {
    out << fmt::format(
        "\n[{}] {} call(s) per step, {} per step, {} per call{}; shares are of "
        "the {}'s time\n",
        phase_name(t.phase), format_number(t.calls, 0), format_seconds(t.seconds),
        format_seconds(t.per_call_s()), t.phase == Phase::kDecode ? " (one token per request)" : "",
        phase_name(t.phase));
    print_breakdown(out, analysis::phase_profile(r.profile, t.phase), view, t.calls, roofs);
  }
  // The summary is of what was shown: the phase asked for, or the whole step.
  const profile::StepProfile shown = view.phase && analysis::has_phases(r.profile)
                                         ? analysis::phase_profile(r.profile, *view.phase)
                                         : r.profile;
  const auto b = analysis::breakdown(shown, view.by);
  const auto curve = analysis::cumulative_curve(shown);
  out << fmt::format(
      "{} operator types cover 90% of operator time (of {}); uncosted operators: {} of the step"
      "{}; CPU utilisation {}\n",
      curve.count_for_90, curve.names.size(), format_percent(b.uncosted_share),
      b.uncosted_ops.empty()
          ? ""
          : " (" + b.uncosted_ops.front() + (b.uncosted_ops.size() > 1 ? ", ..." : "") + ")",
      format_percent(r.profile.cpu_utilization));
}

void print_scaling_fits(std::ostream& out, const std::vector<analysis::ScalingFit>& fits) {
  if (fits.empty()) return;
  std::vector<std::string> header = {"category"};
  for (int t : fits.front().threads) header.push_back(fmt::format("{} thr", t));
  header.insert(header.end(), {"speedup", "serial fraction (Amdahl)"});
  report::TextTable t(header);
  for (const auto& f : fits) {
    std::vector<std::string> row = {f.name};
    for (double s : f.time_s) row.push_back(format_seconds(s));
    row.push_back(format_number(f.speedup.back(), 2) + "x");
    row.push_back(format_number(f.serial_fraction, 2));
    t.add_row(row);
  }
  out << "\nthread scaling (time per step; speedup at the largest thread count):\n";
  t.print(out);
}

void print_train_vs_infer(std::ostream& out, const analysis::ModeComparison& c) {
  out << fmt::format("\ntraining vs inference: step {} vs {} ({:.2f}x)\n",
                     format_seconds(c.train_step_s), format_seconds(c.infer_step_s), c.step_ratio);
  report::TextTable t({"category", "train share", "infer share"});
  for (const auto& [name, shares] : c.category_share)
    t.add_row({name, format_percent(shares.first), format_percent(shares.second)});
  t.print(out);
}

// The roofs pass `i` is placed on, or nullptr (none stored, or a result built without them).
const analysis::Ceilings* roofs_of_pass(const ProfileJobResult& result, size_t i) {
  return i < result.roofs.size() && result.roofs[i] ? &*result.roofs[i] : nullptr;
}

// Once for all passes: what the bound column means, or why there is none and what to run.
void print_roofs_legend(std::ostream& out, const ProfileJobResult& result) {
  if (!result.roofs_note.empty()) out << "\nbound: not shown: " << result.roofs_note << '\n';
  if (result.probe_id <= 0) return;
  out << fmt::format(
      "\nbound: each row on the roofs of probe #{} as plumb roofline places it: compute or "
      "memory:<level> by its intensity against the ridge of its dtype's roof at the slowest "
      "level fast enough for its data rate, overhead under 10% of that roof; the percentage is "
      "of that roof\n",
      result.probe_id);
}

}  // namespace

nlohmann::ordered_json profile_json(const ProfileJobResult& result, const ProfileView& asked) {
  ProfileView view = asked;
  view.phase = result.phase;
  nlohmann::ordered_json out;
  out["workload"] = result.workload;
  out["batch"] = result.batch;
  out["by"] = view.by_name;
  out["group"] = result.group;
  out["probe_id"] = result.probe_id > 0 ? nlohmann::ordered_json(result.probe_id) : nullptr;
  out["roofs_note"] = result.roofs_note;
  out["passes"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.passes.size(); ++i)
    out["passes"].push_back(profile_pass_json(result.passes[i], view, roofs_of_pass(result, i)));
  out["scaling"] = nlohmann::ordered_json::object();
  for (const auto& [mode, fits] : result.scaling) out["scaling"][mode] = scaling_fits_json(fits);
  if (const auto& c = result.train_vs_infer) {
    nlohmann::ordered_json shares = nlohmann::ordered_json::object();
    for (const auto& [cat, s] : c->category_share)
      shares[cat] = {{"train", s.first}, {"infer", s.second}};
    out["train_vs_infer"] = {{"train_step_s", c->train_step_s},
                             {"infer_step_s", c->infer_step_s},
                             {"step_ratio", json_number(c->step_ratio)},
                             {"category_share", shares}};
  }
  return out;
}

void print_profile(std::ostream& out, const ProfileJobResult& result, const ProfileView& asked) {
  ProfileView view = asked;
  view.phase = result.phase;
  for (size_t i = 0; i < result.passes.size(); ++i)
    print_profile_pass(out, result.passes[i], view, roofs_of_pass(result, i));
  print_roofs_legend(out, result);
  for (const auto& [mode, fits] : result.scaling) {
    out << "\n[" << mode << "]";
    print_scaling_fits(out, fits);
  }
  if (result.train_vs_infer) print_train_vs_infer(out, *result.train_vs_infer);
  out << "\nstored as profile group " << result.group << " in " << result.db_path << '\n';
}

}  // namespace plumb::jobs
