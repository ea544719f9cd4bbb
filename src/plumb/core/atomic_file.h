// Writing an output file (a report, a trace) so that an existing one is never left half-written:
// the content goes to a temporary file beside it, which then replaces it in one rename.
#pragma once

#include <string>

namespace plumb {

// Throws UsageError naming the path when the directory is not writable, the write fails (disk
// full, checked through fsync) or the file cannot be replaced; the temporary file is removed on
// every failure, and a file already at `path` is then left as it was.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace plumb
