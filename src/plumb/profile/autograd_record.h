// How the RecordFunction callbacks (the op observer's and the allocation tracker's) tell the
// autograd engine's own records in the backward pass from the operators they wrap.
#pragma once

#include <cstring>

#include <ATen/record_function.h>

namespace plumb::profile {

// The engine wraps each node in a FUNCTION-scope record "autograd::engine::evaluate_function:
// XBackward0"; that wrapper and the node itself (BACKWARD_FUNCTION scope) are autograd
// bookkeeping of the backward pass.
inline bool is_autograd_record(const at::RecordFunction& fn) {
  static constexpr char kEngineWrapper[] = "autograd::engine::evaluate_function:";
  return fn.scope() == at::RecordScope::BACKWARD_FUNCTION ||
         std::strncmp(fn.name(), kEngineWrapper, sizeof(kEngineWrapper) - 1) == 0;
}

}  // namespace plumb::profile
