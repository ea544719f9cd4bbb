// Sweep specifications: parsing (YAML or JSON through yaml-cpp), validation, canonical form,
// expansion and sharding (see sweep_spec.h).
#include "plumb/run/sweep_spec.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"

namespace plumb::run {
namespace {

const std::vector<std::string> kTopKeys = {"name",    "workload", "modes", "dtypes", "measure",
                                           "threads", "seed",     "set",   "grid",   "budget"};
const std::vector<std::string> kBudgetKeys = {"max_time", "max_warmup_time", "target_ci",
                                              "min_samples", "point_time_limit"};
const std::vector<std::string> kRangeKeys = {"from", "to", "times", "step"};
const std::vector<std::string> kMeasures = {"throughput", "memory", "profile"};

void require_known_keys(const YAML::Node& map, const std::vector<std::string>& valid,
                        const std::string& where) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(valid.begin(), valid.end(), key) == valid.end())
      throw UsageError(fmt::format("unknown key '{}' in {}{}; valid keys: {}", key, where,
                                   suggestion_suffix(key, valid), join(valid, ", ")));
  }
}

double number_of(const YAML::Node& n, const std::string& what) {
  const std::string text = n.as<std::string>();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw UsageError(fmt::format("{} must be a number, got '{}'", what, text));
  return v;
}

// A whole number within [min, max], from its text (a double would overflow the integer it is
// cast to: undefined behaviour, found by fuzzing the spec parser).
uint64_t whole_number_of(const YAML::Node& n, const std::string& what, uint64_t min, uint64_t max) {
  const std::string text = n.as<std::string>();
  uint64_t v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || v < min ||
      v > max)
    throw UsageError(
        fmt::format("{} must be a whole number from {} to {}, got '{}'", what, min, max, text));
  return v;
}

// "64" rather than "64.000000" for whole numbers, so range values read as config integers.
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

std::vector<std::string> expand_range(const YAML::Node& range, const std::string& key) {
  require_known_keys(range, kRangeKeys, "the range of grid key '" + key + "'");
  if (!range["from"] || !range["to"] || (!range["times"] == !range["step"]))
    throw UsageError(fmt::format(
        "the range of grid key '{}' needs from, to and one of times (x) or step (+), e.g. "
        "{{from: 64, to: 1024, times: 2}}",
        key));
  const double from = number_of(range["from"], key + ".from");
  const double to = number_of(range["to"], key + ".to");
  const bool geometric = static_cast<bool>(range["times"]);
  const double by =
      number_of(geometric ? range["times"] : range["step"], key + (geometric ? ".times" : ".step"));
  if (geometric ? (by <= 1 || from <= 0) : by <= 0)
    throw UsageError(fmt::format("the range of grid key '{}' never advances: {} must be {}", key,
                                 geometric ? "times" : "step",
                                 geometric ? "> 1 (with from > 0)" : "> 0"));
  std::vector<std::string> values;
  for (double v = from; v <= to * (1 + 1e-12); v = geometric ? v * by : v + by) {
    // A step below the precision of the values would repeat one value for ever.
    if (values.size() == kMaxSweepPoints || (!values.empty() && number_text(v) == values.back()))
      throw UsageError(fmt::format(
          "the range of grid key '{}' has more than {} values, or a step too small to tell "
          "them apart; use a larger {}",
          key, kMaxSweepPoints, geometric ? "times" : "step"));
    values.push_back(number_text(v));
  }
  if (values.empty())
    throw UsageError(fmt::format("the range of grid key '{}' has no values (from {} > to {})", key,
                                 number_text(from), number_text(to)));
  return values;
}

std::vector<std::string> string_list(const YAML::Node& n, const std::string& what) {
  std::vector<std::string> out;
  if (n.IsScalar()) {
    out.push_back(n.as<std::string>());
  } else if (n.IsSequence()) {
    for (const auto& item : n) {
      if (!item.IsScalar()) throw UsageError(fmt::format("{} must list plain values", what));
      out.push_back(item.as<std::string>());
    }
  } else {
    throw UsageError(fmt::format("{} must be a value or a list of values", what));
  }
  if (out.empty()) throw UsageError(fmt::format("{} is an empty list", what));
  std::set<std::string> seen;
  for (const auto& v : out)
    if (!seen.insert(v).second)
      throw UsageError(fmt::format("{} lists '{}' twice; give each value once", what, v));
  return out;
}

SweepSpec spec_from_yaml(const YAML::Node& root, const std::string& default_name) {
  if (!root.IsMap())
    throw UsageError("a sweep spec must be a mapping with at least 'workload' and 'grid'");
  require_known_keys(root, kTopKeys, "the sweep spec");
  SweepSpec s;
  s.name = root["name"] ? root["name"].as<std::string>() : default_name;
  if (!root["workload"]) throw UsageError("the sweep spec has no 'workload'");
  s.workload = root["workload"].as<std::string>();
  if (root["modes"]) {
    s.modes.clear();
    for (const auto& m : string_list(root["modes"], "modes")) s.modes.push_back(parse_mode(m));
  }
  if (root["dtypes"]) {
    s.dtypes.clear();
    for (const auto& d : string_list(root["dtypes"], "dtypes")) s.dtypes.push_back(parse_dtype(d));
  }
  if (root["measure"]) {
    for (const auto& m : string_list(root["measure"], "measure")) {
      if (std::find(kMeasures.begin(), kMeasures.end(), m) == kMeasures.end())
        throw UsageError(fmt::format("unknown measure '{}'; valid: {}", m, join(kMeasures, ", ")));
      if (m == "memory") s.measure_memory = true;
      if (m == "profile") s.measure_profile = true;
    }
  }
  if (root["threads"])
    s.threads = static_cast<int>(whole_number_of(root["threads"], "threads", 1, 4096));
  if (root["seed"])
    s.seed = whole_number_of(root["seed"], "seed", 0, std::numeric_limits<uint64_t>::max());
  if (root["set"]) {
    if (!root["set"].IsMap()) throw UsageError("'set' must map config keys to single values");
    for (const auto& kv : root["set"])
      s.sets.push_back(kv.first.as<std::string>() + "=" + kv.second.as<std::string>());
  }
  if (!root["grid"] || !root["grid"].IsMap() || root["grid"].size() == 0)
    throw UsageError("the sweep spec needs a 'grid' mapping config keys to lists or ranges");
  for (const auto& kv : root["grid"]) {
    const std::string key = kv.first.as<std::string>();
    s.grid.emplace_back(key, kv.second.IsMap() ? expand_range(kv.second, key)
                                               : string_list(kv.second, "grid key '" + key + "'"));
  }
  if (root["budget"]) {
    const YAML::Node& b = root["budget"];
    require_known_keys(b, kBudgetKeys, "budget");
    if (b["max_time"]) s.budget.max_time_s = number_of(b["max_time"], "budget.max_time");
    if (b["max_warmup_time"])
      s.budget.max_warmup_s = number_of(b["max_warmup_time"], "budget.max_warmup_time");
    if (b["target_ci"]) s.budget.target_ci = number_of(b["target_ci"], "budget.target_ci");
    if (b["min_samples"])
      s.budget.min_samples = static_cast<size_t>(
          whole_number_of(b["min_samples"], "budget.min_samples", 1, 1000000000));
    if (b["point_time_limit"])
      s.budget.point_time_limit_s = number_of(b["point_time_limit"], "budget.point_time_limit");
  }
  return s;
}

}  // namespace

SweepSpec parse_sweep_spec(const std::string& text, const std::string& default_name) {
  try {
    return spec_from_yaml(YAML::Load(text), default_name);
  } catch (const YAML::Exception& e) {
    throw UsageError(fmt::format("the sweep spec is not valid YAML/JSON: {}", e.what()));
  }
}

SweepSpec load_sweep_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError(
        fmt::format("cannot read sweep spec '{}': no such file or not readable", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_sweep_spec(text.str(), std::filesystem::path(path).stem().string());
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", path, e.what()));
  }
}

SweepSpec sweep_spec_from_grid(const std::string& workload, const std::vector<std::string>& grid,
                               const std::vector<std::string>& sets) {
  if (grid.empty()) throw UsageError("a sweep needs at least one --grid key=v1,v2,...");
  SweepSpec s;
  s.workload = workload;
  s.sets = sets;
  std::string name = workload;
  for (const auto& g : grid) {
    const auto eq = g.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(fmt::format("--grid must be key=v1,v2,..., got '{}'", g));
    YAML::Node list;
    for (const auto& v : split(g.substr(eq + 1), ',')) list.push_back(v);
    const std::string key = g.substr(0, eq);
    s.grid.emplace_back(key, string_list(list, "--grid " + key));
    name += "-" + key;
  }
  s.name = name;
  return s;
}

void validate_sweep_spec(const SweepSpec& s, const Workload& w) {
  if (s.modes.empty()) throw UsageError("a sweep needs at least one mode");
  if (s.dtypes.empty()) throw UsageError("a sweep needs at least one dtype");
  if (s.threads < 1) throw UsageError(fmt::format("threads must be at least 1, got {}", s.threads));
  if (s.budget.max_time_s <= 0 || s.budget.max_warmup_s <= 0 || s.budget.target_ci <= 0 ||
      s.budget.point_time_limit_s < 0)
    throw UsageError("budget times and target_ci must be positive (point_time_limit >= 0)");
  // The product of the list sizes, checked before it can overflow or be expanded.
  uint64_t points = s.modes.size() * s.dtypes.size();
  for (const auto& [key, values] : s.grid) {
    if (!values.empty() && points > kMaxSweepPoints / values.size())
      throw UsageError(fmt::format(
          "the sweep has more than {} points (modes x dtypes x the grid's lists); narrow the "
          "grid or split it into several sweeps",
          kMaxSweepPoints));
    points *= values.size();
  }
  std::set<std::string> keys;
  for (const auto& [key, values] : s.grid) {
    if (!keys.insert(key).second) throw UsageError(fmt::format("grid key '{}' appears twice", key));
    if (values.empty()) throw UsageError(fmt::format("grid key '{}' has no values", key));
    for (const auto& v : values) {
      Config c = w.default_config();
      c.apply_settings(s.sets);
      c.set_from_text(key, v);  // unknown keys and refused values throw, naming the valid ones
    }
  }
  Config c = w.default_config();
  c.apply_settings(s.sets);
}

bool sweeps_precision(const SweepSpec& s) {
  return !(s.dtypes.size() == 1 && s.dtypes.front() == Dtype::kFp32);
}

nlohmann::ordered_json canonical_json(const SweepSpec& s) {
  nlohmann::ordered_json j;
  j["name"] = s.name;
  j["workload"] = s.workload;
  j["modes"] = nlohmann::ordered_json::array();
  for (Mode m : s.modes) j["modes"].push_back(mode_name(m));
  // Only when not the default, so a sweep stored before precisions existed keeps its key.
  if (sweeps_precision(s)) {
    j["dtypes"] = nlohmann::ordered_json::array();
    for (Dtype d : s.dtypes) j["dtypes"].push_back(dtype_name(d));
  }
  j["measure"] = nlohmann::ordered_json{"throughput"};
  if (s.measure_memory) j["measure"].push_back("memory");
  if (s.measure_profile) j["measure"].push_back("profile");
  j["threads"] = s.threads;
  j["seed"] = s.seed;
  std::vector<std::string> sets = s.sets;
  std::sort(sets.begin(), sets.end());
  j["set"] = sets;
  j["grid"] = nlohmann::ordered_json::object();
  for (const auto& [key, values] : s.grid) j["grid"][key] = values;
  j["budget"] = {{"max_time", s.budget.max_time_s},
                 {"max_warmup_time", s.budget.max_warmup_s},
                 {"target_ci", s.budget.target_ci},
                 {"min_samples", s.budget.min_samples},
                 {"point_time_limit", s.budget.point_time_limit_s}};
  return j;
}

std::string sweep_key(const SweepSpec& s) {
  return json_text(canonical_json(s));
}

std::vector<SweepPoint> expand(const SweepSpec& s) {
  size_t per_mode = 1;
  for (const auto& [key, values] : s.grid) per_mode *= values.size();
  std::vector<SweepPoint> points;
  for (Mode m : s.modes) {
    for (Dtype dtype : s.dtypes) {
      for (size_t n = 0; n < per_mode; ++n) {
        SweepPoint p;
        p.index = points.size();
        p.mode = m;
        p.dtype = dtype;
        p.key = std::string("mode=") + mode_name(m);
        if (sweeps_precision(s)) p.key += std::string(" dtype=") + dtype_name(dtype);
        // n in mixed radix, the last grid key the fastest digit.
        std::vector<size_t> digit(s.grid.size());
        size_t rest = n;
        for (size_t k = s.grid.size(); k-- > 0;) {
          digit[k] = rest % s.grid[k].second.size();
          rest /= s.grid[k].second.size();
        }
        for (size_t k = 0; k < s.grid.size(); ++k) {
          const std::string& value = s.grid[k].second[digit[k]];
          p.values.emplace_back(s.grid[k].first, value);
          p.key += " " + s.grid[k].first + "=" + value;
        }
        points.push_back(std::move(p));
      }
    }
  }
  return points;
}

nlohmann::ordered_json point_params(const SweepSpec& spec, const SweepPoint& p) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (sweeps_precision(spec)) j["dtype"] = dtype_name(p.dtype);
  for (const auto& [key, value] : p.values) {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (!value.empty() && *end == '\0' && std::isfinite(v)) {
      j[key] = v;
    } else {
      j[key] = value;
    }
  }
  return j;
}

Config point_config(const Workload& w, const SweepSpec& s, const SweepPoint& p) {
  Config c = w.default_config();
  c.apply_settings(s.sets);
  for (const auto& [key, value] : p.values) c.set_from_text(key, value);
  return c;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto bad = [&] {
    return UsageError(fmt::format(
        "--shard must be i/n with 0 <= i < n (e.g. 0/4 for the first of four), got '{}'", text));
  };
  if (slash == std::string::npos) throw bad();
  char* end = nullptr;
  const long i = std::strtol(text.substr(0, slash).c_str(), &end, 10);
  if (*end != '\0' || slash == 0) throw bad();
  const long n = std::strtol(text.substr(slash + 1).c_str(), &end, 10);
  if (*end != '\0' || slash + 1 == text.size() || n < 1 || i < 0 || i >= n) throw bad();
  return {static_cast<int>(i), static_cast<int>(n)};
}

Shard shard_from_environment() {
  if (const char* s = std::getenv("PLUMB_SHARD")) return parse_shard(s);
  const char* slurm_id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* slurm_count = std::getenv("SLURM_ARRAY_TASK_COUNT");
  if (slurm_id != nullptr && slurm_count != nullptr) {
    const char* slurm_min = std::getenv("SLURM_ARRAY_TASK_MIN");
    const long index = std::atol(slurm_id) - (slurm_min != nullptr ? std::atol(slurm_min) : 0);
    return parse_shard(fmt::format("{}/{}", index, slurm_count));
  }
  const char* sge_id = std::getenv("SGE_TASK_ID");
  const char* sge_last = std::getenv("SGE_TASK_LAST");
  if (sge_id != nullptr && sge_last != nullptr && std::string(sge_id) != "undefined")
    return parse_shard(fmt::format("{}/{}", std::atol(sge_id) - 1, sge_last));
  return {};
}

}  // namespace plumb::run
