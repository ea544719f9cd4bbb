// JSON form of the environment record: what the store keeps and what exports print.
//
// The key names are a public interface (docs/json.md, exports, stored rows). Reading is
// lenient on purpose: a key that is missing falls back to the struct's default, so records
// written by an older plumb, before a field existed, still load.
#include <cmath>
#include <limits>

#include "plumb/platform/environment.h"

namespace plumb::platform {

namespace {

// A load average that could not be read is NaN in memory and null in JSON (nlohmann would
// print NaN as null anyway; being explicit keeps the JSON object itself free of NaN).
nlohmann::ordered_json number_or_null(double x) {
  if (std::isnan(x)) return nullptr;
  return x;
}

// The value at `key`, or T's default (empty, 0, false) when it is missing or null.
template <class T>
T read_or_default(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return T{};
  return it->get<T>();
}

double read_double(const nlohmann::json& j, const char* key, double missing) {
  auto it = j.find(key);
  if (it == j.end()) return missing;
  if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

}  // namespace

nlohmann::ordered_json to_json(const Environment& env) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["host"] = env.host;
  j["os"] = env.os;
  j["cpu_model"] = env.cpu_model;
  j["isa"] = env.isa;
  j["logical_cores"] = env.logical_cores;
  j["threads_used"] = env.threads_used;
  j["load_average_1m"] = number_or_null(env.load_average_1m);
  j["cpu_governor"] = env.cpu_governor;
  j["libtorch_version"] = env.libtorch_version;
  j["blas"] = env.blas;
  j["blas_optimized"] = env.blas_optimized;
  j["onednn_version"] = env.onednn_version;
  j["plumb_version"] = env.plumb_version;
  j["git_commit"] = env.git_commit;
  j["compiler"] = env.compiler;
  j["device"] = env.device;
  j["warnings"] = env.warnings;
  return j;
}

Environment environment_from_json(const nlohmann::json& j) {
  Environment env;
  if (!j.is_object()) return env;
  env.host = read_or_default<std::string>(j, "host");
  env.os = read_or_default<std::string>(j, "os");
  env.cpu_model = read_or_default<std::string>(j, "cpu_model");
  env.isa = read_or_default<std::vector<std::string>>(j, "isa");
  env.logical_cores = read_or_default<int>(j, "logical_cores");
  env.threads_used = read_or_default<int>(j, "threads_used");
  env.load_average_1m = read_double(j, "load_average_1m", env.load_average_1m);
  env.cpu_governor = read_or_default<std::string>(j, "cpu_governor");
  env.libtorch_version = read_or_default<std::string>(j, "libtorch_version");
  env.blas = read_or_default<std::string>(j, "blas");
  env.blas_optimized = read_or_default<bool>(j, "blas_optimized");
  env.onednn_version = read_or_default<std::string>(j, "onednn_version");
  env.plumb_version = read_or_default<std::string>(j, "plumb_version");
  env.git_commit = read_or_default<std::string>(j, "git_commit");
  env.compiler = read_or_default<std::string>(j, "compiler");
  env.device = read_or_default<std::string>(j, "device");
  env.warnings = read_or_default<std::vector<std::string>>(j, "warnings");
  return env;
}

}  // namespace plumb::platform
