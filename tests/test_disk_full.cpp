// A full disk: plumb names it (not a bare "disk I/O error"), what it stored before stays intact
// and readable, and a measurement whose write fails carries its figures in the error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include "cli_fixture.h"
#include "plumb/core/errors.h"
#include "plumb/store/rows.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;
using testing::Cli;

TEST_F(Cli, FullDiskIsNamedAndWhatWasStoredStaysIntact) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const fs::path small = dir_ / "small";
  fs::create_directories(small);
  if (std::system(("mount -t tmpfs -o size=4m tmpfs " + small.string() + " 2>/dev/null").c_str()) !=
      0)
    GTEST_SKIP() << "needs CAP_SYS_ADMIN to mount a tmpfs (mount failed here)";
  struct Unmount {
    std::string path;
    ~Unmount() { [[maybe_unused]] int rc = std::system(("umount " + path).c_str()); }
  } unmount{small.string()};
  const std::string db = (small / "plumb.db").string();
  const auto first = plumb(quick_run_args() + " --db " + db);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(store::detail::full_disk_note(db), "");

  // Fill the file system to its last block, then ask for another run there.
  [[maybe_unused]] int rc = std::system(
      ("dd if=/dev/zero of=" + (small / "filler").string() + " bs=64k 2>/dev/null").c_str());
  EXPECT_NE(store::detail::full_disk_note(db).find("is full"), std::string::npos);
  const auto full = plumb(quick_run_args() + " --db " + db);
  EXPECT_EQ(full.code, 2) << full.err;
  EXPECT_NE(full.err.find("is full"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("check the path and its permissions"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find("disk I/O error"), std::string::npos) << full.err;

  // Space again: the first run is there, whole, and the file is consistent.
  fs::remove(small / "filler");
  EXPECT_EQ(testing::count_rows(db, "SELECT COUNT(*) FROM runs"), 1);
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
  const auto after = plumb("export --format json --db " + db);
  EXPECT_EQ(after.code, 0) << after.err;
}

// A write that fails keeps the measurement: its summary is in the error the user sees.
TEST(StoreWriteFailure, TheErrorCarriesTheMeasurement) {
  const SQLite::Exception busy("database is locked", SQLITE_BUSY);
  try {
    store::detail::rethrow_save_error(busy, "run of autoenc", "/tmp/x.db",
                                      "123.4 samples/s, median step 0.01 s over 20 steps");
    FAIL() << "rethrow_save_error returned";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nothing of it was stored"), std::string::npos) << what;
    EXPECT_NE(what.find("[measured: 123.4 samples/s"), std::string::npos) << what;
    EXPECT_NE(what.find("another process holds the database locked"), std::string::npos) << what;
  }
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
