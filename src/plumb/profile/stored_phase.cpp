// A generation's phases in stored operator rows (see stored_phase.h).
#include "plumb/profile/stored_phase.h"

#include <cstring>
#include <optional>
#include <string>

#include "plumb/core/generation.h"

namespace plumb::profile {
namespace {

constexpr char kPhaseLayerSeparator = '/';

}  // namespace

OpStat to_stored(const OpStat& op) {
  const std::optional<Phase> phase = plumb::phase_from_name(op.scope);
  if (!phase) return op;
  OpStat out = op;
  out.scope = "forward";
  if (op.kind == kPhaseRow) {
    out.kind = kComposite;
    return out;
  }
  const std::string scope = plumb::phase_scope(*phase);
  out.layer = op.layer.empty() ? scope : scope + kPhaseLayerSeparator + op.layer;
  return out;
}

OpStat from_stored(OpStat stored) {
  for (Phase phase : all_phases()) {
    const char* scope = plumb::phase_scope(phase);
    if (stored.kind == kComposite && stored.name == scope) {
      stored.kind = kPhaseRow;
      stored.scope = plumb::phase_name(phase);
      return stored;
    }
    const size_t n = std::strlen(scope);
    const std::string& layer = stored.layer;
    if (layer.compare(0, n, scope) != 0) continue;
    if (layer.size() == n) {
      stored.layer.clear();
    } else if (layer[n] == kPhaseLayerSeparator) {
      stored.layer = layer.substr(n + 1);
    } else {
      continue;
    }
    stored.scope = plumb::phase_name(phase);
    return stored;
  }
  return stored;
}

}  // namespace plumb::profile
