// Atomic output files (see atomic_file.h).
#include "plumb/core/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"

namespace plumb {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw UsageError(fmt::format(
          "cannot write '{}': check that its directory exists and is writable, or give another "
          "path",
          path));
    out << content;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw UsageError(fmt::format("writing '{}' failed (disk full?)", path));
    }
  }
  kill_point("file-write");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError(fmt::format("cannot replace '{}': check its permissions", path));
  }
}

}  // namespace plumb
