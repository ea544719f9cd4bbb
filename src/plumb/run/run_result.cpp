// Names of run statuses, as stored and printed, and parsed back.
#include "plumb/run/run_result.h"

namespace plumb::run {

const char* status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kNanLoss:
      return "nan_loss";
    case RunStatus::kOutOfMemory:
      return "out_of_memory";
    case RunStatus::kError:
      return "error";
    case RunStatus::kUnsupported:
      return "unsupported";
  }
  return "error";
}

std::optional<RunStatus> status_from_name(const std::string& name) {
  for (RunStatus s : all_statuses())
    if (name == status_name(s)) return s;
  return std::nullopt;
}

const std::vector<RunStatus>& all_statuses() {
  static const std::vector<RunStatus> statuses = {RunStatus::kOk, RunStatus::kNanLoss,
                                                  RunStatus::kOutOfMemory, RunStatus::kError,
                                                  RunStatus::kUnsupported};
  return statuses;
}

}  // namespace plumb::run
