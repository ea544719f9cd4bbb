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
#include <string>
#include <vector>

// The records of each kind live in headers of their own (run_record.h, profile_records.h, ...),
// which a file includes for the kinds it reads or writes: the facade names the types it moves
// without their definitions, so a new kind of record recompiles only its users.

namespace SQLite {
class Database;
}

namespace plumb::platform {
struct Environment;
}
namespace plumb::profile {
struct FusedKernelCheck;
struct MemoryProfileResult;
struct ProfileResult;
struct StepGraph;
}  // namespace plumb::profile
namespace plumb::run {
struct IterationRecord;
struct QueryTimes;
struct RequestTrace;
struct RunOptions;
struct RunResult;
struct TokenServeTrace;
}  // namespace plumb::run

namespace plumb::store {

struct MergeReport;
struct PrecisionComparisonRecord;
struct StoredDistWorld;
struct StoredFusedKernelCheck;
struct StoredMemoryProfile;
struct StoredProbe;
struct StoredProfile;
struct StoredRun;
struct StoredServeSession;
struct StoredSweep;
struct StoredTuneSession;
struct SweepPointRecord;
struct UntimedPrecision;

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
// quick characterization left untimed, with why); v15 adds a run's generation phases; v16 adds
// token-level serving: the serve session's kind, scheduler and TPOT bound, the measurements'
// TTFT/TPOT/goodput columns, serve_requests and serve_iterations. Older files are upgraded in
// place, in one transaction, the first time a writing plumb opens them.
inline constexpr int kSchemaVersion = 16;
inline constexpr int32_t kApplicationId = 0x504C4D42;  // "PLMB"

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
  // Stores a token-level serve session (session.kind "token"), its measurements, and every
  // request and engine iteration of each (`traces[i]` belongs to `session.measurements[i]`)
  // atomically, and sets the ids.
  void save_token_serve_session(StoredServeSession& session,
                                const std::vector<run::TokenServeTrace>& traces);
  // A token-level measurement's requests in arrival order (token_s empty) and its iterations.
  std::vector<run::RequestTrace> load_serve_requests(int64_t measurement_id) const;
  std::vector<run::IterationRecord> load_serve_iterations(int64_t measurement_id) const;

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

}  // namespace plumb::store
