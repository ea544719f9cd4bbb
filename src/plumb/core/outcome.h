// How a piece of work ended: one state from a closed list and, unless it succeeded, one line
// saying why. Runs, sweep points, peaks, GEMMs, precision checks and tuning trials all report
// this one type; the state's name is what the store and JSON hold, and it parses back here.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace plumb {

// kUnsupported: the setting (a precision, an engine, a kernel) cannot run here, with the reason:
// not a failure of the work. kTimeout: it ran past its time limit (its measurements are kept).
enum class OutcomeState { kOk, kNanLoss, kOutOfMemory, kError, kUnsupported, kTimeout };

// "ok", "nan_loss", "out_of_memory", "error", "unsupported", "timeout"
const char* outcome_state_name(OutcomeState state);
// The state named `name`; nullopt for any other text.
std::optional<OutcomeState> parse_outcome_state(const std::string& name);
// Every state, in the order of the enum.
const std::vector<OutcomeState>& all_outcome_states();

struct Outcome {
  OutcomeState state = OutcomeState::kOk;
  std::string reason;  // one line: why, when not ok

  bool ok() const { return state == OutcomeState::kOk; }
  static Outcome success() { return {}; }
  static Outcome failure(OutcomeState state, std::string reason) {
    return {state, std::move(reason)};
  }
  // Ok when `ok`, else unsupported for `reason`: the common shape of "can this run here?".
  static Outcome supported_if(bool ok, std::string reason) {
    return ok ? success() : failure(OutcomeState::kUnsupported, std::move(reason));
  }
};

}  // namespace plumb
