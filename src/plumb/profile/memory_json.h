// The memory breakdown of one step as JSON (documented in docs/json.md): how it is stored and
// how `plumb memory --json` prints it. Bytes are integers, times milliseconds.
#pragma once

#include <nlohmann/json.hpp>

#include "plumb/profile/memory_breakdown.h"

namespace plumb::profile {

// {"weights": n, ..., "other": n} in category order.
nlohmann::ordered_json category_bytes_json(const CategoryBytes& bytes);

nlohmann::ordered_json to_json(const MemoryBreakdown& breakdown);
// Throws nlohmann::json::exception when a field is missing or has the wrong type.
MemoryBreakdown breakdown_from_json(const nlohmann::json& j);

}  // namespace plumb::profile
