// Typed, documented workload configuration (see config.h).
#include "plumb/core/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb {

Config& Config::add_int(const std::string& key, int64_t value, const std::string& doc,
                        int64_t min_value) {
  PLUMB_ASSERT(find(key) == nullptr, "config key declared twice");
  entries_.push_back({key, value, doc, {}, static_cast<double>(min_value)});
  return *this;
}

Config& Config::add_double(const std::string& key, double value, const std::string& doc,
                           double min_value) {
  PLUMB_ASSERT(find(key) == nullptr, "config key declared twice");
  entries_.push_back({key, value, doc, {}, min_value});
  return *this;
}

Config& Config::add_bool(const std::string& key, bool value, const std::string& doc) {
  PLUMB_ASSERT(find(key) == nullptr, "config key declared twice");
  entries_.push_back({key, value, doc, {}, 0});
  return *this;
}

Config& Config::add_choice(const std::string& key, const std::string& value,
                           std::vector<std::string> choices, const std::string& doc) {
  PLUMB_ASSERT(find(key) == nullptr, "config key declared twice");
  entries_.push_back({key, value, doc, std::move(choices), 0});
  return *this;
}

const ConfigEntry* Config::find(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

ConfigEntry* Config::find(const std::string& key) {
  for (auto& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

const ConfigEntry& Config::require(const std::string& key) const {
  const ConfigEntry* e = find(key);
  PLUMB_ASSERT(e != nullptr, "workload read a config key it never declared");
  return *e;
}

int64_t Config::get_int(const std::string& key) const {
  return std::get<int64_t>(require(key).value);
}
double Config::get_double(const std::string& key) const {
  return std::get<double>(require(key).value);
}
bool Config::get_bool(const std::string& key) const {
  return std::get<bool>(require(key).value);
}
const std::string& Config::get_string(const std::string& key) const {
  return std::get<std::string>(require(key).value);
}

void Config::set_int(const std::string& key, int64_t value) {
  set_from_text(key, std::to_string(value));
}

void Config::apply_settings(const std::vector<std::string>& key_values) {
  for (const auto& kv : key_values) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("a setting must be key=value, got '" + kv + "'");
    set_from_text(kv.substr(0, eq), kv.substr(eq + 1));
  }
}

void Config::set_from_text(const std::string& key, const std::string& text) {
  ConfigEntry* e = find(key);
  if (e == nullptr && (key == "dtype" || key == "memory_format"))
    throw UsageError(fmt::format("'{}' is a run setting, not a workload key: use --{} {}", key,
                                 key == "dtype" ? "dtype" : "memory-format", text));
  if (e == nullptr) {
    std::vector<std::string> keys;
    for (const auto& x : entries_) keys.push_back(x.key);
    throw UsageError(fmt::format("unknown config key '{}'{}; valid keys: {}", key,
                                 suggestion_suffix(key, keys), join(keys, ", ")));
  }
  if (std::holds_alternative<int64_t>(e->value)) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE)
      throw UsageError(fmt::format("{} must be an integer, got '{}'", key, text));
    if (static_cast<double>(v) < e->min_value)
      throw UsageError(fmt::format("{} must be at least {}, got {}", key,
                                   static_cast<int64_t>(e->min_value), v));
    e->value = static_cast<int64_t>(v);
  } else if (std::holds_alternative<double>(e->value)) {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v))
      throw UsageError(fmt::format("{} must be a finite number, got '{}'", key, text));
    if (v < e->min_value)
      throw UsageError(fmt::format("{} must be at least {}, got {}", key, e->min_value, v));
    e->value = v;
  } else if (std::holds_alternative<bool>(e->value)) {
    if (text == "true" || text == "1") {
      e->value = true;
    } else if (text == "false" || text == "0") {
      e->value = false;
    } else {
      throw UsageError(fmt::format("{} must be true or false, got '{}'", key, text));
    }
  } else {
    if (!e->choices.empty()) {
      bool ok = false;
      for (const auto& c : e->choices) ok = ok || c == text;
      if (!ok)
        throw UsageError(
            fmt::format("{} must be one of: {} (got '{}')", key, join(e->choices, ", "), text));
    }
    e->value = text;
  }
}

std::string Config::value_text(const ConfigValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{}", v);
        } else {
          return std::to_string(v);
        }
      },
      value);
}

nlohmann::ordered_json Config::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& e : entries_) {
    std::visit([&](const auto& v) { out[e.key] = v; }, e.value);
  }
  return out;
}

std::vector<std::string> Config::differences_from(const Config& defaults) const {
  std::vector<std::string> out;
  for (const auto& e : entries_) {
    const ConfigEntry* d = defaults.find(e.key);
    if (d == nullptr || d->value != e.value) out.push_back(e.key + "=" + value_text(e.value));
  }
  return out;
}

}  // namespace plumb
