// The results store: one SQLite file (default ./plumb.db) holding every run, its
// environment, its resolved config, every timing sample and its summary.
//
// Guarantees: the file is identified as plumb's (PRAGMA application_id) and carries its
// schema version (PRAGMA user_version); a foreign file or a newer schema is refused and left
// untouched; WAL journaling; each run is written in a single transaction, so a process
// killed mid-run leaves every earlier run intact and no partial run behind.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/platform/environment.h"
#include "plumb/profile/fused_kernels.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/output_error.h"
#include "plumb/run/run_result.h"
#include "plumb/run/serving_loop.h"

namespace SQLite {
class Database;
}

namespace plumb::store {

// v1: runs, samples, environments. v2 adds profiles and op_stats; v3 adds probes; v4 adds
// memory_profiles; v5 adds sweeps and sweep_points; v6 makes sure sweep_points has profile_id
// (plumb added it at 537b71d without a new version, so a v5 file may lack it); v7 adds each
// record's dtype and memory format, the run's precision notes, status 'unsupported', and the
// precision_comparisons table; v8 adds dist_worlds; v9 adds profile_graphs (the data-flow graph
// captured with a profile) and fused_kernel_checks; v10 adds serve_sessions, serve_measurements
// and serve_queries (plumb serve); v11 adds each record's engine and heap policy and
// tune_sessions (plumb tune); v12 adds a run's injected step delay (and marks memory passes
// run with --rss-check as heap return); v13 adds a profile pass's learning step time and how
// many of its kept steps replayed the learned calls; v14 adds untimed_precisions (precisions a
// quick characterization left untimed, with why). Older files are upgraded in place, in one
// transaction, the first time a writing plumb opens them.
inline constexpr int kSchemaVersion = 14;
inline constexpr int32_t kApplicationId = 0x504C4D42;  // "PLMB"

// What every stored record (run or profile) says about what was executed, and where.
struct StoredRecord {
  int64_t id = 0;
  std::string workload;
  std::string mode;  // "train" | "infer"
  int64_t batch = 0;
  int threads = 0;
  std::string device;
  std::string dtype = "fp32";  // precision and memory format it ran in (schema v7; fp32 before)
  std::string memory_format = "contiguous";
  std::string engine = "onednn";  // execution settings (schema v11; onednn and keep before)
  std::string heap = "keep";
  std::string tag;
  nlohmann::ordered_json config;  // resolved workload config
  platform::Environment environment;
};

// A run as read back from the store.
struct StoredRun : StoredRecord {
  int64_t warmup_iterations = 0;  // known even when samples are not loaded
  run::RunResult result;          // samples empty unless loaded with samples
};

// The group of the profile and memory passes of a sweep's points: this prefix and the sweep id.
inline constexpr const char* kSweepGroupPrefix = "sweep:";

// A profiling pass as read back from the store (operator rows included).
struct StoredProfile : StoredRecord {
  std::string group;  // shared by the passes of one `plumb profile` call (or one sweep)
  profile::ProfileResult result;
};

// A memory-profiling pass (`plumb memory`, one batch) as read back from the store.
struct StoredMemoryProfile : StoredRecord {
  std::string group;  // shared by the batches of one `plumb memory` call
  profile::MemoryProfileResult result;
};

// A sweep as registered in a database: its canonical spec identifies it (run::sweep_key).
struct StoredSweep {
  int64_t id = 0;
  std::string name;
  std::string workload;
  std::string spec;  // canonical JSON text
  std::string created_at;
  int64_t points = 0;  // in the full expansion (all shards)
};

// One finished sweep point.
struct SweepPointRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int64_t index = 0;  // in the sweep's expansion
  std::string key;    // "mode=train batch=64 nodes=32"
  std::string mode;
  nlohmann::ordered_json params;  // grid key -> value (numbers where the value is one)
  std::string status;             // ok, nan_loss, out_of_memory, error, timeout
  std::string message;
  int64_t run_id = 0;              // the run behind it (0: none)
  int64_t memory_id = 0;           // its memory pass when measured (0: none)
  int64_t profile_id = 0;          // its operator profile when measured (0: none)
  nlohmann::ordered_json metrics;  // examples_per_s, flops_per_s, flop_utilization ...
  double warmup_s = 0, measure_s = 0, wall_s = 0;
  std::string shard;  // "i/n"
  std::string finished_at;
};

struct MergeReport {
  int sweeps_added = 0;
  int points_added = 0;
  int points_already_present = 0;
};

// A machine-ceilings probe (`plumb probe`) as stored: the whole probe document (docs/json.md)
// plus what identifies the machine it describes.
struct StoredProbe {
  int64_t id = 0;
  std::string machine;  // platform::machine_key(): probes are reused only on the same machine
  std::string mode;     // "quick" | "thorough"
  std::string measured_at;
  double seconds = 0;  // how long the probe took
  nlohmann::ordered_json document;
  platform::Environment environment;
};

// A fused-kernel check (plumb analyze fusion) as stored: reused on the same machine for the same
// kind, shapes and threads.
struct StoredFusedKernelCheck {
  int64_t id = 0;
  std::string measured_at;
  std::string machine;  // platform::machine_key()
  profile::FusedKernelCheck check;
};

// What `plumb precision` found for one precision against fp32 (schema v7): the speed ratio of
// two stored runs and the output error on the same inputs and weights. The run fields are read
// from the run it describes.
struct PrecisionComparisonRecord {
  int64_t id = 0;
  int64_t run_id = 0;                                     // the precision's timed run
  int64_t reference_run_id = 0;                           // the fp32 run it is measured against
  std::string workload, mode, dtype, memory_format, tag;  // of run_id (read back only)
  int64_t batch = 0;
  int threads = 0;
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // throughput / fp32's, 95% interval
  bool error_measured = false;  // false: the workload exposes no output, or training
  run::OutputError error;       // against fp32 (meaningful only when error_measured)
  std::string note;             // "selective plan: layer1.0.conv1 kept in fp32", or why no error
};

// One world (worker count) of a `plumb dist` measurement (schema v8).
struct StoredDistWorld {
  int64_t id = 0;
  std::string started_at, workload, link = "none", tag;
  int workers = 1, threads_per_worker = 1;
  int64_t batch_per_worker = 0, bucket_bytes = 0, gradient_bytes = 0, peak_rss_bytes = 0;
  bool overlap = true;
  run::RunStatus status = run::RunStatus::kOk;
  std::string message, throughput_unit;
  // NaN when not measured (a failed world; efficiency without a one-worker world).
  double throughput = 0, step_mean_s = 0, step_ci_rel = 0, efficiency = 0;
  double compute_s = 0, exposed_s = 0, overlapped_s = 0;
  platform::Environment environment;
  nlohmann::ordered_json document;  // the world's whole result (docs/dist.md)
};

// One `plumb tune` call (schema v11): the headline columns, and the whole report as `plumb tune
// --json` prints it (docs/tuning.md). The stock and best runs are stored runs (ids in it).
struct StoredTuneSession {
  int64_t id = 0;
  std::string started_at, workload, mode, tag;
  int64_t batch = 0;
  int threads = 0;
  bool found = false;  // a best configuration within the bounds was found and measured
  double speedup = 0, speedup_low = 0, speedup_high = 0;  // best over stock; NaN when not found
  std::string best_command;
  platform::Environment environment;
  nlohmann::ordered_json document;
};

// One measurement of a `plumb serve` session (schema v10): a scenario served once, its summary;
// the per-query times are loaded apart (load_serve_queries).
struct StoredServeMeasurement {
  int64_t id = 0;
  std::string role;  // "single-stream", "offline", "server", "trial"
  // NaN when not defined (offered rate outside Server; a percentile the queries cannot bound).
  double offered_qps = 0, achieved_qps = 0;
  int64_t queries = 0, over_bound = 0, largest_batch = 0;
  double tail_s = 0, tail_low_s = 0, tail_high_s = 0;  // at the session's percentile
  double p50_s = 0, p90_s = 0, p99_s = 0, p999_s = 0;
  std::string verdict;  // the bound at the percentile: met, missed, undecided
  double queueing_share = 0, mean_batch = 0;
};

// One `plumb serve` invocation (schema v10).
struct StoredServeSession {
  int64_t id = 0;
  std::string started_at, workload, scenario, dtype, setting, tag, command;
  int threads = 1, workers = 1;
  double bound_s = 0, percentile = 0.99, max_wait_s = 0;
  int64_t max_batch = 1;
  bool fixed_batch = false, searched = false, reachable = true;
  double found_qps = 0, failed_qps = 0;  // NaN unless a search ran
  run::RunStatus status = run::RunStatus::kOk;
  std::string message;
  platform::Environment environment;
  nlohmann::ordered_json document;  // batch sizes, service times, defaults, notes (docs/serving.md)
  std::vector<StoredServeMeasurement> measurements;  // in the order served
};

// A precision a quick characterization did not time (schema v14): the CPU has no units for it
// and LibTorch would emulate it at a fraction of fp32's speed. Superseded by a run of the same
// item, which readers show instead.
struct UntimedPrecision {
  int64_t id = 0;
  std::string tag, workload, mode, dtype;
  std::string reason;   // one line: what the probe found and what the emulation costs
  std::string command;  // the command that measures it anyway
  std::string decided_at;
};

class ResultsStore {
 public:
  // Opens `path`, creating it (and the schema) when it does not exist and !read_only.
  // Throws UsageError with an actionable message when the path cannot be read or written,
  // the file is not a plumb database, or its schema is newer than this build.
  static std::unique_ptr<ResultsStore> open(const std::string& path, bool read_only = false);
  ~ResultsStore();

  // Stores one run atomically; returns its id.
  int64_t save_run(const run::RunOptions& options, const run::RunResult& result,
                   const platform::Environment& environment, const std::string& tag = "");

  // All runs in id order.
  std::vector<StoredRun> load_runs(bool with_samples) const;
  std::optional<StoredRun> load_run(int64_t id, bool with_samples) const;

  // Stores one profiling pass and its operator rows atomically; returns its id.
  int64_t save_profile(const run::RunOptions& options, const profile::ProfileResult& result,
                       const platform::Environment& environment, const std::string& group,
                       const std::string& tag = "");
  // Profiles in id order: all, or those of one group. Empty for a v1 file read unupgraded.
  std::vector<StoredProfile> load_profiles(const std::string& group = "") const;
  // The data-flow graph stored with a profile; none when the profile was stored before graph
  // capture existed (or by a pass that did not capture one).
  std::optional<profile::StepGraph> load_profile_graph(int64_t profile_id) const;

  // Stores a fused-kernel check; returns its id. All checks, oldest first.
  int64_t save_fused_kernel_check(const profile::FusedKernelCheck& check,
                                  const platform::Environment& environment);
  std::vector<StoredFusedKernelCheck> load_fused_kernel_checks() const;

  // Stores one memory-profiling pass atomically; returns its id.
  int64_t save_memory_profile(const run::RunOptions& options,
                              const profile::MemoryProfileResult& result,
                              const platform::Environment& environment, const std::string& group,
                              const std::string& tag = "");
  // In id order: all, or those of one group. Empty for a file older than v4 read unupgraded.
  std::vector<StoredMemoryProfile> load_memory_profiles(const std::string& group = "") const;

  // Registers a sweep, or returns the id of the same sweep already there. Throws UsageError
  // when the name is taken by a different spec (nothing is written then).
  int64_t register_sweep(const std::string& name, const std::string& workload,
                         const std::string& spec, int64_t points);
  std::vector<StoredSweep> load_sweeps() const;
  std::optional<StoredSweep> find_sweep(const std::string& name) const;
  std::vector<SweepPointRecord> load_sweep_points(int64_t sweep_id) const;
  // Stores a finished point atomically with its run, memory pass and profile (each optional
  // but the run): a point is either stored whole or not at all. The ids are filled in.
  int64_t save_sweep_point(SweepPointRecord& point, const run::RunOptions& options,
                           const run::RunResult& run, const profile::MemoryProfileResult* memory,
                           const profile::ProfileResult* profile,
                           const platform::Environment& environment, const std::string& tag);
  // Copies the sweeps of the database at `path` (their points, runs, samples, memory passes,
  // profiles)
  // into this one, in one transaction. Refuses, writing nothing, a file of another schema
  // version, or a sweep whose name here belongs to a different spec; points already here are
  // skipped.
  MergeReport merge_from(const std::string& path);

  // Stores one probe atomically (nothing of an interrupted probe is ever written: the caller
  // saves only a finished one); returns its id.
  int64_t save_probe(const StoredProbe& probe);
  // The newest probe of `machine`; with `thorough_only`, the newest thorough one. None for a
  // file without probes (or a v1/v2 file read unupgraded).
  std::optional<StoredProbe> latest_probe(const std::string& machine, bool thorough_only) const;
  std::vector<StoredProbe> load_probes() const;

  // Stores one world of a data-parallel measurement; returns its id. In id order when loaded
  // (empty for a file from before v8 read without upgrading).
  int64_t save_dist_world(const StoredDistWorld& world);
  std::vector<StoredDistWorld> load_dist_worlds() const;

  // Stores a serve session, its measurements and every query's times atomically, and sets the
  // ids of the session and its measurements. `queries[i]` belongs to `session.measurements[i]`.
  void save_serve_session(StoredServeSession& session,
                          const std::vector<std::vector<run::QueryTimes>>& queries);
  // In id order, with their measurements; empty for a file from before v10 read unupgraded.
  std::vector<StoredServeSession> load_serve_sessions() const;
  std::vector<run::QueryTimes> load_serve_queries(int64_t measurement_id) const;

  // Stores a tune session and sets its id; in id order when loaded (empty for a file from
  // before v11 read without upgrading).
  void save_tune_session(StoredTuneSession& session);
  std::vector<StoredTuneSession> load_tune_sessions() const;

  // Stores one precision-vs-fp32 finding; both runs must be stored already. Returns its id.
  int64_t save_precision_comparison(const PrecisionComparisonRecord& record);
  // In id order; empty for a file older than v7 read unupgraded.
  std::vector<PrecisionComparisonRecord> load_precision_comparisons() const;

  // Records (or replaces, per tag, workload, mode and dtype) a precision left untimed.
  void save_untimed_precision(const UntimedPrecision& untimed);
  // In id order; empty for a file older than v14 read unupgraded.
  std::vector<UntimedPrecision> load_untimed_precisions() const;

  const std::string& path() const { return path_; }

 private:
  ResultsStore(std::string path, std::unique_ptr<SQLite::Database> db);
  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
};

// One run as the JSON object that `plumb run --json` prints and `plumb export` lists
// (fields documented in docs/json.md); samples and warm-up samples only when asked for.
nlohmann::ordered_json run_json(const StoredRun& run, bool with_samples);

// One serve session as `plumb serve --json` prints it (docs/json.md): the setting, the headline
// figures of its scenario (found rate, ceiling, floor), the batching and every measurement.
nlohmann::ordered_json serve_session_json(const StoredServeSession& session);
// A session's measurement of one role ("single-stream", "offline", "server"), or null.
const StoredServeMeasurement* serve_measurement(const StoredServeSession& session,
                                                const std::string& role);
// The measurement behind the session's Server figure: the trial at the found rate of a search,
// or the run at the given rate; null when there is none.
const StoredServeMeasurement* serve_found_measurement(const StoredServeSession& session);
// True when no rate tried above the found one missed the bound: the upper end of the search's
// bracket is then the Offline ceiling (no rate beyond it can be sustained), not a measured miss.
bool serve_bracket_is_ceiling(const StoredServeSession& session);

// One probe as `plumb probe --json` prints it and `plumb export` lists it: probe_id,
// machine_key, the probe document's fields (docs/json.md), and the environment.
nlohmann::ordered_json probe_json(const StoredProbe& probe);

// One memory-profiling pass as `plumb memory --json` prints it per batch and `plumb export`
// lists it (docs/json.md): the record, per-category peaks at the top level, total_peak, and
// the breakdown's details.
nlohmann::ordered_json memory_profile_json(const StoredMemoryProfile& memory);

// plumb export: the whole store as one JSON document (documented in docs/json.md).
void export_json(const ResultsStore& store, std::ostream& out);
// plumb export --format csv: "runs" (one row per run with summary + environment columns) or
// "samples" (run_id, phase, index, seconds).
void export_csv(const ResultsStore& store, const std::string& table, std::ostream& out);

}  // namespace plumb::store
