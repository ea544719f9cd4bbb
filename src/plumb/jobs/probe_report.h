// plumb probe's reporters: the stored or fresh probe (stored_or_fresh_probe.h) as one JSON
// document or as text tables (peaks per dtype and engine beside theory, bandwidth per level, the
// GPU's when there is one).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plumb/jobs/stored_or_fresh_probe.h"

namespace plumb::jobs {

// The stored probe's document (store::probe_json) after "reused".
nlohmann::ordered_json probe_choice_json(const ProbeChoice& choice);
void print_probe(std::ostream& out, const ProbeChoice& choice);

}  // namespace plumb::jobs
