// Tests of the SQLite results store: round trips, exports, refusing files that are not
// plumb's (leaving them untouched), and one-transaction-per-run atomicity.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include "fresh_process.h"
#include "historical_store.h"
#include "plumb/core/errors.h"
#include "plumb/store/dist_record.h"
#include "plumb/store/probe_record.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/record_json.h"
#include "plumb/store/results_store.h"
#include "plumb/store/run_record.h"
#include "plumb/store/sweep_records.h"
#include "stored_profile_util.h"
#include "usage_error_check.h"

namespace plumb::store {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A fresh directory per test, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "plumb_store_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);  // a test may have made it read-only
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // The directory's entries, to show that a refusal created no side files (-wal, -shm).
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename());
    return names;
  }

  fs::path dir_;
};

run::RunOptions make_options(int64_t batch = 32) {
  run::RunOptions o;
  o.workload = "fathom/autoenc";
  o.mode = Mode::kInfer;
  o.config.add_int("batch", batch, "mini-batch size")
      .add_double("learning_rate", 0.125, "step size")
      .add_bool("bias", true, "use biases")
      .add_choice("dtype", "float32", {"float32", "bfloat16"}, "element type");
  o.threads = 4;
  o.device = "cpu";
  return o;
}

run::RunResult make_result() {
  run::RunResult r;
  r.status = run::RunStatus::kNanLoss;
  r.message = "loss became NaN at step 7";
  r.command = "plumb run fathom/autoenc --mode infer --threads 4 -c batch=32";
  r.started_at = "2024-05-01T12:34:56Z";
  r.wall_seconds = 3.5;
  r.warmup_s = {0.5, 0.25, 0.125};
  r.samples_s = {0.1, 0.11, 0.09, 0.1};
  r.steady_detected = true;
  r.target_met = false;
  run::Summary& s = r.step_time;
  s.n = 4;
  s.mean = 0.1;
  s.median = 0.1;
  s.min = 0.09;
  s.p5 = 0.0915;
  s.p95 = 0.1085;
  s.max = 0.11;
  s.p50 = 0.1;
  s.p90 = 0.107;
  s.p99 = 0.1097;
  s.stddev = kNaN;  // undefined statistics must survive as NaN
  s.cv = kNaN;
  s.ci_half_width = 0.0123;
  s.ci_rel = kNaN;
  r.units_per_step = 32;
  r.throughput_unit = "images/s";
  r.throughput = 320;
  r.last_loss = kNaN;
  r.cpu_utilization = 0.93;
  r.warnings = {"load average 3.2 > 1", "governor 'powersave'"};
  return r;
}

platform::Environment make_environment() {
  platform::Environment e;
  e.host = "bench-01";
  e.os = "Linux 6.1.0 x86_64";
  e.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  e.isa = {"avx2", "avx512f", "amx_tile"};
  e.logical_cores = 112;
  e.threads_used = 4;
  e.load_average_1m = 0.42;
  e.cpu_governor = "performance";
  e.libtorch_version = "1.13.1";
  e.blas = "libopenblas.so.0";
  e.blas_optimized = true;
  e.onednn_version = "3.0.0";
  e.plumb_version = "0.1.0";
  e.git_commit = "abc1234-dirty";
  e.compiler = "GNU 12.2.0";
  e.device = "cpu";
  e.warnings = {"turbo boost on"};
  return e;
}

// A store at `db` holding one run, then given `sql` through a raw connection (a damaged or a
// newer file).
std::string store_with_one_run(const std::string& db, const std::string& sql = "") {
  ResultsStore::open(db)->save_run(make_options(), make_result(), make_environment());
  if (!sql.empty()) SQLite::Database(db, SQLite::OPEN_READWRITE).exec(sql);
  return db;
}

int user_version(const std::string& db) {
  return SQLite::Database(db, SQLite::OPEN_READONLY).execAndGet("PRAGMA user_version").getInt();
}

using testing::historical_schema;
using testing::old_store;

// Same value, where NaN equals NaN.
void expect_same(double expected, double actual, const char* what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << " = " << actual;
  } else {
    EXPECT_EQ(expected, actual) << what;
  }
}

// Every field, through the JSON that stores and prints an environment (NaN dumps as null).
void expect_same_environment(const platform::Environment& a, const platform::Environment& b) {
  EXPECT_EQ(platform::to_json(a).dump(), platform::to_json(b).dump());
}

// The file's bytes and modification time, to prove a refused file was not touched.
struct FileSnapshot {
  std::string bytes;
  int64_t mtime_ns = 0;
  bool operator==(const FileSnapshot& o) const {
    return bytes == o.bytes && mtime_ns == o.mtime_ns;
  }
};

FileSnapshot snapshot(const std::string& path) {
  FileSnapshot s;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  s.bytes = buf.str();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Opening must throw UsageError whose message names the path (one actionable line).
std::string expect_refused(const std::string& path, bool read_only) {
  const std::string msg = expect_usage_error([&] { ResultsStore::open(path, read_only); }, {path});
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg;
}

TEST_F(StoreTest, RoundTripKeepsEveryField) {
  const std::string db = file("plumb.db");
  const run::RunOptions options = make_options();
  const run::RunResult result = make_result();
  const platform::Environment env = make_environment();
  int64_t id = 0;
  {
    auto store = ResultsStore::open(db);
    id = store->save_run(options, result, env, "baseline");
    EXPECT_GT(id, 0);
  }
  auto store = ResultsStore::open(db, /*read_only=*/true);
  std::optional<StoredRun> loaded = store->load_run(id, /*with_samples=*/true);
  ASSERT_TRUE(loaded.has_value());
  const StoredRun& r = *loaded;
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.workload, "fathom/autoenc");
  EXPECT_EQ(r.mode, "infer");
  EXPECT_EQ(r.batch, 32);
  EXPECT_EQ(r.threads, 4);
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.tag, "baseline");
  EXPECT_EQ(r.config, options.config.to_json());
  EXPECT_EQ(r.config.dump(), options.config.to_json().dump());  // key order kept

  const run::RunResult& got = r.result;
  EXPECT_EQ(got.status, result.status);
  EXPECT_EQ(got.message, result.message);
  EXPECT_EQ(got.command, result.command);
  EXPECT_EQ(got.started_at, result.started_at);
  expect_same(result.wall_seconds, got.wall_seconds, "wall_seconds");
  EXPECT_EQ(got.warmup_s, result.warmup_s);
  EXPECT_EQ(got.samples_s, result.samples_s);
  EXPECT_EQ(got.steady_detected, result.steady_detected);
  EXPECT_EQ(got.target_met, result.target_met);
  expect_same(result.units_per_step, got.units_per_step, "units_per_step");
  EXPECT_EQ(got.throughput_unit, result.throughput_unit);
  expect_same(result.throughput, got.throughput, "throughput");
  expect_same(result.last_loss, got.last_loss, "last_loss");
  expect_same(result.cpu_utilization, got.cpu_utilization, "cpu_utilization");
  EXPECT_EQ(got.warnings, result.warnings);

  const run::Summary& a = result.step_time;
  const run::Summary& b = got.step_time;
  EXPECT_EQ(a.n, b.n);
  for (const auto& statistic : run::kSummaryStatistics)
    expect_same(a.*statistic.value, b.*statistic.value, statistic.name);

  expect_same_environment(env, r.environment);

  // Without samples the vectors stay empty, everything else is the same.
  std::optional<StoredRun> lean = store->load_run(id, /*with_samples=*/false);
  ASSERT_TRUE(lean.has_value());
  EXPECT_TRUE(lean->result.samples_s.empty());
  EXPECT_TRUE(lean->result.warmup_s.empty());
  EXPECT_EQ(lean->result.step_time.n, 4u);
  EXPECT_FALSE(store->load_run(id + 100, true).has_value());
}

TEST_F(StoreTest, NewFileIsStampedAsPlumbInWalMode) {
  const std::string db = file("plumb.db");
  ResultsStore::open(db).reset();
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA application_id").getInt(), kApplicationId);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_TRUE(raw.tableExists("environments"));
  EXPECT_TRUE(raw.tableExists("runs"));
  EXPECT_TRUE(raw.tableExists("samples"));
}

TEST_F(StoreTest, TwoRunsKeepIdsAndOrder) {
  const std::string db = file("plumb.db");
  int64_t first = 0, second = 0;
  {
    auto store = ResultsStore::open(db);
    first = store->save_run(make_options(16), make_result(), make_environment(), "a");
    second = store->save_run(make_options(64), make_result(), make_environment(), "b");
  }
  EXPECT_LT(first, second);
  auto store = ResultsStore::open(db);  // reopening an existing store for writing
  std::vector<StoredRun> runs = store->load_runs(/*with_samples=*/false);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, first);
  EXPECT_EQ(runs[0].batch, 16);
  EXPECT_EQ(runs[0].tag, "a");
  EXPECT_EQ(runs[1].id, second);
  EXPECT_EQ(runs[1].batch, 64);
  EXPECT_EQ(runs[1].tag, "b");
  EXPECT_EQ(store->load_run(second, true)->batch, 64);

  // An identical environment is stored once and shared.
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM environments").getInt(), 1);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM samples").getInt(), 14);
}

TEST_F(StoreTest, ReaderSeesRunsOfAnOpenWriter) {
  // WAL: `plumb report` can read while a sweep keeps the store open for writing.
  const std::string db = file("odd name?#%.db");  // also exercises URI escaping in the probe
  auto writer = ResultsStore::open(db);
  writer->save_run(make_options(), make_result(), make_environment());
  auto reader = ResultsStore::open(db, /*read_only=*/true);
  EXPECT_EQ(reader->load_runs(false).size(), 1u);
  auto second_writer = ResultsStore::open(db);
  second_writer->save_run(make_options(), make_result(), make_environment());
  writer->save_run(make_options(), make_result(), make_environment());
  EXPECT_EQ(reader->load_runs(true).size(), 3u);
}

TEST_F(StoreTest, ExportJsonHasDocumentedFields) {
  auto store = ResultsStore::open(file("plumb.db"));
  const int64_t id = store->save_run(make_options(), make_result(), make_environment(), "t");
  std::ostringstream out;
  export_json(*store, out);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc.at("plumb_schema_version"), kSchemaVersion);
  ASSERT_EQ(doc.at("runs").size(), 1u);

  const nlohmann::ordered_json run = nlohmann::ordered_json::parse(out.str())["runs"][0];
  std::vector<std::string> keys;
  for (const auto& item : run.items()) keys.push_back(item.key());
  const std::vector<std::string> documented = {"id",
                                               "workload",
                                               "mode",
                                               "batch",
                                               "threads",
                                               "device",
                                               "dtype",
                                               "memory_format",
                                               "engine",
                                               "heap",
                                               "tag",
                                               "status",
                                               "message",
                                               "command",
                                               "started_at",
                                               "throughput",
                                               "throughput_unit",
                                               "step_time",
                                               "latency",
                                               "warmup_iterations",
                                               "steady_detected",
                                               "target_met",
                                               "cpu_utilization",
                                               "config",
                                               "environment",
                                               "warnings",
                                               "precision_notes",
                                               "injected_delay_ms",
                                               "samples",
                                               "warmup_samples"};
  EXPECT_EQ(keys, documented);

  EXPECT_EQ(run["id"], id);
  EXPECT_EQ(run["status"], "nan_loss");
  EXPECT_EQ(run["batch"], 32);
  EXPECT_EQ(run["warmup_iterations"], 3);
  const auto& st = run["step_time"];
  for (const char* k : {"mean", "median", "min", "p5", "p95", "max", "stddev", "cv", "ci_rel",
                        "ci_half_width", "n"})
    EXPECT_TRUE(st.contains(k)) << k;
  EXPECT_EQ(st["n"], 4);
  EXPECT_DOUBLE_EQ(st["mean"].get<double>(), 0.1);
  EXPECT_TRUE(st["stddev"].is_null());  // NaN -> null
  EXPECT_TRUE(st["ci_rel"].is_null());
  EXPECT_DOUBLE_EQ(run["latency"]["p90"].get<double>(), 0.107);
  EXPECT_EQ(run["config"]["dtype"], "float32");
  EXPECT_EQ(run["environment"]["host"], "bench-01");
  EXPECT_EQ(run["samples"].size(), 4u);
  EXPECT_EQ(run["warmup_samples"].size(), 3u);
  EXPECT_EQ(run["warnings"].size(), 2u);
}

TEST_F(StoreTest, ExportCsvQuotesFields) {
  auto store = ResultsStore::open(file("plumb.db"));
  store->save_run(make_options(), make_result(), make_environment(), "fast, \"tuned\"");
  std::ostringstream runs;
  export_csv(*store, "runs", runs);
  std::istringstream lines(runs.str());
  std::string header, row, extra;
  ASSERT_TRUE(std::getline(lines, header));
  ASSERT_TRUE(std::getline(lines, row));
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header.rfind("id,workload,mode,batch,threads,device,tag,status,throughput,", 0), 0u);
  EXPECT_NE(row.find(",\"fast, \"\"tuned\"\"\","), std::string::npos) << row;
  EXPECT_NE(row.find("Intel(R) Xeon(R) Platinum 8480+"), std::string::npos);
  // NaN fields are empty: stddev, cv and ci_rel follow max (0.11).
  EXPECT_NE(row.find(",0.11,,,,0.0123,4,"), std::string::npos) << row;

  std::ostringstream samples;
  export_csv(*store, "samples", samples);
  EXPECT_EQ(samples.str(),
            "run_id,phase,index,seconds\n"
            "1,warmup,0,0.5\n1,warmup,1,0.25\n1,warmup,2,0.125\n"
            "1,measure,0,0.1\n1,measure,1,0.11\n1,measure,2,0.09\n1,measure,3,0.1\n");

  std::ostringstream ignored;
  expect_usage_error([&] { export_csv(*store, "sampels", ignored); }, {"runs, samples"});
}

TEST_F(StoreTest, EmptyFileIsInitialised) {
  const std::string db = file("empty.db");
  write_text(db, "");
  auto store = ResultsStore::open(db);
  EXPECT_GT(store->save_run(make_options(), make_result(), make_environment()), 0);
}

TEST_F(StoreTest, RefusesTextFileAndLeavesItUntouched) {
  for (const std::string& text : {std::string("hello\n"), std::string(5000, 'x')}) {
    const std::string path = file("notes.txt");
    write_text(path, text);
    const FileSnapshot before = snapshot(path);
    const auto entries = listing();
    const std::string msg = expect_refused(path, false);
    EXPECT_NE(msg.find("not an SQLite database"), std::string::npos) << msg;
    EXPECT_TRUE(snapshot(path) == before);
    EXPECT_EQ(listing(), entries);
    expect_refused(path, true);
    EXPECT_TRUE(snapshot(path) == before);
  }
}

TEST_F(StoreTest, RefusesForeignSqliteAndLeavesItUntouched) {
  const std::string with_table = file("other.sqlite");
  {
    SQLite::Database other(with_table, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada')");
  }
  const std::string other_app = file("other_app.sqlite");
  {
    SQLite::Database other(other_app, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec("PRAGMA application_id = 1234");
  }
  const std::string wal = file("other_wal.sqlite");
  {
    SQLite::Database other(wal, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  }
  for (const std::string& path : {with_table, other_app, wal}) {
    const FileSnapshot before = snapshot(path);
    const auto entries = listing();
    const std::string msg = expect_refused(path, false);
    EXPECT_NE(msg.find("does not belong to plumb"), std::string::npos) << msg;
    EXPECT_TRUE(snapshot(path) == before) << path;
    EXPECT_EQ(listing(), entries);
  }
}

// A damaged record (here a JSON column no longer JSON, as a bit flip or a foreign writer leaves
// it; found by fuzz_store_open) is refused as one UsageError naming the file and what was being
// read, never a raw library exception; the intact kinds still load.
TEST_F(StoreTest, DamagedRecordsAreRefusedNamingTheFileAndWhatWasRead) {
  const std::string db =
      store_with_one_run(file("damaged.db"), "UPDATE runs SET warnings_json = '[\"unterminated'");
  for (const bool read_only : {true, false}) {
    auto store = ResultsStore::open(db, read_only);
    expect_usage_error([&] { store->load_runs(false); },
                       {"cannot read the runs in results database '" + db + "'", "damaged"});
    EXPECT_TRUE(store->load_sweeps().empty());
  }
}

// A stored dtype parses back to the dtype table's enum: a name the table lacks is a damaged
// record, refused the same way.
TEST_F(StoreTest, AStoredDtypeOutsideTheTableIsADamagedRecord) {
  const std::string db = store_with_one_run(file("fp8.db"), "UPDATE runs SET dtype = 'fp8'");
  auto store = ResultsStore::open(db, /*read_only=*/true);
  expect_usage_error([&] { store->load_runs(false); },
                     {"'fp8' is no dtype plumb knows", "damaged"});
}

// Schema 12 stores what a record did on purpose as fields: the testing aid's step delay (a
// column) and a memory pass's --rss-check (its heap policy, return: the same mechanism). A
// file of schema 11 had them only as a run's warning and a pass's command line: read without
// upgrading and after the upgrade, they come back the same.
TEST_F(StoreTest, DeliberateSettingsAreStoredAndRecoveredFromOlderFiles) {
  const std::string today = file("today.db");
  run::RunResult slowed = make_result();
  slowed.injected_delay_ms = 2.5;
  slowed.warnings = {
      "PLUMB_INJECT_STEP_DELAY_MS adds 2.5 ms to every step: a testing aid (docs/compare.md), "
      "these timings are not the workload's"};
  profile::MemoryProfileResult checked;
  checked.command = "plumb memory cnn --mode train --batch 4 --threads 1 --seed 0 --rss-check";
  profile::MemoryProfileResult plain;
  plain.command = "plumb memory cnn --mode train --batch 4 --threads 1 --seed 0";
  {
    auto store = ResultsStore::open(today);
    store->save_run(make_options(), slowed, make_environment());
    store->save_run(make_options(), make_result(), make_environment());
    // As schema 11 stored a --rss-check pass: heap keep, the flag in its command.
    store->save_memory_profile(make_options(), checked, make_environment(), "g");
    store->save_memory_profile(make_options(), plain, make_environment(), "g");
  }
  const auto expect_fields = [&](const ResultsStore& store, const std::string& when) {
    const auto runs = store.load_runs(false);
    ASSERT_EQ(runs.size(), 2u) << when;
    EXPECT_DOUBLE_EQ(runs[0].result.injected_delay_ms, 2.5) << when;
    EXPECT_DOUBLE_EQ(runs[1].result.injected_delay_ms, 0) << when;
    EXPECT_EQ(run_json(runs[0], false).at("injected_delay_ms").get<double>(), 2.5) << when;
    const auto passes = store.load_memory_profiles();
    ASSERT_EQ(passes.size(), 2u) << when;
    EXPECT_EQ(passes[0].heap, "return") << when;
    EXPECT_EQ(passes[1].heap, "keep") << when;
  };
  // What schema 11 had: no delay column.
  const std::string db = old_store(file("v11.db"), "v11", today);
  expect_fields(*ResultsStore::open(db, /*read_only=*/true), "schema 11 read as it is");
  expect_fields(*ResultsStore::open(db), "schema 11 upgraded");
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion);
  EXPECT_DOUBLE_EQ(
      raw.execAndGet("SELECT injected_delay_ms FROM runs ORDER BY id LIMIT 1").getDouble(), 2.5);
  EXPECT_EQ(
      raw.execAndGet("SELECT group_concat(heap) FROM memory_profiles ORDER BY id").getString(),
      "return,keep");
  // Stored by this plumb: the delay as it was measured, the heap policy as it ran.
  run::RunOptions returning = make_options();
  returning.heap = HeapPolicy::kReturn;
  auto store = ResultsStore::open(db);
  const int64_t id = store->save_run(make_options(), slowed, make_environment());
  store->save_memory_profile(returning, plain, make_environment(), "h");
  EXPECT_DOUBLE_EQ(store->load_run(id, false)->result.injected_delay_ms, 2.5);
  EXPECT_EQ(store->load_memory_profiles("h").front().heap, "return");
}

// What an upgraded file must share with a new one, a line each: its identity; every table's
// columns (name, declared type, NOT NULL, default, primary key), its indexes and unique
// constraints (columns, uniqueness) and the value lists of its CHECK constraints (the statuses).
std::set<std::string> schema_description(const std::string& db) {
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  std::set<std::string> out = {
      "application_id " + std::to_string(d.execAndGet("PRAGMA application_id").getInt()),
      "user_version " + std::to_string(d.execAndGet("PRAGMA user_version").getInt())};
  SQLite::Statement tables(d,
                           "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT "
                           "LIKE 'sqlite_%'");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    out.insert(table + ": table");
    SQLite::Statement columns(d,
                              "SELECT name, type, \"notnull\", coalesce(dflt_value, 'NULL'), pk "
                              "FROM pragma_table_info(?)");
    columns.bind(1, table);
    while (columns.executeStep())
      out.insert(table + ": column " + columns.getColumn(0).getString() + " " +
                 columns.getColumn(1).getString() + " notnull=" + columns.getColumn(2).getString() +
                 " default=" + columns.getColumn(3).getString() +
                 " pk=" + columns.getColumn(4).getString());
    SQLite::Statement indexes(d, "SELECT name, \"unique\" FROM pragma_index_list(?)");
    indexes.bind(1, table);
    while (indexes.executeStep()) {
      SQLite::Statement info(d,
                             "SELECT group_concat(name, ',') FROM (SELECT name FROM "
                             "pragma_index_info(?) ORDER BY seqno)");
      info.bind(1, indexes.getColumn(0).getString());
      info.executeStep();
      out.insert(table + (indexes.getColumn(1).getInt() ? ": unique (" : ": index (") +
                 info.getColumn(0).getString() + ")");
    }
    const std::string sql = tables.getColumn(1).getString();
    for (auto at = sql.find(" IN ("); at != std::string::npos; at = sql.find(" IN (", at + 1))
      out.insert(table + ": check" + sql.substr(at, sql.find(')', at) - at + 1));
  }
  return out;
}

// The lines of `a` that `b` lacks.
std::string lines_missing(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const auto& line : a)
    if (b.count(line) == 0) out += "\n  " + line;
  return out;
}

// Every older schema, as the plumb of that version created it, upgrades in place to exactly
// the schema a new file gets, keeping its run; read-only, it is read as it is and not changed.
TEST_F(StoreTest, EveryOlderSchemaUpgradesToTheSchemaOfANewFile) {
  const std::string today = store_with_one_run(file("today.db"));
  ResultsStore::open(file("new.db")).reset();
  const std::set<std::string> expected = schema_description(file("new.db"));
  std::vector<std::string> names = {"v5-before-point-profiles"};
  for (int version = 1; version < kSchemaVersion; ++version)
    names.push_back("v" + std::to_string(version));
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    ASSERT_FALSE(historical_schema(name).empty())
        << "no tests/store_schemas/" << name
        << ".sql: add the version's last commit to derive_from_history.py and run it";
    const std::string db = old_store(file(name + ".db"), name, today);
    const int version = user_version(db);
    {
      std::ostringstream exported;
      export_json(*ResultsStore::open(db, /*read_only=*/true), exported);
      EXPECT_NE(exported.str().find("\"runs\""), std::string::npos);
    }
    EXPECT_EQ(user_version(db), version) << "reading changed nothing";
    EXPECT_EQ(ResultsStore::open(db)->load_runs(true).size(), 1u);
    const std::set<std::string> upgraded = schema_description(db);
    EXPECT_EQ(lines_missing(expected, upgraded), "") << "what a new file has and the upgrade lacks";
    EXPECT_EQ(lines_missing(upgraded, expected), "") << "what the upgrade has and a new file lacks";
    SQLite::Database raw(db, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
    EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM pragma_foreign_key_check").getInt(), 0);
  }
}

TEST_F(StoreTest, OlderSchemasAreUpgradedInPlaceKeepingRuns) {
  const std::string today = store_with_one_run(file("today.db"));
  for (int version : {1, 2, 3, 4, 5}) {
    const std::string name = "v" + std::to_string(version);
    const std::string db = old_store(file(name + ".db"), name, today);
    // Read-only: readable as it is, without what it does not have.
    EXPECT_TRUE(ResultsStore::open(db, /*read_only=*/true)->load_sweeps().empty());
    auto store = ResultsStore::open(db);
    EXPECT_EQ(store->load_runs(false).size(), 1u) << "v" << version;
    EXPECT_TRUE(store->load_memory_profiles().empty());
    EXPECT_EQ(store->register_sweep("s", "w", "{}", 1), 1);
    StoredProbe probe;
    probe.machine = "m";
    probe.mode = "quick";
    probe.measured_at = "2026-01-01T00:00:00Z";
    probe.seconds = 1.5;
    probe.document = {{"peaks", {{"fp32", {{"instruction_flops", 1e11}}}}}};
    probe.environment = make_environment();
    const int64_t id = store->save_probe(probe);
    const auto latest = store->latest_probe("m", /*thorough_only=*/false);
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->id, id);
    EXPECT_EQ(latest->document, probe.document);
    EXPECT_FALSE(store->latest_probe("m", /*thorough_only=*/true).has_value());
    EXPECT_FALSE(store->latest_probe("other machine", false).has_value());
    EXPECT_EQ(user_version(db), kSchemaVersion);
  }
}

// plumb added sweep_points.profile_id at 537b71d without a new schema version, so a v5 file
// may lack it: read as it is (no profile), and upgraded to v6 by the first writing open.
TEST_F(StoreTest, SchemaFiveWithoutPointProfilesIsReadAndUpgraded) {
  const std::string today = file("today.db");
  const int64_t sweep_id = ResultsStore::open(today)->register_sweep("s", "w", "{}", 1);
  const std::string db = old_store(file("v5.db"), "v5-before-point-profiles", today);
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    raw.exec(
        "INSERT INTO sweep_points (sweep_id, point_index, point_key, mode, params_json, status, "
        "message, metrics_json, warmup_s, measure_s, wall_s, shard, finished_at) VALUES (" +
        std::to_string(sweep_id) +
        ", 0, 'batch=1', 'train', '{}', 'ok', '', '{}', 0.5, 1.5, 2.5, '', "
        "'2026-01-01T00:00:00Z')");
  }
  const auto read_point = [&](bool read_only) {
    const auto points = ResultsStore::open(db, read_only)->load_sweep_points(sweep_id);
    EXPECT_EQ(points.size(), 1u);
    if (!points.empty()) {
      EXPECT_EQ(points[0].key, "batch=1");
      EXPECT_EQ(points[0].profile_id, 0);
      EXPECT_DOUBLE_EQ(points[0].wall_s, 2.5);
    }
  };
  read_point(/*read_only=*/true);
  // A shard written by such a plumb merges as it is.
  {
    auto into = ResultsStore::open(file("merged.db"));
    EXPECT_EQ(into->merge_from(db).sweeps_added, 1);
    const auto merged = into->load_sweep_points(into->find_sweep("s")->id);
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].key, "batch=1");
    EXPECT_EQ(merged[0].profile_id, 0);
  }
  {
    SQLite::Database raw(db, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), 5);  // reading changed nothing
  }
  read_point(/*read_only=*/false);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM pragma_table_info('sweep_points') WHERE name = "
                           "'profile_id'")
                .getInt(),
            1);
}

TEST_F(StoreTest, RefusesNewerSchemaAndLeavesItUntouched) {
  const std::string db = store_with_one_run(
      file("plumb.db"), "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  const FileSnapshot before = snapshot(db);
  const auto entries = listing();
  for (bool read_only : {false, true}) {
    const std::string msg = expect_refused(db, read_only);
    EXPECT_NE(msg.find("newer plumb"), std::string::npos) << msg;
    EXPECT_NE(msg.find("upgrade plumb or use another --db"), std::string::npos) << msg;
    EXPECT_TRUE(snapshot(db) == before);
    EXPECT_EQ(listing(), entries);
  }
}

TEST_F(StoreTest, RefusesMissingDirectory) {
  const std::string path = file("no/such/dir/plumb.db");
  const std::string msg = expect_refused(path, false);
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(file("no")));
}

TEST_F(StoreTest, RefusesDirectoryPath) {
  fs::create_directory(file("results"));
  const std::string msg = expect_refused(file("results"), false);
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
}

TEST_F(StoreTest, RefusesPathThatCannotBeCreated) {
  // /proc refuses new files even for root, so this is meaningful however the tests run.
  const std::string path = "/proc/plumb_store_test.db";
  expect_refused(path, false);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(StoreTest, RefusesReadOnlyFileForWriting) {
  // Root ignores file permissions: as root, the test runs again as an unprivileged user.
  if (::geteuid() == 0) PLUMB_RUN_IN_FRESH_PROCESS(testing::Privileges::kDropRoot);
  const std::string db = file("plumb.db");
  ResultsStore::open(db).reset();
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const FileSnapshot before = snapshot(db);
  const std::string msg = expect_refused(db, false);
  EXPECT_NE(msg.find("cannot write"), std::string::npos) << msg;
  EXPECT_TRUE(snapshot(db) == before);
  EXPECT_NO_THROW(ResultsStore::open(db, /*read_only=*/true));
}

TEST_F(StoreTest, ReadsStoreInReadOnlyDirectory) {
  // Results shared read-only: SQLite cannot create the '-shm' file a WAL reader needs there.
  // Root ignores directory permissions: as root, the test runs again as an unprivileged user.
  if (::geteuid() == 0) PLUMB_RUN_IN_FRESH_PROCESS(testing::Privileges::kDropRoot);
  const std::string db = file("plumb.db");
  ResultsStore::open(db)->save_run(make_options(), make_result(), make_environment());
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string msg = expect_refused(db, false);
  EXPECT_NE(msg.find("cannot write"), std::string::npos) << msg;
  std::size_t loaded = 0;
  EXPECT_NO_THROW(loaded = ResultsStore::open(db, /*read_only=*/true)->load_runs(true).size());
  EXPECT_EQ(loaded, 1u);
}

TEST_F(StoreTest, ReadOnlyOpenNeedsAnExistingStore) {
  const std::string missing = file("missing.db");
  const std::string msg = expect_refused(missing, true);
  EXPECT_NE(msg.find("no results database"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(missing));

  const std::string empty = file("empty.db");
  write_text(empty, "");
  expect_refused(empty, true);
  EXPECT_EQ(fs::file_size(empty), 0u);
}

TEST_F(StoreTest, ReadOnlyStoreRefusesToSave) {
  const std::string db = file("plumb.db");
  ResultsStore::open(db).reset();
  auto store = ResultsStore::open(db, /*read_only=*/true);
  EXPECT_THROW(store->save_run(make_options(), make_result(), make_environment()), UsageError);
  EXPECT_TRUE(store->load_runs(false).empty());
}

TEST_F(StoreTest, FailedSaveLeavesNothingBehind) {
  // A trigger added through a second connection makes the third sample insert fail, after
  // the environment row, the run row and two samples were written: all must roll back.
  const std::string db = file("plumb.db");
  auto store = ResultsStore::open(db);
  const int64_t kept = store->save_run(make_options(), make_result(), make_environment(), "ok");
  {
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    raw.exec(
        "CREATE TRIGGER fail_third_sample BEFORE INSERT ON samples WHEN NEW.idx = 2 "
        "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  }
  platform::Environment other_env = make_environment();
  other_env.host = "bench-02";  // forces a new environment row inside the transaction
  EXPECT_THROW(store->save_run(make_options(), make_result(), other_env, "doomed"),
               std::runtime_error);

  std::vector<StoredRun> runs = store->load_runs(true);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, kept);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM environments").getInt(), 1);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM samples").getInt(), 7);
}

TEST(EnvironmentJson, RoundTripAndDefaults) {
  const platform::Environment env = make_environment();
  const nlohmann::ordered_json j = platform::to_json(env);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  const std::vector<std::string> expected = {"host",
                                             "os",
                                             "cpu_model",
                                             "isa",
                                             "logical_cores",
                                             "threads_used",
                                             "load_average_1m",
                                             "cpu_governor",
                                             "libtorch_version",
                                             "blas",
                                             "blas_optimized",
                                             "onednn_version",
                                             "plumb_version",
                                             "git_commit",
                                             "compiler",
                                             "device",
                                             "warnings"};
  EXPECT_EQ(keys, expected);
  expect_same_environment(env, platform::environment_from_json(nlohmann::json::parse(j.dump())));

  // An older record without most keys loads with defaults.
  const platform::Environment old =
      platform::environment_from_json(nlohmann::json{{"host", "old-box"}});
  EXPECT_EQ(old.host, "old-box");
  EXPECT_TRUE(old.isa.empty());
  EXPECT_EQ(old.logical_cores, 0);
  EXPECT_FALSE(old.blas_optimized);
  EXPECT_EQ(old.load_average_1m, 0);

  platform::Environment unknown_load = env;
  unknown_load.load_average_1m = kNaN;
  const nlohmann::ordered_json jn = platform::to_json(unknown_load);
  EXPECT_TRUE(jn["load_average_1m"].is_null());
  EXPECT_TRUE(std::isnan(
      platform::environment_from_json(nlohmann::json::parse(jn.dump())).load_average_1m));
}

// A v6 file (before precision): no dtype columns, and a status CHECK without 'unsupported'.
// The first writing open adds the columns (older records read fp32, contiguous) and rebuilds
// the CHECK, keeping every run; an unsupported bf16 run then stores and reads back.
TEST_F(StoreTest, SchemaSixGainsPrecisionColumnsAndTheUnsupportedStatus) {
  const std::string db = old_store(file("v6.db"), "v6", store_with_one_run(file("today.db")));
  {
    // SQLite itself refuses the new status in such a file.
    SQLite::Database raw(db, SQLite::OPEN_READWRITE);
    EXPECT_THROW(raw.exec("UPDATE runs SET status = 'unsupported'"), SQLite::Exception);
  }
  // Read-only: the v6 file reads as it is, its run as fp32.
  {
    auto old = ResultsStore::open(db, /*read_only=*/true)->load_runs(false);
    ASSERT_EQ(old.size(), 1u);
    EXPECT_EQ(old[0].dtype, Dtype::kFp32);
  }
  auto store = ResultsStore::open(db);
  auto options = make_options();
  options.dtype = Dtype::kBf16;
  auto result = make_result();
  result.status = run::RunStatus::kUnsupported;
  result.message = "unsupported in bf16: no kernel";
  result.precision_notes = {"bf16: note"};
  const int64_t id = store->save_run(options, result, make_environment());
  const auto runs = store->load_runs(false);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].dtype, Dtype::kFp32);
  EXPECT_EQ(runs[0].memory_format, "contiguous");
  EXPECT_EQ(runs[1].id, id);
  EXPECT_EQ(runs[1].dtype, Dtype::kBf16);
  EXPECT_EQ(runs[1].result.status, run::RunStatus::kUnsupported);
  EXPECT_EQ(runs[1].result.precision_notes, std::vector<std::string>{"bf16: note"});
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA user_version").getInt(), kSchemaVersion);
  // The rebuilt tables kept their indexes.
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                           "'profiles_by_workload'")
                .getInt(),
            1);
}

// A v12 file's profile passes lack how their kept steps were observed: read (also read-only,
// without the columns) as not recorded, upgraded in place on the first writing open, and a new
// pass keeps its figures.
TEST_F(StoreTest, SchemaTwelveProfilesReadWithoutReplayFigures) {
  const std::string today = file("today.db");
  testing::FakeProfile fake("autoenc", "train", 1,
                            {testing::FakeOp("aten::addmm", "MatMul", 0.01)});
  fake.learning_step_s = 0.5;
  fake.replayed_steps = 2;
  testing::save_fake_profile(*ResultsStore::open(today), fake);
  const std::string db = old_store(file("v12.db"), "v12", today);
  const auto old_pass = [](const ResultsStore& store) {
    const auto passes = store.load_profiles();
    EXPECT_FALSE(passes.empty());
    return passes.front().result;
  };
  const auto read_only = old_pass(*ResultsStore::open(db, /*read_only=*/true));
  EXPECT_EQ(read_only.replayed_steps, -1);
  EXPECT_TRUE(std::isnan(read_only.learning_step_s));
  EXPECT_EQ(user_version(db), 12) << "reading changed nothing";
  auto store = ResultsStore::open(db);
  EXPECT_EQ(user_version(db), kSchemaVersion);
  const auto upgraded = old_pass(*store);
  EXPECT_EQ(upgraded.replayed_steps, -1);
  EXPECT_TRUE(std::isnan(upgraded.learning_step_s));
  fake.replayed_steps = 3;
  fake.learning_step_s = 0.25;
  const int64_t id = testing::save_fake_profile(*store, fake);
  const auto passes = store->load_profiles();
  ASSERT_EQ(passes.size(), 2u);
  const auto& added = passes[0].id == id ? passes[0] : passes[1];
  EXPECT_EQ(added.result.replayed_steps, 3);
  EXPECT_DOUBLE_EQ(added.result.learning_step_s, 0.25);
}

// A v7 file (before plumb dist) gains the dist_worlds table on the first writing open; its runs
// stay, and a data-parallel world stores and reads back.
TEST_F(StoreTest, SchemaSevenGainsDataParallelWorlds) {
  const std::string db = old_store(file("v7.db"), "v7", store_with_one_run(file("today.db")));
  EXPECT_TRUE(ResultsStore::open(db, /*read_only=*/true)->load_dist_worlds().empty());
  auto store = ResultsStore::open(db);
  StoredDistWorld w;
  w.started_at = "2026-01-01T00:00:00Z";
  w.workload = "resnet50";
  w.workers = 2;
  w.batch_per_worker = 4;
  w.bucket_bytes = 25 << 20;
  w.throughput = 10.5;
  w.throughput_unit = "images/s";
  w.step_mean_s = 0.76;
  w.efficiency = 0.9;
  w.exposed_s = 0.01;
  w.gradient_bytes = 102228128;
  w.environment = make_environment();
  w.document = {{"step_s", {0.75, 0.77}}};
  const int64_t id = store->save_dist_world(w);
  const auto back = store->load_dist_worlds();
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, id);
  EXPECT_EQ(back[0].workers, 2);
  EXPECT_DOUBLE_EQ(back[0].efficiency, 0.9);
  EXPECT_EQ(back[0].document, w.document);
  EXPECT_EQ(store->load_runs(false).size(), 1u);
  EXPECT_EQ(user_version(db), kSchemaVersion);
}

}  // namespace
}  // namespace plumb::store
