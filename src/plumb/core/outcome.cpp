// Names of outcome states and their parsing, beside each other (see outcome.h).
#include "plumb/core/outcome.h"

namespace plumb {

const char* outcome_state_name(OutcomeState state) {
  switch (state) {
    case OutcomeState::kOk:
      return "ok";
    case OutcomeState::kNanLoss:
      return "nan_loss";
    case OutcomeState::kOutOfMemory:
      return "out_of_memory";
    case OutcomeState::kError:
      return "error";
    case OutcomeState::kUnsupported:
      return "unsupported";
    case OutcomeState::kTimeout:
      return "timeout";
  }
  return "error";
}

const std::vector<OutcomeState>& all_outcome_states() {
  static const std::vector<OutcomeState> states = {
      OutcomeState::kOk,    OutcomeState::kNanLoss,     OutcomeState::kOutOfMemory,
      OutcomeState::kError, OutcomeState::kUnsupported, OutcomeState::kTimeout};
  return states;
}

std::optional<OutcomeState> parse_outcome_state(const std::string& name) {
  for (OutcomeState state : all_outcome_states())
    if (name == outcome_state_name(state)) return state;
  return std::nullopt;
}

}  // namespace plumb
