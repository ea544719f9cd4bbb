// A run's statuses: the outcome states a run can end in, parsed back from their names.
#include "plumb/run/run_result.h"

namespace plumb::run {

std::optional<RunStatus> status_from_name(const std::string& name) {
  for (RunStatus s : all_statuses())
    if (name == status_name(s)) return s;
  return std::nullopt;
}

const std::vector<RunStatus>& all_statuses() {
  static const std::vector<RunStatus> statuses = [] {
    std::vector<RunStatus> out;
    for (OutcomeState state : all_outcome_states())
      if (state != OutcomeState::kTimeout) out.push_back(state);
    return out;
  }();
  return statuses;
}

}  // namespace plumb::run
