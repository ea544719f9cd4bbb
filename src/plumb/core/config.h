// A workload's resolved configuration: typed key/value pairs with documentation.
//
// Every hyperparameter a workload reads lives here (batch size, input sizes, dtype, layer
// widths ...), so an instance is fully described by (workload name, config) and can be
// printed as the exact command that reproduces it. Keys keep their declaration order so
// printed configs read like the model definition.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace plumb {

using ConfigValue = std::variant<int64_t, double, bool, std::string>;

struct ConfigEntry {
  std::string key;
  ConfigValue value;
  std::string doc;                   // one line: what it is, and where the default is from
  std::vector<std::string> choices;  // for string keys with a closed set of values
  double min_value = 0;              // numeric keys: inclusive lower bound
};

class Config {
 public:
  // Declaration (used by workloads when they state their defaults).
  Config& add_int(const std::string& key, int64_t value, const std::string& doc,
                  int64_t min_value = 1);
  Config& add_double(const std::string& key, double value, const std::string& doc,
                     double min_value = 0);
  Config& add_bool(const std::string& key, bool value, const std::string& doc);
  Config& add_choice(const std::string& key, const std::string& value,
                     std::vector<std::string> choices, const std::string& doc);

  // Typed reads; asking for an undeclared key or the wrong type is a bug.
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;

  bool has(const std::string& key) const { return find(key) != nullptr; }

  // Overrides a declared key from user text ("key=value" parts already split). Throws
  // UsageError naming the valid keys or the accepted range/choices.
  void set_from_text(const std::string& key, const std::string& text);
  void set_int(const std::string& key, int64_t value);
  // Applies "key=value" settings in order (--set, a workload's tiny or main-job overrides);
  // throws UsageError for text without '=' or a key before it.
  void apply_settings(const std::vector<std::string>& key_values);

  const std::vector<ConfigEntry>& entries() const { return entries_; }

  // {"key": value, ...} in declaration order.
  nlohmann::ordered_json to_json() const;
  // "key=value,key=value" for keys that differ from `defaults` (used in reproducer lines).
  std::vector<std::string> differences_from(const Config& defaults) const;
  static std::string value_text(const ConfigValue& value);

 private:
  const ConfigEntry* find(const std::string& key) const;
  ConfigEntry* find(const std::string& key);
  const ConfigEntry& require(const std::string& key) const;
  std::vector<ConfigEntry> entries_;
};

}  // namespace plumb
