// Which requested precisions run emulated on this CPU (see emulated_precisions.h).
#include "plumb/jobs/emulated_precisions.h"

#include <algorithm>
#include <iostream>
#include <optional>

#include "plumb/analysis/precision_capability.h"

#include "plumb/core/clock.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/run/engine_paths.h"
#include "plumb/run/setting_identity.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/run_record.h"

namespace plumb::jobs {
namespace {

std::optional<Dtype> peak_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return Dtype::kBf16;
    case Dtype::kInt8:
      return Dtype::kInt8;
    default:
      return std::nullopt;
  }
}

// The probe's verdict without a stored probe: its engines for the dtype, each timed for a few
// milliseconds on one thread (an unsupported engine returns at once, with its reason).
analysis::PrecisionUnits measured_units(Dtype dtype) {
  bool any_ran = false;
  std::vector<std::string> reasons;
  for (const auto& engine : platform::measure_engine_peaks({dtype}, 1, 0.002)) {
    any_ran |= engine.outcome.ok();
    if (!engine.outcome.ok()) reasons.push_back(engine.outcome.reason);
  }
  return Outcome::supported_if(any_ran, join(reasons, "; "));
}

}  // namespace

std::vector<EmulatedPrecision> emulated_precisions(const store::ResultsStore& db,
                                                   const std::vector<Dtype>& dtypes, int threads) {
  std::vector<EmulatedPrecision> out;
  std::optional<store::StoredProbe> probe;
  bool looked = false;
  for (Dtype dtype : dtypes) {
    const auto engine_dtype = peak_dtype(dtype);
    if (!engine_dtype) continue;
    if (!looked) {
      probe = db.latest_probe(platform::machine_key(platform::capture_environment(threads)),
                              /*thorough_only=*/false);
      looked = true;
    }
    std::optional<analysis::PrecisionUnits> units;
    if (probe) units = analysis::precision_units(probe->document, dtype);
    if (!units) units = measured_units(*engine_dtype);
    if (units->ok()) continue;
    analysis::Emulation emulation;
    if (dtype == Dtype::kBf16) {
      emulation.kernels = run::bf16_kernels() == run::Bf16Kernels::kReference
                              ? "its reference kernels"
                              : "oneDNN, converting to fp32";
      emulation.speed_vs_fp32 = run::measure_bf16_conv_speed_vs_fp32();
      emulation.measured_on = "a 3x3 convolution (64 channels, 56x56)";
    }
    out.push_back({dtype, analysis::no_units_sentence(dtype, *units, emulation)});
  }
  return out;
}

void warn_emulated_precisions(const store::ResultsStore& db, const std::vector<Dtype>& dtypes,
                              int threads) {
  for (const auto& emulated : emulated_precisions(db, dtypes, threads))
    std::cerr << "note: " << emulated.sentence << ": its runs take that much longer (leave "
              << dtype_name(emulated.dtype) << " out of the precisions to skip it)\n";
}

namespace {
// The quick pass that times `dtype` on `workload` anyway, as the identity printer writes it.
run::Setting quick_pass_setting(const std::string& workload, const std::string& dtype,
                                const QuickPass& pass) {
  run::Setting s{"plumb characterize", workload, {}};
  s.fields.push_back({"quick", "true", {"--quick"}});
  s.fields.push_back({"dtypes", dtype, {"--dtypes", dtype}});
  s.fields.push_back({"size", pass.size, {"--size", pass.size}, true, pass.size == "tiny"});
  s.fields.push_back({"name", pass.name, {"--name", pass.name}, true, pass.name != "quick"});
  s.fields.push_back({"db", pass.db, {"--db", pass.db}, false});
  return s;
}
}  // namespace

void leave_emulated_precisions_untimed(store::ResultsStore& db, std::vector<Dtype>& dtypes,
                                       const std::vector<std::string>& workloads,
                                       const QuickPass& pass) {
  for (const auto& emulated : emulated_precisions(db, dtypes, pass.threads)) {
    const std::string dtype = dtype_name(emulated.dtype);
    std::cerr << emulated.sentence << ": not timed in a quick pass (--dtypes " << dtype
              << " times it)\n";
    dtypes.erase(std::remove(dtypes.begin(), dtypes.end(), emulated.dtype), dtypes.end());
    for (const auto& workload : workloads)
      db.save_untimed_precision({0, pass.tag, workload, "infer", dtype, emulated.sentence,
                                 run::print_setting(quick_pass_setting(workload, dtype, pass),
                                                    run::SettingPrint::kReproducer),
                                 utc_now_iso8601()});
  }
}

std::vector<store::UntimedPrecision> still_untimed(std::vector<store::UntimedPrecision> records,
                                                   const std::vector<store::StoredRun>& runs,
                                                   const std::string& tag) {
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const store::UntimedPrecision& u) {
                                 return u.tag != tag ||
                                        std::any_of(runs.begin(), runs.end(), [&](const auto& r) {
                                          return r.tag == tag && r.workload == u.workload &&
                                                 r.mode == u.mode && dtype_name(r.dtype) == u.dtype;
                                        });
                               }),
                records.end());
  return records;
}

}  // namespace plumb::jobs
