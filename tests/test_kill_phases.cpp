// SIGKILL at every phase of a measurement, driven by PLUMB_KILL_AT (core/kill_point.h) rather
// than by timing: whatever the moment, the database stays consistent and holds no half of a
// record, the next command works on it, a resumed sweep repeats no point and misses none, and
// a report being written never replaces the good one with a part of itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>

#include "cli_fixture.h"

namespace plumb {
namespace {

using testing::Cli;
using testing::count_rows;

// The shell reports a child killed by signal 9 as 128 + 9.
constexpr int kKilled = 137;

class KillCli : public Cli {
 protected:
  // `args` with PLUMB_KILL_AT=`phase` in the environment the binary inherits.
  testing::Result killed_at(const std::string& phase, const std::string& args) {
    setenv("PLUMB_KILL_AT", phase.c_str(), 1);
    const auto r = plumb(args);
    unsetenv("PLUMB_KILL_AT");
    return r;
  }
  void expect_consistent() {
    SQLite::Database d(db(), SQLite::OPEN_READONLY);
    EXPECT_EQ(d.execAndGet("PRAGMA integrity_check").getString(), "ok");
    EXPECT_EQ(d.execAndGet("SELECT COUNT(*) FROM pragma_foreign_key_check").getInt(), 0);
  }
};

TEST_F(KillCli, KilledRunLeavesNoHalfRecordAndTheStoreWorks) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  const int64_t samples = count_rows(db(), "SELECT COUNT(*) FROM samples");
  for (const char* phase : {"warmup", "sampling", "storing"}) {
    const auto r = killed_at(phase, quick_run_args() + " --db " + db());
    EXPECT_EQ(r.code, kKilled) << phase << ": " << r.err;
    EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM runs"), 1) << phase;
    EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM samples"), samples) << phase;
    expect_consistent();
  }
  const auto next = plumb(quick_run_args() + " --db " + db());
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM runs"), 2);
}

TEST_F(KillCli, KilledProfileAndMemorySearchLeaveOnlyWholePasses) {
  const auto profile = killed_at("profile", quick_profile_args() + " --db " + db());
  EXPECT_EQ(profile.code, kKilled) << profile.err;
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM profiles"), 0);
  expect_consistent();
  // Two memory passes; killed as the second starts: the first is stored whole.
  const std::string memory =
      "memory autoenc --mode infer --batch 8,16 --set hidden=16 --set latent=4 --db " + db();
  const auto search = killed_at("memory-search:2", memory);
  EXPECT_EQ(search.code, kKilled) << search.err;
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM memory_profiles"), 1);
  expect_consistent();
  EXPECT_EQ(plumb(memory).code, 0);
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM memory_profiles"), 3);
}

TEST_F(KillCli, KilledSweepResumesWithoutRepeatsOrGaps) {
  const std::string sweep =
      "sweep paradnn_fc --grid nodes=16,32 --grid batch=8,16 --set input=32 --set output=8 "
      "--max-time 0.3 --max-warmup-time 0.3 --no-probe --name resumed --db " +
      db();
  const auto killed = killed_at("sweep-point:3", sweep);  // two points done, the third started
  EXPECT_EQ(killed.code, kKilled) << killed.err;
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM sweep_points"), 2);
  expect_consistent();
  const auto resumed = plumb(sweep);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("2 already stored, 2 to run"), std::string::npos) << resumed.err;
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM sweep_points"), 4);
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(DISTINCT point_key) FROM sweep_points"), 4);
  EXPECT_EQ(count_rows(db(), "SELECT COUNT(*) FROM sweeps"), 1);
}

TEST_F(KillCli, KilledReportWriteKeepsTheGoodReport) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  const std::string html = (dir_ / "report.html").string();
  ASSERT_EQ(plumb("report --db " + db() + " -o " + html).code, 0);
  const std::string good = testing::slurp(html);
  ASSERT_GT(good.size(), 1000u);
  ASSERT_EQ(plumb(quick_run_args() + " --tag second --db " + db()).code, 0);
  const auto killed = killed_at("file-write", "report --db " + db() + " -o " + html);
  EXPECT_EQ(killed.code, kKilled) << killed.err;
  EXPECT_EQ(testing::slurp(html), good);  // the old report, whole
}

}  // namespace
}  // namespace plumb
