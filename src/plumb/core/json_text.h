// Serialising plumb's JSON documents, for stdout, files and the store alike. Text that users
// type or workloads produce may hold bytes that are not UTF-8 (a tag from a shell variable, a
// config value read from a file): nlohmann's dump() throws on them, which would lose a
// measurement at the moment it is stored, or fail a whole export over one tag. Invalid
// sequences become U+FFFD instead; everything else is kept byte for byte.
#pragma once

#include <string>

namespace plumb {

// `indent` < 0: one line; otherwise pretty-printed with that many spaces per level.
template <typename Json>
std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace plumb
