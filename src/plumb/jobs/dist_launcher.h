// plumb dist's local launcher: one world of worker processes of this binary on this machine,
// each pinned to cores of its own (so oversubscription cannot pass for communication cost),
// optionally inside a shaped network namespace; all of them stopped when one dies.
#pragma once

#include <filesystem>

#include "plumb/jobs/dist_protocol.h"
#include "plumb/run/shaped_link.h"

namespace plumb::jobs {

// Starts `workers` processes of this binary's hidden _dist-worker command (in `link`'s
// namespace when not null), waits for them and returns rank 0's result, read from a file in
// `dir`. When one fails, the others are stopped and the reason is thrown: UsageError when the
// workers refused the configuration (their line is on stderr already), else run::DistError.
DistWorkerResult launch_local_world(const DistSpec& spec, int workers,
                                    const std::filesystem::path& dir, const run::ShapedLink* link);

}  // namespace plumb::jobs
