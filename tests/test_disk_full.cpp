// A full disk: plumb names it (not a bare "disk I/O error"), what it stored before stays intact
// and readable, a measurement whose write fails carries its figures in the error, and an export
// that cannot be written whole fails and leaves the file it would have replaced as it was.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include "cli_fixture.h"
#include "plumb/core/errors.h"
#include "plumb/store/rows.h"
#include "usage_error_check.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;
using testing::Cli;

// A 4 MiB tmpfs on `dir` for one test, unmounted when it ends; fill() takes its last block.
class SmallDisk {
 public:
  explicit SmallDisk(fs::path dir) : dir_(std::move(dir)) {
    if (geteuid() != 0) {
      why_not_ = "needs root to mount a small tmpfs";
      return;
    }
    fs::create_directories(dir_);
    if (std::system(
            ("mount -t tmpfs -o size=4m tmpfs " + dir_.string() + " 2>/dev/null").c_str()) != 0)
      why_not_ = "needs CAP_SYS_ADMIN to mount a tmpfs (mount failed here)";
  }
  ~SmallDisk() {
    if (mounted()) {
      [[maybe_unused]] int rc = std::system(("umount " + dir_.string()).c_str());
    }
  }
  bool mounted() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const fs::path& path() const { return dir_; }
  void fill() const {
    [[maybe_unused]] int rc = std::system(
        ("dd if=/dev/zero of=" + (dir_ / "filler").string() + " bs=64k 2>/dev/null").c_str());
  }
  void free() const { fs::remove(dir_ / "filler"); }

 private:
  fs::path dir_;
  std::string why_not_;
};

TEST_F(Cli, FullDiskIsNamedAndWhatWasStoredStaysIntact) {
  const SmallDisk small(dir_ / "small");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  const std::string db = (small.path() / "plumb.db").string();
  const auto first = plumb(quick_run_args() + " --db " + db);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(store::detail::full_disk_note(db), "");

  // Fill the file system to its last block, then ask for another run there.
  small.fill();
  EXPECT_NE(store::detail::full_disk_note(db).find("is full"), std::string::npos);
  const auto full = plumb(quick_run_args() + " --db " + db);
  EXPECT_EQ(full.code, 2) << full.err;
  EXPECT_NE(full.err.find("is full"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("check the path and its permissions"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("disk I/O error"), std::string::npos) << full.err;

  // Space again: the first run is there, whole, and the file is consistent.
  small.free();
  EXPECT_EQ(testing::count_rows(db, "SELECT COUNT(*) FROM runs"), 1);
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
  const auto after = plumb("export --format json --db " + db);
  EXPECT_EQ(after.code, 0) << after.err;
}

// plumb export -o F onto a full disk: it fails naming F and the disk's refusal, and F stays as
// it was (or absent, if it was), with no temporary file beside it.
TEST_F(Cli, ExportToAFullDiskLeavesTheFileAsItWas) {
  const SmallDisk small(dir_ / "small");
  if (!small.mounted()) GTEST_SKIP() << small.why_not();
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  const fs::path earlier = small.path() / "export.json";
  std::ofstream(earlier) << "an earlier export\n";
  small.fill();
  const fs::path fresh = small.path() / "runs.csv";
  const std::pair<std::string, fs::path> exports[] = {{"--format json", earlier},
                                                      {"--format csv", fresh}};
  for (const auto& [args, out] : exports) {
    const auto full = plumb("export " + args + " --db " + db() + " -o " + out.string());
    EXPECT_EQ(full.code, 2) << full.err;
    EXPECT_NE(full.err.find("writing '" + out.string() + "' failed: No space left on device"),
              std::string::npos)
        << full.err;
  }
  EXPECT_EQ(testing::slurp(earlier), "an earlier export\n");
  EXPECT_FALSE(fs::exists(fresh));
  std::set<std::string> left;
  for (const auto& entry : fs::directory_iterator(small.path()))
    left.insert(entry.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"export.json", "filler"}));
}

// plumb export to a standard output that refuses the text (/dev/full answers every write as a
// full disk does): an error, not a silent exit 0.
TEST_F(Cli, ExportToAFullStandardOutputFails) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  const std::string err = (dir_ / "export.err").string();
  const int status = std::system(
      (std::string(PLUMB_BINARY) + " export --format json --db " + db() + " >/dev/full 2>" + err)
          .c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(testing::slurp(err).find(
                "writing the export to standard output failed: No space left on device"),
            std::string::npos)
      << testing::slurp(err);
}

// A write that fails keeps the measurement: its summary is in the error the user sees.
TEST(StoreWriteFailure, TheErrorCarriesTheMeasurement) {
  const SQLite::Exception busy("database is locked", SQLITE_BUSY);
  expect_usage_error(
      [&] {
        store::detail::rethrow_save_error(busy, "run of autoenc", "/tmp/x.db",
                                          "123.4 samples/s, median step 0.01 s over 20 steps");
      },
      {"nothing of it was stored", "[measured: 123.4 samples/s",
       "another process holds the database locked"});
}

// The line a lost run leaves: its figures and reproducer, or why it did not succeed.
TEST(StoreWriteFailure, ARunsFiguresFitInOneLine) {
  run::RunResult ok;
  ok.throughput = 1234.5;
  ok.throughput_unit = "images/s";
  ok.step_time.median = 0.0125;
  ok.step_time.n = 40;
  ok.command = "plumb run resnet50 --batch 8";
  EXPECT_EQ(store::detail::measured_run(ok),
            "1234.5 images/s, median step 0.0125 s over 40 steps; reproduce: plumb run resnet50 "
            "--batch 8");
  run::RunResult failed;
  failed.status = run::RunStatus::kOutOfMemory;
  failed.message = "batch 4096 does not fit";
  EXPECT_EQ(store::detail::measured_run(failed), "out_of_memory: batch 4096 does not fit");
}

}  // namespace
}  // namespace plumb
