// plumb precision: what each precision buys (speed against fp32, same steady-state method, with
// the ratio's bootstrap interval) and what it costs (output error against fp32 on the same
// inputs and weights), per workload; with --by layer, the error each int8 layer adds alone and
// the selective-quantization plan that stays within --max-error, measured.
#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/run_comparison.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/emulated_precisions.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/precision_measure.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/ratio_interval.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/run/error_against_fp32.h"
#include "plumb/run/int8_quantizer.h"
#include "plumb/run/output_error.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct PrecisionFlags {
  MeasureFlags measure;
  std::string by = "dtype";
  double max_error = 0.02;
  size_t max_plan_steps = 8;
};

struct Row {
  store::StoredRun run;
  bool error_measured = false;
  std::string error_note;  // why no error, when not measured
  run::OutputError error;
  analysis::ThroughputComparison speed;  // against fp32
};

struct LayerError {
  std::string layer;
  run::ErrorAgainstFp32 error;
};

nlohmann::ordered_json error_json(const run::OutputError& e) {
  nlohmann::ordered_json j;
  j["relative_l2"] = json_number(e.relative_l2);
  j["max_abs"] = json_number(e.max_abs);
  j["cosine"] = json_number(e.cosine);
  if (!e.agreement_kind.empty()) j[e.agreement_kind + "_agreement"] = json_number(e.agreement);
  j["elements"] = e.elements;
  j["examples"] = e.examples;
  return j;
}

std::string agreement_text(const run::OutputError& e) {
  return e.agreement_kind.empty()
             ? "-"
             : fmt::format("{} {}", e.agreement_kind, format_percent(e.agreement));
}

// The error of int8 with `keep` left in fp32, against the fp32 outputs.
run::ErrorAgainstFp32 int8_error(const run::Fp32Reference& reference, run::RunOptions o,
                                 const std::vector<std::string>& keep) {
  o.dtype = Dtype::kInt8;
  o.keep_fp32 = keep;
  auto e = reference.error_of(o);
  if (!e.measured) throw UsageError("int8 failed while searching the plan: " + e.note);
  return e;
}

// "rel L2 1.23e-02" as the table has it; a token workload's plan is judged by token mismatch.
std::string plan_error_text(const run::ErrorAgainstFp32& e) {
  return e.metric == run::kRelativeL2Metric ? fmt::format("rel L2 {:.2e}", e.value)
                                            : run::error_text(e);
}

}  // namespace

void add_precision_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "precision", "Speed and output error of each precision against fp32 (same inputs, weights)");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<PrecisionFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  f->measure.mode = "infer";
  f->measure.dtypes = "fp32,bf16,fp16,int8";
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", f->measure.mode, "infer (speed and error) or train (speed)")
      ->capture_default_str();
  add_config_options(*cmd, *overrides);
  add_measure_options(*cmd, f->measure, 30, 30);
  // --dtypes reads better for a comparison; --dtype (from the shared options) means the same.
  cmd->add_option("--dtypes", f->measure.dtypes, "Precisions to compare with fp32")
      ->capture_default_str();
  cmd->add_option("--by", f->by,
                  "dtype, or layer: also the error each int8 layer adds alone and the "
                  "selective-quantization plan within --max-error")
      ->capture_default_str();
  cmd->add_option(
         "--max-error", f->max_error,
         "Output error against fp32 the int8 plan must stay within (relative L2; for token "
         "outputs the share of tokens that differ)")
      ->capture_default_str();
  cmd->callback([name, f, overrides, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const Mode mode = parse_mode(f->measure.mode);
    if (f->by != "dtype" && f->by != "layer")
      throw UsageError("--by must be dtype or layer, got '" + f->by + "'");
    if (!(f->max_error > 0)) throw UsageError("--max-error must be a positive fraction");
    if (f->by == "layer" && mode != Mode::kInfer)
      throw UsageError("--by layer measures output error, so it needs --mode infer");
    const Config config = resolve_config(w, *overrides);
    auto plan = make_options(w, config, mode, f->measure);
    // fp32 is the reference: measured first, whether listed or not.
    run::RunOptions reference_options = plan.front();
    reference_options.dtype = Dtype::kFp32;
    plan.erase(std::remove_if(plan.begin(), plan.end(),
                              [](const auto& o) { return o.dtype == Dtype::kFp32; }),
               plan.end());
    plan.insert(plan.begin(), reference_options);
    auto db = store::ResultsStore::open(f->measure.db);
    std::vector<Dtype> requested;
    for (const auto& o : plan) requested.push_back(o.dtype);
    warn_emulated_precisions(*db, requested, reference_options.threads);

    std::vector<Row> rows;
    for (const auto& o : plan) {
      Row row;
      row.run = time_and_store(w, o, *db, f->measure.tag);
      rows.push_back(std::move(row));
    }
    const auto& fp32 = rows.front().run;
    if (fp32.result.status != run::RunStatus::kOk)
      throw UsageError("the fp32 reference run failed (" + fp32.result.message +
                       "): nothing to compare with");
    for (auto& row : rows) {
      if (row.run.result.status == run::RunStatus::kOk) row.speed = speed_against(fp32, row.run);
    }

    // Output error on the same inputs and weights (the timed batches of each run).
    std::optional<run::Fp32Reference> reference;
    if (mode == Mode::kInfer) {
      std::cerr << "measuring output error against fp32 ...\n";
      reference.emplace(w, reference_options);
      for (auto& row : rows) {
        if (row.run.result.status != run::RunStatus::kOk) continue;
        run::RunOptions o = reference_options;
        o.dtype = parse_dtype(row.run.dtype);
        o.memory_format = parse_memory_format(row.run.memory_format);
        const auto e = reference->error_of(o);
        row.error_measured = e.measured;
        row.error = e.error;
        row.error_note = e.note;
      }
    } else {
      for (auto& row : rows)
        row.error_note = "training: error is measured in inference (--mode infer)";
    }

    // Outliers per weight tensor, on the fp32 model as built.
    std::vector<run::WeightOutliers> outliers;
    {
      torch::manual_seed(reference_options.seed);
      auto model = w.build(config, run::parse_device(reference_options.device));
      outliers = run::weight_outliers(model->module());
    }

    // Per-layer int8 error and the selective plan.
    std::vector<LayerError> layer_errors;
    std::vector<std::string> keep;
    run::ErrorAgainstFp32 plan_error;
    std::optional<store::StoredRun> plan_run;
    bool plan_met = false;
    if (f->by == "layer" && reference && reference->captured()) {
      run::RunOptions int8 = reference_options;
      int8.dtype = Dtype::kInt8;
      const auto full = reference->error_of(int8);
      if (!full.measured) throw UsageError("int8 cannot run for " + w.info.name + ": " + full.note);
      std::cerr << fmt::format("error of each of {} int8 layers alone ...\n",
                               full.quantized_layers.size());
      for (const auto& layer : full.quantized_layers) {
        std::vector<std::string> others;
        for (const auto& l : full.quantized_layers)
          if (l != layer) others.push_back(l);
        layer_errors.push_back({layer, int8_error(*reference, reference_options, others)});
      }
      std::sort(layer_errors.begin(), layer_errors.end(),
                [](const auto& a, const auto& b) { return a.error.value > b.error.value; });
      // Greedy: keep the layers that add the most error in fp32 until the whole is within.
      plan_error = full;
      for (size_t i = 0;
           plan_error.value > f->max_error && i < layer_errors.size() && i < f->max_plan_steps;
           ++i) {
        keep.push_back(layer_errors[i].layer);
        plan_error = int8_error(*reference, reference_options, keep);
      }
      plan_met = plan_error.value <= f->max_error;
      run::RunOptions o = int8;
      o.keep_fp32 = keep;
      plan_run = time_and_store(w, o, *db, f->measure.tag);
      if (plan_run->result.status != run::RunStatus::kOk) exit_code = 1;
    }

    for (const auto& row : rows)
      if (row.run.result.status != run::RunStatus::kOk &&
          row.run.result.status != run::RunStatus::kUnsupported)
        exit_code = 1;

    // Stored, so the report can draw speed against error and compare can find them.
    const auto save = [&](const store::StoredRun& run, const analysis::ThroughputComparison& speed,
                          bool measured, const run::OutputError& e, const std::string& note) {
      save_precision_comparison(*db, run, fp32, speed, measured, e, note);
    };
    for (const auto& row : rows)
      if (row.run.id != fp32.id && row.run.result.status == run::RunStatus::kOk)
        save(row.run, row.speed, row.error_measured, row.error, row.error_note);
    if (plan_run && plan_run->result.status == run::RunStatus::kOk)
      save(*plan_run, speed_against(fp32, *plan_run), true, plan_error.error,
           "selective plan, kept in fp32: " +
               (keep.empty() ? std::string("none") : join(keep, ", ")));

    if (f->measure.json) {
      nlohmann::ordered_json out;
      out["workload"] = w.info.name;
      out["mode"] = mode_name(mode);
      out["batch"] = config.get_int("batch");
      out["threads"] = reference_options.threads;
      out["memory_format"] = memory_format_name(reference_options.memory_format);
      out["throughput_unit"] = w.info.throughput_unit;
      out["precisions"] = nlohmann::ordered_json::array();
      for (const auto& row : rows) {
        nlohmann::ordered_json p;
        p["dtype"] = row.run.dtype;
        p["run_id"] = row.run.id;
        p["status"] = run::status_name(row.run.result.status);
        p["message"] = row.run.result.message;
        p["throughput"] = json_number(row.run.result.throughput);
        p["step_time_mean_s"] = json_number(row.run.result.step_time.mean);
        if (row.run.result.status == run::RunStatus::kOk)
          p["speedup_vs_fp32"] = ratio_json(analysis::ratio_interval(row.speed));
        p["error_vs_fp32"] = row.error_measured ? error_json(row.error) : nlohmann::ordered_json();
        if (!row.error_note.empty()) p["error_note"] = row.error_note;
        p["notes"] = row.run.result.precision_notes;
        p["command"] = row.run.result.command;
        out["precisions"].push_back(p);
      }
      out["weight_outliers"] = nlohmann::ordered_json::array();
      for (const auto& o : outliers)
        out["weight_outliers"].push_back(
            {{"weight", o.name}, {"elements", o.elements}, {"outside_7_bits", o.outside_7_bits}});
      if (f->by == "layer") {
        out["layers"] = nlohmann::ordered_json::array();
        for (const auto& l : layer_errors)
          out["layers"].push_back({{"layer", l.layer}, {"error_alone", error_json(l.error.error)}});
        nlohmann::ordered_json p;
        p["max_error"] = f->max_error;
        p["met"] = plan_met;
        p["keep_fp32"] = keep;
        p["error"] = error_json(plan_error.error);
        if (plan_run) {
          p["run_id"] = plan_run->id;
          p["throughput"] = json_number(plan_run->result.throughput);
          p["speedup_vs_fp32"] = json_number(speed_against(fp32, *plan_run).ratio);
          p["command"] = plan_run->result.command;
        }
        out["selective_plan"] = p;
      }
      std::cout << json_text(out, 2) << '\n';
      return;
    }

    Table table({"dtype", "status", "throughput", "unit", "vs fp32", "95% interval", "rel L2",
                 "max abs", "cosine", "agreement", "run id"});
    for (const auto& row : rows) {
      const bool ok = row.run.result.status == run::RunStatus::kOk;
      const auto& e = row.error;
      table.add_row({row.run.dtype, run::status_name(row.run.result.status),
                     ok ? format_number(row.run.result.throughput, 2) : "-", w.info.throughput_unit,
                     ok ? ratio_text(analysis::ratio_interval(row.speed)) : "-",
                     ok ? interval_text(analysis::ratio_interval(row.speed)) : "-",
                     row.error_measured ? fmt::format("{:.2e}", e.relative_l2) : "-",
                     row.error_measured ? fmt::format("{:.2e}", e.max_abs) : "-",
                     row.error_measured ? fmt::format("{:.6f}", e.cosine) : "-",
                     row.error_measured ? agreement_text(e) : "-", std::to_string(row.run.id)});
    }
    table.print(std::cout);
    for (const auto& row : rows) {
      if (row.run.result.status != run::RunStatus::kOk)
        std::cout << row.run.dtype << ": " << row.run.result.message << '\n';
      for (const auto& note : row.run.result.precision_notes) std::cout << note << '\n';
      if (!row.error_note.empty() && row.run.result.status == run::RunStatus::kOk &&
          row.run.dtype != "fp32")
        std::cout << row.run.dtype << " error: " << row.error_note << '\n';
    }
    if (!outliers.empty()) {
      auto worst = outliers;
      std::sort(worst.begin(), worst.end(),
                [](const auto& a, const auto& b) { return a.outside_7_bits > b.outside_7_bits; });
      int64_t total = 0;
      double outside = 0;
      for (const auto& o : outliers) {
        total += o.elements;
        outside += o.outside_7_bits * static_cast<double>(o.elements);
      }
      std::cout << fmt::format(
          "weights outside 7 bits of their channel's int8 range: {} overall; most in {} ({})\n",
          format_percent(outside / static_cast<double>(total)), worst.front().name,
          format_percent(worst.front().outside_7_bits));
    }
    if (f->by == "layer") {
      Table layers({"int8 layer (alone)", "rel L2", "agreement"});
      for (const auto& l : layer_errors)
        layers.add_row({l.layer, fmt::format("{:.2e}", l.error.error.relative_l2),
                        agreement_text(l.error.error)});
      std::cout << '\n';
      layers.print(std::cout);
      std::cout << fmt::format(
          "\nselective plan: {} layer(s) kept in fp32 ({}): {} ({} --max-error {})\n", keep.size(),
          keep.empty() ? "none" : join(keep, ", "), plan_error_text(plan_error),
          plan_met ? "within" : "NOT within", f->max_error);
      if (plan_run && plan_run->result.status == run::RunStatus::kOk)
        std::cout << fmt::format(
            "plan measured: {} {} ({} fp32); reproduce: {}\n",
            format_number(plan_run->result.throughput, 2), w.info.throughput_unit,
            ratio_text(analysis::ratio_interval(speed_against(fp32, *plan_run))),
            plan_run->result.command);
      if (!plan_met) exit_code = 1;
    }
    std::cout << "stored in " << db->path() << '\n';
  });
}

}  // namespace plumb::cli
