// plumb precision's work (see precision_job.h).
#include "plumb/jobs/precision_job.h"

#include <algorithm>
#include <iostream>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/jobs/emulated_precisions.h"
#include "plumb/jobs/precision_measure.h"
#include "plumb/run/error_against_fp32.h"

namespace plumb::jobs {
namespace {

// fp32 is the reference: measured first, whether listed or not.
std::vector<run::RunOptions> precision_plan_fp32_first(std::vector<run::RunOptions> plan) {
  run::RunOptions reference = plan.front();
  reference.dtype = Dtype::kFp32;
  plan.erase(std::remove_if(plan.begin(), plan.end(),
                            [](const auto& o) { return o.dtype == Dtype::kFp32; }),
             plan.end());
  plan.insert(plan.begin(), reference);
  return plan;
}

// Output error on the same inputs and weights (the timed batches of each run).
void measure_row_errors(const run::Fp32Reference& reference,
                        const run::RunOptions& reference_options, std::vector<PrecisionRow>& rows) {
  for (auto& row : rows) {
    if (row.run.result.status != run::RunStatus::kOk) continue;
    run::RunOptions o = reference_options;
    o.dtype = row.run.dtype;
    o.memory_format = parse_memory_format(row.run.memory_format);
    const auto e = reference.error_of(o);
    row.error_measured = e.outcome.ok();
    row.error = e.error;
    row.error_note = e.outcome.reason;
  }
}

// Outliers per weight tensor, on the fp32 model as built.
std::vector<run::WeightOutliers> fp32_weight_outliers(const Workload& w, const Config& config,
                                                      const run::RunOptions& o) {
  torch::manual_seed(o.seed);
  auto model = w.build(config, run::parse_device(o.device));
  return run::weight_outliers(model->module());
}

// Stored, so the report can draw speed against error and compare can find them.
void save_precision_comparisons(store::ResultsStore& db, const PrecisionResult& r) {
  const auto& fp32 = r.rows.front().run;
  for (const auto& row : r.rows)
    if (row.run.id != fp32.id && row.run.result.status == run::RunStatus::kOk)
      save_precision_comparison(db, row.run, fp32, row.speed, row.error_measured, row.error,
                                row.error_note);
  if (r.plan && r.plan->run && r.plan->run->result.status == run::RunStatus::kOk) {
    const auto& keep = r.plan->search.keep;
    save_precision_comparison(
        db, *r.plan->run, fp32, r.plan->speed, true, r.plan->search.error.error,
        "selective plan, kept in fp32: " + (keep.empty() ? std::string("none") : join(keep, ", ")));
  }
}

}  // namespace

PrecisionResult run_precision_job(const PrecisionJobOptions& options) {
  const Workload& w = *options.workload;
  const auto plan = precision_plan_fp32_first(options.plan);
  const run::RunOptions& reference_options = plan.front();
  auto db = store::ResultsStore::open(options.db);
  std::vector<Dtype> requested;
  for (const auto& o : plan) requested.push_back(o.dtype);
  warn_emulated_precisions(*db, requested, reference_options.threads);

  PrecisionResult r;
  r.workload = w.info.name;
  r.throughput_unit = w.info.throughput_unit;
  r.mode = options.mode;
  r.batch = options.config.get_int("batch");
  r.threads = reference_options.threads;
  r.memory_format = reference_options.memory_format;
  r.by_layer = options.by_layer;
  r.max_error = options.max_error;
  r.db_path = db->path();
  for (const auto& o : plan) {
    PrecisionRow row;
    row.run = time_and_store(w, o, *db, options.tag);
    r.rows.push_back(std::move(row));
  }
  const auto& fp32 = r.rows.front().run;
  if (fp32.result.status != run::RunStatus::kOk)
    throw UsageError("the fp32 reference run failed (" + fp32.result.message +
                     "): nothing to compare with");
  for (auto& row : r.rows)
    if (row.run.result.status == run::RunStatus::kOk) row.speed = speed_against(fp32, row.run);

  std::optional<run::Fp32Reference> reference;
  if (options.mode == Mode::kInfer) {
    std::cerr << "measuring output error against fp32 ...\n";
    reference.emplace(w, reference_options);
    measure_row_errors(*reference, reference_options, r.rows);
  } else {
    for (auto& row : r.rows)
      row.error_note = "training: error is measured in inference (--mode infer)";
  }
  r.outliers = fp32_weight_outliers(w, options.config, reference_options);

  if (options.by_layer && reference && reference->captured()) {
    MeasuredSelectivePlan p;
    p.search = search_selective_int8_plan(w.info.name, *reference, reference_options,
                                          options.max_error, options.max_plan_steps);
    run::RunOptions o = reference_options;
    o.dtype = Dtype::kInt8;
    o.keep_fp32 = p.search.keep;
    p.run = time_and_store(w, o, *db, options.tag);
    p.speed = speed_against(fp32, *p.run);
    if (p.run->result.status != run::RunStatus::kOk) r.runs_failed = true;
    r.plan = std::move(p);
  }
  for (const auto& row : r.rows)
    if (row.run.result.status != run::RunStatus::kOk &&
        row.run.result.status != run::RunStatus::kUnsupported)
      r.runs_failed = true;
  save_precision_comparisons(*db, r);
  return r;
}

}  // namespace plumb::jobs
