// Whether this CPU has units for a reduced precision, read from what the probe measured: the
// probe times every engine that can run a dtype (vector dot products, matrix tiles) and says why
// none could where it found none. LibTorch still runs such a dtype, emulated (bf16 without bf16
// units: oneDNN converting to fp32, or LibTorch's reference kernels at 0.02-0.10x fp32), so a
// quick pass does not spend minutes timing it, and every command that would says so first.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/core/outcome.h"
#include "plumb/core/precision.h"

namespace plumb::analysis {

// Whether the CPU has units for a precision, as the probe found: ok when an engine of the probe's
// ran it (fp32 always has them), else unsupported with the probe's words ("no avx512_bf16 on this
// CPU").
using PrecisionUnits = Outcome;

// From a probe document (docs/json.md, `peaks.<dtype>`). A document without the dtype decides
// nothing: nullopt.
std::optional<PrecisionUnits> precision_units(const nlohmann::ordered_json& probe_document,
                                              Dtype dtype);

// What LibTorch does instead and what it costs, for one dtype without units.
struct Emulation {
  std::string kernels;       // "LibTorch's reference kernels"
  double speed_vs_fp32 = 0;  // measured now (run/engine_paths.h); <= 0: not measured
  std::string measured_on;   // what was timed: "a 3x3 convolution, 64 channels, 56x56"
};

// "bf16: no bf16 units on this CPU (the probe: no avx512_bf16 on this CPU); LibTorch emulates it
// on its reference kernels, 0.08x fp32 measured on a 3x3 convolution (64 channels, 56x56)".
std::string no_units_sentence(Dtype dtype, const PrecisionUnits& units, const Emulation& emulation);

}  // namespace plumb::analysis
