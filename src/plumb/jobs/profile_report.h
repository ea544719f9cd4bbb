// plumb profile's reporters: its JSON document and its text tables (per pass the rows by
// operator, category or layer; thread scaling; training vs inference).
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "plumb/analysis/breakdown.h"
#include "plumb/core/generation.h"
#include "plumb/jobs/profile_job.h"

namespace plumb::jobs {

// How a profile is shown: its rows grouped `by` (named as the user wrote it), the `top` rows
// (0: all in JSON, 15 in the table).
struct ProfileView {
  analysis::GroupBy by = analysis::GroupBy::kCategory;
  std::string by_name = "category";
  size_t top = 0;
  // A generation's phase shown (ProfileJobResult::phase); nullopt: each in its own section.
  std::optional<Phase> phase;
};

nlohmann::ordered_json profile_json(const ProfileJobResult& result, const ProfileView& view);
void print_profile(std::ostream& out, const ProfileJobResult& result, const ProfileView& view);

}  // namespace plumb::jobs
