// Which requested precisions run emulated on this CPU (see emulated_precisions.h).
#include "plumb/cli/emulated_precisions.h"

#include <iostream>
#include <optional>

#include "plumb/analysis/precision_capability.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/peak_kernels.h"
#include "plumb/run/engine_paths.h"

namespace plumb::cli {
namespace {

std::optional<platform::PeakDtype> peak_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return platform::PeakDtype::kBf16;
    case Dtype::kInt8:
      return platform::PeakDtype::kInt8;
    default:
      return std::nullopt;
  }
}

// The probe's verdict without a stored probe: its engines for the dtype, each timed for a few
// milliseconds on one thread (an unsupported engine returns at once, with its reason).
analysis::PrecisionUnits measured_units(platform::PeakDtype dtype) {
  analysis::PrecisionUnits units{false, ""};
  std::vector<std::string> reasons;
  for (const auto& engine : platform::measure_engine_peaks({dtype}, 1, 0.002)) {
    units.has_units |= engine.supported;
    if (!engine.supported) reasons.push_back(engine.unsupported_reason);
  }
  if (!units.has_units) units.probe_reason = join(reasons, "; ");
  return units;
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
    if (units->has_units) continue;
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

}  // namespace plumb::cli
