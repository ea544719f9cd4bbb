// --phase of plumb profile, roofline and memory: which phase of a generative model's inference
// step (core/generation.h) to show: prefill, decode, or both (each in its own section).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plumb/core/generation.h"
#include "plumb/core/mode.h"
#include "plumb/core/workload.h"

namespace plumb::cli {

// Declares --phase, defaulting to "both".
void add_phase_option(CLI::App& cmd, std::string& phase);

// nullopt for "both"; a phase for "prefill" or "decode". One phase asks for a generative
// workload (a causal transformer: Workload::transformer_shape) measured in inference only;
// anything else is refused with one line (UsageError, exit 2) before anything runs or is stored.
std::optional<Phase> parse_phase_option(const std::string& text, const Workload& workload,
                                        const Config& config, const std::vector<Mode>& modes);

}  // namespace plumb::cli
