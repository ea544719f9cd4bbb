// The report's chart of decode on the memory roof: decode tokens/s against the bytes a token
// reads (counted from the model's dimensions), one point per stored generative inference run
// at batch 1, and per thread count and precision with three or more such runs, the fitted roof
// tokens/s = BW / bytes (docs/llm.md "Decode on the memory roof").
#pragma once

#include <optional>
#include <vector>

#include "plumb/report/page.h"
#include "plumb/store/run_record.h"

namespace plumb::report {

// None when no run is a generative inference run at batch 1 that ran.
std::optional<Chart> decode_roof_chart(const std::vector<store::StoredRun>& runs);

}  // namespace plumb::report
