// What the unit tests that check a refusal share: a call that must throw UsageError, and its one
// line naming what the user needs to know (the command line's own check is in cli_fixture.h).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plumb/core/errors.h"

namespace plumb {

// Runs `fn`, expects a UsageError whose message contains every string of `parts`; returns the
// message ("" after a test failure when nothing was thrown).
template <typename Fn>
std::string expect_usage_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const UsageError& e) {
    const std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    return message;
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

}  // namespace plumb
