// Captures the machine and library environment stored with every run (see environment.h).
#include "plumb/platform/environment.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "plumb/core/version.h"
#include "plumb/platform/blas_check.h"
#include "plumb/platform/cpu_competition.h"
#include "plumb/platform/cpu_features.h"

#ifdef PLUMB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace plumb::platform {
namespace {

// "model name" and "flags" (x86) / "Features" (Arm) from /proc/cpuinfo.
void read_cpuinfo(std::string& model, std::set<std::string>& flags) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (model.empty() && (key == "model name" || key == "Model" || key == "cpu model"))
      model = value;
    if (flags.empty() && (key == "flags" || key == "Features")) {
      std::istringstream words(value);
      std::string w;
      while (words >> w) flags.insert(w);
    }
  }
}

std::string onednn_version() {
  // LibTorch links oneDNN dynamically on Debian; ask the copy actually loaded.
  struct Version {
    int major, minor, patch;
    const char* hash;
    unsigned cpu_runtime, gpu_runtime;
  };
  using Fn = const Version* (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "dnnl_version"));
  if (fn == nullptr) return "";
  const Version* v = fn();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

std::string device_name(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return "cpu";
#ifdef PLUMB_WITH_CUDA
  if (torch::cuda::is_available()) {
    torch::Device d(device);
    return at::cuda::getDeviceProperties(d.has_index() ? d.index() : 0)->name;
  }
#endif
  return device;
}

}  // namespace

std::string machine_key(const Environment& env) {
  return fmt::format("{} | {} | {} logical cores | {}", env.host, env.cpu_model, env.logical_cores,
                     env.device);
}

Environment capture_environment(int threads_used, const std::string& device) {
  Environment env;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) env.host = host;
  utsname u{};
  if (uname(&u) == 0) env.os = fmt::format("{} {} {}", u.sysname, u.release, u.machine);

  std::set<std::string> flags;
  read_cpuinfo(env.cpu_model, flags);
  // The vector/matrix features that decide which kernels LibTorch and oneDNN can use.
  for (const char* f :
       {"sse4_2",   "avx",         "avx2",        "fma",         "f16c",     "avx512f",  "avx512bw",
        "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
        "asimd",    "asimddp",     "sve",         "sve2",        "bf16",     "i8mm"})
    if (flags.count(f) != 0) env.isa.push_back(f);

  env.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  env.threads_used = threads_used;
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) env.load_average_1m = load[0];
  env.cpu_governor = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");

  env.libtorch_version = TORCH_VERSION;
  BlasInfo blas = detect_blas();
  env.blas = blas_description(blas);
  env.blas_optimized = blas.optimized;
  env.onednn_version = onednn_version();
  env.plumb_version = plumb_version();
  env.git_commit = plumb_git_commit();
  env.compiler = plumb_compiler();
  env.device = device_name(device);

  // Conditions that make a timing less trustworthy, recorded next to it.
  if (const std::string w = blas_environment_warning(blas); !w.empty()) env.warnings.push_back(w);
  // Competition is measured, not read off the load average (which still counts the run that
  // ended a moment ago: see cpu_competition.h).
  if (const auto busy = sample_other_busy_cores(); busy && *busy >= kCompetingBusyCores)
    env.warnings.push_back(fmt::format(
        "other processes kept {:.1f} of {} cores busy just before the run: they compete for the "
        "CPU",
        *busy, env.logical_cores));
  if (!env.cpu_governor.empty() && env.cpu_governor != "performance")
    env.warnings.push_back("CPU frequency governor is '" + env.cpu_governor +
                           "' (frequency scaling can shift timings)");
  if (env.logical_cores > 0 && threads_used > env.logical_cores)
    env.warnings.push_back(fmt::format("{} threads on {} logical cores: oversubscribed",
                                       threads_used, env.logical_cores));
  return env;
}

}  // namespace plumb::platform
