// plumb roofline: a workload's operators or layers, and its whole step, placed on this
// machine's measured roofs (ParaDnn, Facebook DL inference): FLOPs, bytes, intensity,
// achieved FLOP/s, the attainable roof at the memory level the data fits, what bounds each,
// and FLOP utilisation (TBD eq. 2). Profiles the workload (stored like plumb profile) and
// reuses the newest stored probe of this machine, measuring a quick one if there is none.
#include <unistd.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/probe_source.h"
#include "plumb/cli/table.h"
#include "plumb/core/clock.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/precision.h"
#include "plumb/jobs/stored_or_fresh_profile.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/step_loop.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct RooflineFlags {
  MeasureFlags measure;
  std::string by = "layer";
  std::string peak = "instruction";
  size_t top = 0;
  int steps = 3;
  bool refresh_probe = false;
};

nlohmann::ordered_json placement_json(const analysis::Placement& p) {
  nlohmann::ordered_json roofs = nlohmann::ordered_json::object();
  for (const auto& r : p.roofs) roofs[r.level] = r.attainable_flops;
  return {{"name", p.name},
          {"seconds", p.seconds},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"intensity", json_number(p.intensity)},
          {"achieved_flops", json_number(p.achieved_flops)},
          {"achieved_bytes_per_s", json_number(p.achieved_bytes_per_s)},
          {"dtype", p.dtype},
          {"peak_flops", p.peak_flops},
          {"level", p.level},
          {"footprint_level", p.footprint_level},
          {"roof_flops", p.roof},
          {"bound", p.bound},
          {"roof_fraction", json_number(p.roof_fraction)},
          {"utilisation", json_number(p.utilisation)},
          {"roofs", roofs}};
}

void add_placement_row(Table& t, const analysis::Placement& p) {
  t.add_row({p.name, format_seconds(p.seconds), format_number(p.flops / 1e9, 3),
             format_number(p.bytes / 1e6, 1), format_number(p.intensity, 1),
             format_number(p.achieved_flops / 1e9, 1), p.level, format_number(p.roof / 1e9, 1),
             p.bound, format_percent(p.roof_fraction), format_percent(p.utilisation)});
}

}  // namespace

void add_roofline_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "roofline", "Place a workload's operators or layers on this machine's measured roofs");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<RooflineFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", f->measure.mode, "train or infer")->capture_default_str();
  cmd->add_option("--by", f->by, "Rows by op or layer")->capture_default_str();
  cmd->add_option("--peak", f->peak,
                  "Compute roof: instruction (the machine's peak) or gemm (the best library GEMM)")
      ->capture_default_str();
  cmd->add_option("--top", f->top, "Show only the K most expensive rows");
  cmd->add_option("--steps", f->steps, "Steps observed after warm-up")->capture_default_str();
  cmd->add_flag("--refresh-probe", f->refresh_probe, "Measure the machine again first");
  add_config_options(*cmd, *overrides);
  add_measure_options(*cmd, f->measure, 60, 30, SamplingOptions::kWithout, ThreadsOption::kSingle);
  restrict_device_to_cpu(*cmd,
                         fmt::format("the roofs are the CPU's and {}", kOperatorTimesOnTheHost));
  cmd->callback([name, f, overrides, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const auto by = analysis::parse_group_by(f->by);
    if (by == analysis::GroupBy::kCategory)
      throw UsageError("--by must be op or layer for a roofline");
    const auto peak_kind = analysis::parse_peak_kind(f->peak);
    if (f->steps < 1) throw UsageError("--steps must be at least 1");
    const Config config = resolve_config(w, *overrides);
    const auto plan = make_options(w, config, parse_mode(f->measure.mode), f->measure);
    if (plan.size() != 1) throw UsageError("a roofline takes one --dtype; run it once per dtype");
    const run::RunOptions& o = plan.front();
    auto db = store::ResultsStore::open(f->measure.db);
    const ProbeChoice probe = current_probe(*db, {false, f->refresh_probe, 0});
    const std::string dtype = dtype_name(o.dtype);  // each op is placed by its own dtype too
    const analysis::Ceilings ceilings =
        analysis::ceilings_from_probe(probe.probe.document, dtype, o.threads, peak_kind);

    const std::string group =
        fmt::format("{}-roofline-{}-{}", w.info.name, utc_now_iso8601(), getpid());
    const auto result =
        jobs::fresh_profile(*db, o, {false, f->steps, false, group, f->measure.tag},
                            [](const std::string& line) { std::cerr << line << '\n'; })
            .result;
    if (result.status != run::RunStatus::kOk) {
      exit_code = 1;
      std::cerr << "profile failed (" << run::status_name(result.status) << "): " << result.message
                << '\n';
      return;
    }
    // Analysis reads the stored record, like every other view of a profile.
    const auto stored = db->load_profiles(group).at(0);
    const auto& prof = stored.result.profile;
    const auto rows = analysis::place_all(analysis::work_items(prof, by), ceilings);
    const auto step = analysis::place(analysis::step_item(prof, "whole step"), ceilings);

    if (f->measure.json) {
      nlohmann::ordered_json out;
      out["workload"] = w.info.name;
      out["mode"] = stored.mode;
      out["batch"] = stored.batch;
      out["threads"] = stored.threads;
      out["dtype"] = dtype;
      out["by"] = f->by;
      out["profile_id"] = stored.id;
      out["probe_id"] = probe.probe.id;
      out["ceilings"] = {{"peak_flops", ceilings.peak_flops},
                         {"peak_source", ceilings.peak_source},
                         {"by_dtype", nlohmann::ordered_json::object()},
                         {"memory", nlohmann::ordered_json::array()}};
      for (const auto& [roof_dtype, roof] : ceilings.by_dtype)
        out["ceilings"]["by_dtype"][roof_dtype] = {{"flops", roof.flops}, {"source", roof.source}};
      for (const auto& m : ceilings.memory)
        out["ceilings"]["memory"].push_back(
            {{"level", m.level},
             {"bytes_per_s", m.bytes_per_s},
             {"capacity_bytes", m.capacity_bytes},
             {"ridge_intensity", analysis::ridge_intensity(ceilings, m.level)}});
      out["step"] = placement_json(step);
      out["rows"] = nlohmann::ordered_json::array();
      for (size_t i = 0; i < rows.size() && (f->top == 0 || i < f->top); ++i)
        out["rows"].push_back(placement_json(rows[i]));
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    std::cout << fmt::format("{} {} batch {}, {} thread(s); compute roof {} GFLOP/s ({})\n",
                             w.info.name, stored.mode, stored.batch, stored.threads,
                             format_number(ceilings.peak_flops / 1e9, 1), ceilings.peak_source);
    for (const auto& m : ceilings.memory)
      std::cout << fmt::format(
          "  {} roof {} GB/s (triad), ridge at {} FLOP/byte{}\n", m.level,
          format_number(m.bytes_per_s / 1e9, 1),
          format_number(analysis::ridge_intensity(ceilings, m.level), 1),
          m.capacity_bytes > 0
              ? fmt::format(", holds {} KiB", format_number(m.capacity_bytes / 1024.0, 0))
              : "");
    Table t({"name", "time", "GFLOP", "MB", "FLOP/B", "GFLOP/s", "level", "roof GFLOP/s", "bound",
             "of roof", "utilisation"});
    add_placement_row(t, step);
    const size_t limit = f->top == 0 ? 25 : f->top;
    for (size_t i = 0; i < rows.size() && i < limit; ++i) add_placement_row(t, rows[i]);
    t.print(std::cout);
    if (rows.size() > limit) std::cout << "(" << rows.size() - limit << " more rows; --top N)\n";
    std::cout << "level: the slowest memory level fast enough for the measured data rate; bound: "
                 "compute or memory:<level> by intensity vs that level's ridge, overhead when "
                 "under 10% of that roof was reached\n";
  });
}

}  // namespace plumb::cli
