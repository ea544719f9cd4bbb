// --phase of profile, roofline and memory (see phase_option.h).
#include "plumb/cli/phase_option.h"

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/transformer_shape.h"

namespace plumb::cli {

void add_phase_option(CLI::App& cmd, std::string& phase) {
  phase = "both";
  cmd.add_option("--phase", phase,
                 "prefill, decode or both: a generative model's inference step by phase "
                 "(--mode infer)")
      ->capture_default_str();
}

std::optional<Phase> parse_phase_option(const std::string& text, const Workload& workload,
                                        const Config& config, const std::vector<Mode>& modes) {
  if (text == "both") return std::nullopt;
  const std::optional<Phase> phase = phase_from_name(text);
  if (!phase) throw UsageError(fmt::format("--phase '{}': valid: prefill, decode, both", text));
  // An encoder (BERT) has a transformer's shape but no decode: only a causal one generates.
  const bool generative = workload.transformer_shape && workload.transformer_shape(config).causal;
  if (!generative)
    throw UsageError(fmt::format(
        "--phase {}: {} does not generate tokens; phases are a generative model's (gpt2, llama)",
        text, workload.info.name));
  for (Mode m : modes)
    if (m != Mode::kInfer)
      throw UsageError(fmt::format(
          "--phase {}: a generation's phases are of its inference step; use --mode infer", text));
  return phase;
}

}  // namespace plumb::cli
