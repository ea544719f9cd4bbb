// `plumb probe`: measures this machine's ceilings — instruction and GEMM peaks per dtype,
// bandwidth per memory level — and returns them as one JSON document (fields in
// docs/json.md), which the store keeps whole and the roofline reads back. Nothing is written
// here: the caller stores the document only once the probe has finished, so an interrupted
// probe leaves nothing behind.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plumb::platform {

// Bumped when the document's shape changes incompatibly (readers check it).
// 2: theory inferred from measured throughput, clocks measured under each engine's load,
// peaks per engine (vector, matrix), merged memory levels.
// 3: each engine's `sequences`, the fastest its peak: an AVX2 CPU without VNNI times int8 in
// oneDNN's order as well, so a stored version 2 int8 roof there can sit below oneDNN's GEMM.
inline constexpr int kProbeDocumentVersion = 3;

struct ProbeOptions {
  bool thorough = false;  // quick: a few seconds (tests, main job); thorough: for publication
  int max_threads = 0;    // 0: every CPU this process may run on
};

// Thread counts a probe measures: 1..N for peaks; for bandwidth and GEMMs 1, powers of two
// and N (quick: 1 and N only).
std::vector<int> probe_thread_counts(int max_threads, bool all);

using ProbeProgress = std::function<void(const std::string& stage)>;

nlohmann::ordered_json run_probe(const ProbeOptions& options, const ProbeProgress& progress = {});

}  // namespace plumb::platform
