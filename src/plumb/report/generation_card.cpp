// A generative workload's card lines (see generation_card.h).
#include "plumb/report/generation_card.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "plumb/analysis/workload_findings.h"
#include "plumb/core/generation.h"
#include "plumb/report/text_table.h"
#include "plumb/report/vega_lite.h"

namespace plumb::report {
namespace {

// "2.2 GFLOP", "350 MFLOP", "12 kFLOP": a token's work at a readable scale.
std::string flop_text(double flops) {
  if (flops >= 1e9) return vl::number_text(flops / 1e9, 3) + " GFLOP";
  if (flops >= 1e6) return vl::number_text(flops / 1e6, 3) + " MFLOP";
  if (flops >= 1e3) return vl::number_text(flops / 1e3, 3) + " kFLOP";
  return vl::number_text(flops, 3) + " FLOP";
}

std::string phase_sentence(const analysis::PhaseFinding& f) {
  std::string phase = phase_name(f.phase);
  phase[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(phase[0])));
  // A decode call makes one token per request; a prefill reads the prompt's tokens.
  const char* unit = f.phase == Phase::kDecode ? "token" : f.tokens > 0 ? "prompt token" : "call";
  return fmt::format("{}: reads {} and computes {} per {}, {}.", phase,
                     format_bytes(f.bytes_per_token), flop_text(f.flops_per_token), unit, f.clause);
}

}  // namespace

std::vector<std::string> phase_bound_findings(const store::StoredProfile& profile,
                                              const analysis::Ceilings* ceilings) {
  std::vector<std::string> out;
  for (const auto& f : analysis::phase_findings(profile, ceilings))
    out.push_back(phase_sentence(f));
  return out;
}

std::optional<CardField> generation_field(const store::StoredRun& run) {
  const auto& g = run.result.generation;
  if (!g) return std::nullopt;
  CardField field;
  field.label =
      fmt::format("Generation (batch {}, prompt {}, gen {})", g->batch, g->prompt, g->gen);
  field.text = fmt::format("time to first token {} ({} prefill tokens/s)",
                           format_seconds(g->ttft.mean), format_rate(g->prefill_tokens_per_s));
  field.text += std::isfinite(g->tpot.mean)
                    ? fmt::format(", per output token {} ({} decode tokens/s)",
                                  format_seconds(g->tpot.mean), format_rate(g->decode_tokens_per_s))
                    : "; gen 1 decodes nothing";
  return field;
}

}  // namespace plumb::report
