// Atomic output files (see atomic_file.h).
#include "plumb/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/kill_point.h"

namespace plumb {
namespace {

// Writes all of `content` to `fd` and makes it durable; false with errno set when the disk
// refuses any of it. Written with POSIX calls rather than a stream, so that the error is the
// system's own (ENOSPC, EDQUOT, EIO) and fsync catches what a file system reports only when
// the data reaches the disk.
bool write_whole(int fd, const std::string& content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return ::fsync(fd) == 0;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UsageError(fmt::format(
        "cannot write '{}': {}; check that its directory exists and is writable, or give another "
        "path",
        path, std::strerror(errno)));
  const bool written = write_whole(fd, content);
  const int write_error = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    const int error = !written ? write_error : errno;
    std::remove(tmp.c_str());
    throw UsageError(fmt::format(
        "writing '{}' failed: {}; nothing was written ('{}' is as it was): free space there or "
        "give another path",
        path, std::strerror(error), path));
  }
  kill_point("file-write");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    throw UsageError(
        fmt::format("cannot replace '{}': {}; check its permissions", path, std::strerror(error)));
  }
}

}  // namespace plumb
