// Environment variables set or unset for one scope and restored on any exit from it: a failed
// ASSERT returns from the test early, and a variable it left behind (a data-parallel world's
// RANK, a kill point) would change every later test of the same process.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace plumb::testing {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

  ScopedEnv& set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
    return *this;
  }

  ScopedEnv& unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
    return *this;
  }

 private:
  // The value before this scope first touched the variable (nullopt: it was not set).
  void save(const std::string& name) {
    if (saved_.count(name) != 0) return;
    const char* value = std::getenv(name.c_str());
    saved_[name] = value != nullptr ? std::optional<std::string>(value) : std::nullopt;
  }

  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace plumb::testing
