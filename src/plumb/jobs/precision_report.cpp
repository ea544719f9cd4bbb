// plumb precision's JSON and text (see precision_report.h).
#include "plumb/jobs/precision_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/core/text.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using json = nlohmann::ordered_json;

json precision_error_json(const run::OutputError& e) {
  json j;
  j["measured_on"] = e.measured_on;
  j["relative_l2"] = json_number(e.relative_l2);
  j["max_abs"] = json_number(e.max_abs);
  j["cosine"] = json_number(e.cosine);
  if (!e.agreement_kind.empty()) j[e.agreement_kind + "_agreement"] = json_number(e.agreement);
  j["elements"] = e.elements;
  j["examples"] = e.examples;
  return j;
}

std::string precision_agreement_text(const run::OutputError& e) {
  return e.agreement_kind.empty()
             ? "-"
             : fmt::format("{} {}", e.agreement_kind, report::format_percent(e.agreement));
}

// "rel L2 1.23e-02" as the table has it; a token workload's plan is judged by token mismatch.
std::string plan_error_text(const run::ErrorAgainstFp32& e) {
  return e.metric == run::kRelativeL2Metric ? fmt::format("rel L2 {:.2e}", e.value)
                                            : run::error_text(e);
}

// The plan searched, or the empty one where fp32's outputs could not be captured.
SelectiveInt8Plan searched_selective_plan(const PrecisionResult& r) {
  return r.plan ? r.plan->search : SelectiveInt8Plan{};
}

json precision_row_json(const PrecisionRow& row) {
  json p;
  p["dtype"] = row.run.dtype;
  p["run_id"] = row.run.id;
  p["status"] = run::status_name(row.run.result.status);
  p["message"] = row.run.result.message;
  p["throughput"] = json_number(row.run.result.throughput);
  p["step_time_mean_s"] = json_number(row.run.result.step_time.mean);
  if (row.run.result.status == run::RunStatus::kOk)
    p["speedup_vs_fp32"] = ratio_json(analysis::ratio_interval(row.speed));
  p["error_vs_fp32"] = row.error_measured ? precision_error_json(row.error) : json();
  if (!row.error_note.empty()) p["error_note"] = row.error_note;
  p["notes"] = row.run.result.precision_notes;
  p["command"] = row.run.result.command;
  return p;
}

json selective_plan_json(const PrecisionResult& r) {
  const auto search = searched_selective_plan(r);
  json p;
  p["max_error"] = r.max_error;
  p["met"] = search.met;
  p["keep_fp32"] = search.keep;
  p["error"] = precision_error_json(search.error.error);
  if (r.plan && r.plan->run) {
    p["run_id"] = r.plan->run->id;
    p["throughput"] = json_number(r.plan->run->result.throughput);
    p["speedup_vs_fp32"] = json_number(r.plan->speed.ratio);
    p["command"] = r.plan->run->result.command;
  }
  return p;
}

void print_precision_rows(const PrecisionResult& r, std::ostream& out) {
  report::TextTable table({"dtype", "status", "throughput", "unit", "vs fp32", "95% interval",
                           "rel L2", "max abs", "cosine", "agreement", "run id"});
  for (const auto& row : r.rows) {
    const bool ok = row.run.result.status == run::RunStatus::kOk;
    const bool m = row.error_measured;
    const auto& e = row.error;
    table.add_row({dtype_name(row.run.dtype), run::status_name(row.run.result.status),
                   ok ? report::format_number(row.run.result.throughput, 2) : "-",
                   r.throughput_unit, ok ? ratio_text(analysis::ratio_interval(row.speed)) : "-",
                   ok ? interval_text(analysis::ratio_interval(row.speed)) : "-",
                   m ? fmt::format("{:.2e}", e.relative_l2) : "-",
                   m ? fmt::format("{:.2e}", e.max_abs) : "-",
                   m ? fmt::format("{:.6f}", e.cosine) : "-", m ? precision_agreement_text(e) : "-",
                   std::to_string(row.run.id)});
  }
  table.print(out);
  if (std::any_of(r.rows.begin(), r.rows.end(),
                  [](const PrecisionRow& row) { return row.error.measured_on == "logits"; }))
    out << "rel L2, max abs, cosine: of the logits at every generated position with fp32's "
           "tokens fed back (teacher forcing); agreement: of the tokens each precision "
           "generates on its own\n";
  for (const auto& row : r.rows) {
    if (row.run.result.status != run::RunStatus::kOk)
      out << dtype_name(row.run.dtype) << ": " << row.run.result.message << '\n';
    for (const auto& note : row.run.result.precision_notes) out << note << '\n';
    if (!row.error_note.empty() && row.run.result.status == run::RunStatus::kOk &&
        row.run.dtype != Dtype::kFp32)
      out << dtype_name(row.run.dtype) << " error: " << row.error_note << '\n';
  }
}

void print_weight_outliers(const std::vector<run::WeightOutliers>& outliers, std::ostream& out) {
  if (outliers.empty()) return;
  auto worst = outliers;
  std::sort(worst.begin(), worst.end(),
            [](const auto& a, const auto& b) { return a.outside_7_bits > b.outside_7_bits; });
  int64_t total = 0;
  double outside = 0;
  for (const auto& o : outliers) {
    total += o.elements;
    outside += o.outside_7_bits * static_cast<double>(o.elements);
  }
  out << fmt::format(
      "weights outside 7 bits of their channel's int8 range: {} overall; most in {} ({})\n",
      report::format_percent(outside / static_cast<double>(total)), worst.front().name,
      report::format_percent(worst.front().outside_7_bits));
}

void print_selective_plan(const PrecisionResult& r, std::ostream& out) {
  const auto search = searched_selective_plan(r);
  report::TextTable layers({"int8 layer (alone)", "rel L2", "agreement"});
  for (const auto& l : search.layers)
    layers.add_row({l.layer, fmt::format("{:.2e}", l.error.error.relative_l2),
                    precision_agreement_text(l.error.error)});
  out << '\n';
  layers.print(out);
  out << fmt::format("\nselective plan: {} layer(s) kept in fp32 ({}): {} ({} --max-error {})\n",
                     search.keep.size(), search.keep.empty() ? "none" : join(search.keep, ", "),
                     plan_error_text(search.error), search.met ? "within" : "NOT within",
                     r.max_error);
  if (r.plan && r.plan->run && r.plan->run->result.status == run::RunStatus::kOk)
    out << fmt::format("plan measured: {} {} ({} fp32); reproduce: {}\n",
                       report::format_number(r.plan->run->result.throughput, 2), r.throughput_unit,
                       ratio_text(analysis::ratio_interval(r.plan->speed)),
                       r.plan->run->result.command);
}

}  // namespace

json precision_json(const PrecisionResult& r) {
  json out;
  out["workload"] = r.workload;
  out["mode"] = mode_name(r.mode);
  out["batch"] = r.batch;
  out["threads"] = r.threads;
  out["memory_format"] = memory_format_name(r.memory_format);
  out["throughput_unit"] = r.throughput_unit;
  out["precisions"] = json::array();
  for (const auto& row : r.rows) out["precisions"].push_back(precision_row_json(row));
  out["weight_outliers"] = json::array();
  for (const auto& o : r.outliers)
    out["weight_outliers"].push_back(
        {{"weight", o.name}, {"elements", o.elements}, {"outside_7_bits", o.outside_7_bits}});
  if (r.by_layer) {
    out["layers"] = json::array();
    for (const auto& l : searched_selective_plan(r).layers)
      out["layers"].push_back(
          {{"layer", l.layer}, {"error_alone", precision_error_json(l.error.error)}});
    out["selective_plan"] = selective_plan_json(r);
  }
  return out;
}

void print_precision(const PrecisionResult& r, std::ostream& out) {
  print_precision_rows(r, out);
  print_weight_outliers(r.outliers, out);
  if (r.by_layer) print_selective_plan(r, out);
  out << "stored in " << r.db_path << '\n';
}

}  // namespace plumb::jobs
