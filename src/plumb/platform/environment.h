// The environment every record carries (docs/architecture.md, "How a measurement travels"): the
// machine, the libraries, plumb's own version, and warnings about conditions that make timings
// noisy.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plumb::platform {

struct Environment {
  std::string host;
  std::string os;  // uname: sysname release machine
  std::string cpu_model;
  std::vector<std::string> isa;  // vector ISA features that matter: avx2, avx512f, ...
  int logical_cores = 0;
  int threads_used = 0;
  double load_average_1m = 0;  // at capture time
  std::string cpu_governor;    // "" when not readable (VMs)
  std::string libtorch_version;
  std::string blas;             // shared library providing BLAS to LibTorch
  bool blas_optimized = false;  // false: reference BLAS, products ~25x slower
  std::string onednn_version;
  std::string plumb_version;
  std::string git_commit;
  std::string compiler;
  std::string device;                 // "cpu" or the GPU name
  std::vector<std::string> warnings;  // noisy-machine conditions
};

// Reads the current machine. `threads_used` is what the run will use.
Environment capture_environment(int threads_used, const std::string& device = "cpu");

// Which machine an environment describes ("host | cpu model | N logical cores | device"):
// measured ceilings are reused only by records of the same machine.
std::string machine_key(const Environment& env);

nlohmann::ordered_json to_json(const Environment& env);
Environment environment_from_json(const nlohmann::json& j);

}  // namespace plumb::platform
