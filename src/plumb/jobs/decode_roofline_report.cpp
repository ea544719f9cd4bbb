// plumb analyze decode's reporters (see decode_roofline_report.h).
#include "plumb/jobs/decode_roofline_report.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_bytes;
using report::format_number;
using report::format_percent;
using report::format_seconds;

nlohmann::ordered_json decode_point_json(const DecodePoint& p) {
  const bool ran = p.ok();
  const auto measured = [ran](double v) {
    return ran ? json_number(v) : nlohmann::ordered_json(nullptr);
  };
  return {{"label", p.label},
          {"run_id", p.run_id},
          {"reused", p.reused},
          {"status", p.status},
          {"message", p.message},
          {"command", p.command},
          {"batch", p.batch},
          {"prompt", p.prompt},
          {"gen", p.gen},
          {"parameters", p.parameters},
          {"mean_context", p.count.mean_context},
          {"bytes_per_token", json_number(p.count.bytes())},
          {"weight_bytes_per_token", json_number(p.count.weight_bytes)},
          {"kv_bytes_per_token", json_number(p.count.kv_bytes)},
          {"kv_fraction", json_number(p.count.kv_fraction())},
          {"flops_per_token", json_number(p.count.flops)},
          {"intensity", json_number(p.count.intensity())},
          {"kv_cache_bytes", p.kv_cache_bytes},
          {"tpot_s", measured(p.tpot_s)},
          {"tpot_ci_half_width_s", measured(p.tpot_ci_half_width_s)},
          {"decode_tokens_per_s", measured(p.decode_tokens_per_s)},
          {"bytes_per_s", measured(p.bytes_per_s)}};
}

nlohmann::ordered_json ceilings_json(const DecodeCeilings& c) {
  return {{"probe_id", c.probe_id},
          {"probe_reused", c.reused},
          {"threads", c.threads},
          {"dram_read_bytes_per_s", c.dram_read_bytes_per_s},
          {"dram_triad_bytes_per_s", c.dram_triad_bytes_per_s},
          {"peak_flops", c.peak_flops},
          {"peak_source", c.peak_source},
          {"ridge_flops_per_byte", json_number(c.ridge)}};
}

std::string gb_per_s(double bytes_per_s) {
  return std::isfinite(bytes_per_s) ? fmt::format("{:.2f}", bytes_per_s / 1e9) : "-";
}

std::string rate_text(const DecodePoint& p) {
  return p.ok() ? format_number(p.decode_tokens_per_s, 2) : p.status;
}

std::string tpot_text(const DecodePoint& p) {
  return p.ok() ? format_seconds(p.tpot_s) : "-";
}

void print_sizes(const DecodeRooflineResult& r, std::ostream& out) {
  report::TextTable t({"size", "parameters", "bytes/token", "TPOT", "tokens/s", "GB/s", "run"});
  for (const auto& p : r.points)
    t.add_row({p.label, report::format_count(static_cast<long long>(p.parameters)),
               format_bytes(p.count.bytes()), tpot_text(p), rate_text(p),
               p.ok() ? gb_per_s(p.bytes_per_s) : "-",
               std::to_string(p.run_id) + (p.reused ? " (stored)" : "")});
  t.print(out);
  if (!r.fit) return;
  const auto& f = *r.fit;
  out << fmt::format(
      "fit TPOT = a + bytes/BW over {} sizes: BW {} GB/s ({} of the DRAM read ceiling {} GB/s, "
      "{} of triad {} GB/s), a = {} per token, R^2 {:.3f}\n",
      f.n, gb_per_s(f.bytes_per_s), format_percent(r.fit_read_fraction),
      gb_per_s(r.ceilings.dram_read_bytes_per_s), format_percent(r.fit_triad_fraction),
      gb_per_s(r.ceilings.dram_triad_bytes_per_s), format_seconds(f.overhead_s), f.r_squared);
}

void print_batches(const DecodeRooflineResult& r, std::ostream& out) {
  report::TextTable t(
      {"batch", "bytes/token", "FLOP/B", "TPOT", "tokens/s", "step efficiency", "run"});
  size_t step = 0;
  for (size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    std::string efficiency = "-";
    if (p.ok() && r.knee && step > 0 && step - 1 < r.knee->step_efficiency.size())
      efficiency = format_percent(r.knee->step_efficiency[step - 1]);
    if (p.ok()) ++step;
    t.add_row({std::to_string(p.batch), format_bytes(p.count.bytes()),
               format_number(p.count.intensity(), 2), tpot_text(p), rate_text(p), efficiency,
               std::to_string(p.run_id) + (p.reused ? " (stored)" : "")});
  }
  t.print(out);
  out << fmt::format(
      "ridge: {:.1f} FLOP/B ({} / DRAM triad {} GB/s); by the counts decode turns compute-bound "
      "at batch {}{}\n",
      r.ceilings.ridge, r.ceilings.peak_source, gb_per_s(r.ceilings.dram_triad_bytes_per_s),
      std::isfinite(r.ridge_batch) ? fmt::format("{:.1f}", r.ridge_batch) : "never",
      r.first_batch_past_ridge > 0
          ? fmt::format(" (first swept batch past it: {})", r.first_batch_past_ridge)
          : " (beyond the swept batches)");
  if (r.knee)
    out << fmt::format(
        "measured knee: {} (the last batch before tokens/s grew less than {} as fast as the "
        "batch)\n",
        r.knee->knee_batch ? std::to_string(*r.knee->knee_batch)
                           : "none: still near-linear at the largest batch",
        format_percent(analysis::kKneeEfficiency, 0));
}

void print_contexts(const DecodeRooflineResult& r, std::ostream& out) {
  report::TextTable t(
      {"context", "mean context", "bytes/token", "KV share", "TPOT", "tokens/s", "run"});
  for (const auto& p : r.points)
    t.add_row({std::to_string(p.prompt), format_number(p.count.mean_context, 1),
               format_bytes(p.count.bytes()), format_percent(p.count.kv_fraction()), tpot_text(p),
               rate_text(p), std::to_string(p.run_id) + (p.reused ? " (stored)" : "")});
  t.print(out);
}

}  // namespace

nlohmann::ordered_json decode_roofline_json(const DecodeRooflineResult& r) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : r.points) points.push_back(decode_point_json(p));
  nlohmann::ordered_json out = {{"workload", r.workload},
                                {"sweep", decode_sweep_name(r.sweep)},
                                {"dtype", r.dtype},
                                {"weight_element_bytes", r.weight_element_bytes},
                                {"threads", r.threads},
                                {"db", r.db_path},
                                {"ceilings", ceilings_json(r.ceilings)},
                                {"points", points}};
  if (r.sweep == DecodeSweep::kSizes) {
    out["fit"] = nullptr;
    if (r.fit)
      out["fit"] = {{"overhead_s", r.fit->overhead_s},
                    {"bytes_per_s", json_number(r.fit->bytes_per_s)},
                    {"r_squared", r.fit->r_squared},
                    {"n", r.fit->n},
                    {"dram_read_fraction", json_number(r.fit_read_fraction)},
                    {"dram_triad_fraction", json_number(r.fit_triad_fraction)}};
  }
  if (r.sweep == DecodeSweep::kBatches) {
    nlohmann::ordered_json knee = nullptr;
    if (r.knee)
      knee = {{"batch", r.knee->knee_batch ? nlohmann::ordered_json(*r.knee->knee_batch)
                                           : nlohmann::ordered_json(nullptr)},
              {"threshold", analysis::kKneeEfficiency},
              {"step_efficiency", r.knee->step_efficiency}};
    out["ridge"] = {{"ridge_batch", json_number(r.ridge_batch)},
                    {"first_batch_past_ridge", r.first_batch_past_ridge},
                    {"knee", knee}};
  }
  out["notes"] = r.notes;
  out["all_ok"] = r.all_ok;
  return out;
}

void print_decode_roofline(const DecodeRooflineResult& r, std::ostream& out) {
  out << fmt::format("{} decode, {} ({} bytes per weight), {} threads, over {}:\n", r.workload,
                     r.dtype, r.weight_element_bytes, r.threads, decode_sweep_name(r.sweep));
  switch (r.sweep) {
    case DecodeSweep::kSizes:
      print_sizes(r, out);
      break;
    case DecodeSweep::kBatches:
      print_batches(r, out);
      break;
    case DecodeSweep::kContexts:
      print_contexts(r, out);
      break;
  }
  for (const auto& p : r.points)
    if (!p.ok()) out << fmt::format("{}: {}: {}\n", p.label, p.status, p.message);
  for (const auto& n : r.notes) out << "note: " << n << '\n';
}

}  // namespace plumb::jobs
