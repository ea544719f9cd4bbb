// Data-segment cap from /proc (see memory_cap.h).
#include "plumb/platform/memory_cap.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace plumb::platform {

int64_t proc_kib_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

std::string cap_data_segment(int64_t headroom_bytes) {
  const int64_t used = proc_kib_field("/proc/self/status", "VmData");
  if (used < 0 || headroom_bytes <= 0) return "memory cap not set: /proc gave no figures";
  rlimit limit{};
  if (getrlimit(RLIMIT_DATA, &limit) != 0)
    return fmt::format("memory cap not set: getrlimit: {}", std::strerror(errno));
  const auto wanted = static_cast<rlim_t>(used + headroom_bytes);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur <= wanted) return "";  // already lower
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  if (setrlimit(RLIMIT_DATA, &limit) != 0)
    return fmt::format("memory cap not set: setrlimit: {}", std::strerror(errno));
  return "";
}

std::string cap_data_segment_to_available_memory(int sharers) {
  return cap_data_segment(proc_kib_field("/proc/meminfo", "MemAvailable") / std::max(1, sharers));
}

}  // namespace plumb::platform
