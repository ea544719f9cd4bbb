// Error kinds shared by every layer: bad user input vs. internal bugs.
//
// docs/architecture.md, "Errors": bad user input raises UsageError (caught by the CLI, one
// actionable line, exit code 2, nothing written half-way); a result that was produced but could not
// be stored raises SaveError (exit code 3); a broken invariant is a bug and asserts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace plumb {

// Raised for input the user can fix: unknown names, out-of-range values, bad files.
// The message must say what was wrong and what to do instead.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// A measurement (or another result) that was made but could not be stored, for a reason the
// user can fix: the database stayed locked, is read-only, or its disk is full. A UsageError
// for every layer that catches those, but the CLI exits with its own code: unlike bad usage,
// work was done, and the message carries what was lost.
class SaveError : public UsageError {
 public:
  using UsageError::UsageError;
};

}  // namespace plumb

// Internal invariant. Unlike assert() it stays on in release builds: a benchmark that
// silently continues past a broken invariant produces numbers nobody should trust.
#define PLUMB_ASSERT(cond, msg)                                                              \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "plumb internal error: %s (%s) at %s:%d\n", msg, #cond, __FILE__, \
                   __LINE__);                                                                \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
