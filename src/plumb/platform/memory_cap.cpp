// Data-segment cap from /proc (see memory_cap.h).
#include "plumb/platform/memory_cap.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace plumb::platform {

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
  return cap_data_segment(available_memory_bytes() / std::max(1, sharers));
}

}  // namespace plumb::platform
