// /proc fields in bytes (see proc_fields.h).
#include "plumb/core/proc_fields.h"

#include <fstream>
#include <sstream>

namespace plumb {

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

int64_t available_memory_bytes() {
  return proc_kib_field("/proc/meminfo", "MemAvailable");
}

}  // namespace plumb
