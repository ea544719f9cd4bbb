// plumb's own identity, stamped into every stored record (generated at build time).
#pragma once

namespace plumb {
const char* plumb_version();
const char* plumb_git_commit();  // short hash, "-dirty" when the tree had local changes
const char* plumb_compiler();
}  // namespace plumb
