// Fuzz target: arbitrary bytes opened as a results store (`plumb report --db FILE` reads, a
// measuring command writes): random bytes, truncated or bit-flipped plumb databases, SQLite
// files of other schemas. The file is opened read-only and every record kind loaded, then
// opened for writing (which upgrades an older plumb file) and loaded again. Only UsageError
// may escape: a crash, a raw SQLite or JSON message, or a hang is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "plumb/core/errors.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/precision_records.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/serve_records.h"
#include "plumb/store/sweep_records.h"
#include "plumb/store/tune_record.h"

namespace {

void load_everything(const plumb::store::ResultsStore& store) {
  for (const auto& run : store.load_runs(/*with_samples=*/true))
    (void)plumb::store::run_json(run, /*with_samples=*/true);
  for (const auto& profile : store.load_profiles()) (void)store.load_profile_graph(profile.id);
  (void)store.load_fused_kernel_checks();
  (void)store.load_memory_profiles();
  for (const auto& sweep : store.load_sweeps()) (void)store.load_sweep_points(sweep.id);
  (void)store.load_probes();
  (void)store.load_dist_worlds();
  for (const auto& session : store.load_serve_sessions()) {
    (void)plumb::store::serve_session_json(session);
    for (const auto& measurement : session.measurements)
      (void)store.load_serve_queries(measurement.id);
  }
  (void)store.load_tune_sessions();
  (void)store.load_precision_comparisons();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // Never destroyed: the exit handler that removes the directory runs after static destructors.
  static const std::string& dir = *new std::string([] {
    std::string pattern = (fs::temp_directory_path() / "plumb_fuzz_store.XXXXXX").string();
    const std::string made = mkdtemp(pattern.data());
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    });
    return made;
  }());
  const std::string path = dir + "/plumb.db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  for (const bool read_only : {true, false}) {
    try {
      load_everything(*plumb::store::ResultsStore::open(path, read_only));
    } catch (const plumb::UsageError&) {
    }
  }
  return 0;
}
