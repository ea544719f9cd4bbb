// Precision capability from the probe document (see precision_capability.h).
#include "plumb/analysis/precision_capability.h"

#include <fmt/format.h>

namespace plumb::analysis {

std::optional<PrecisionUnits> precision_units(const nlohmann::ordered_json& probe_document,
                                              Dtype dtype) {
  if (dtype == Dtype::kFp32) return Outcome::success();
  const auto peaks = probe_document.find("peaks");
  if (peaks == probe_document.end() || !peaks->is_object()) return std::nullopt;
  const auto peak = peaks->find(dtype_name(dtype));
  if (peak == peaks->end() || !peak->is_object() || !peak->contains("supported"))
    return std::nullopt;
  return Outcome::supported_if(peak->at("supported").get<bool>(),
                               peak->value("reason", std::string()));
}

std::string no_units_sentence(Dtype dtype, const PrecisionUnits& units,
                              const Emulation& emulation) {
  const std::string name = dtype_name(dtype);
  std::string text = fmt::format("{}: no {} units on this CPU", name, name);
  if (!units.reason.empty()) text += " (the probe: " + units.reason + ")";
  text += "; LibTorch emulates it";
  if (!emulation.kernels.empty()) text += " on " + emulation.kernels;
  if (emulation.speed_vs_fp32 > 0)
    text += fmt::format(", {:.2g}x fp32 measured on {}", emulation.speed_vs_fp32,
                        emulation.measured_on);
  return text;
}

}  // namespace plumb::analysis
