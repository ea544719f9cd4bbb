// Many processes on one results database at once: six runs and the two shards of a sweep,
// started together on a file that does not exist yet, with a reader exporting the whole store
// again and again meanwhile. Every writer succeeds within SQLite's busy wait (10 s,
// store/schema.h), nothing is lost or stored twice, and no reader ever sees a locked or
// damaged store.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "cli_fixture.h"

namespace plumb {
namespace {

using testing::Cli;

TEST_F(Cli, EightWritersAndAReaderShareOneDatabase) {
  const std::string d = dir_.string();
  std::vector<std::string> writers;
  for (int i = 0; i < 6; ++i)
    writers.push_back(quick_run_args() + fmt::format(" --tag writer{} --db {}", i, db()));
  const std::string grid =
      "sweep paradnn_fc --grid nodes=16,32 --grid batch=8,16 --set input=32 --set output=8 "
      "--max-time 0.3 --max-warmup-time 0.3 --no-probe --name shared";
  writers.push_back(grid + " --shard 0/2 --db " + db());
  writers.push_back(grid + " --shard 1/2 --db " + db());
  std::string script = "cd " + d + "\n";
  for (size_t i = 0; i < writers.size(); ++i)
    script +=
        fmt::format("({} {} >o{} 2>e{}; echo $? >rc{}) &\n", PLUMB_BINARY, writers[i], i, i, i);
  // The reader: 20 exports while the writers work (the first ones may find no store yet).
  script += fmt::format(
      "(for k in $(seq 20); do {} export --format json --db {} >/dev/null 2>>reader; "
      "echo $? >>reader_rc; sleep 0.25; done) &\nwait\n",
      PLUMB_BINARY, db());
  ASSERT_EQ(std::system(("sh -c '" + script + "'").c_str()), 0);

  for (size_t i = 0; i < writers.size(); ++i) {
    const std::string rc = testing::slurp(dir_ / fmt::format("rc{}", i));
    EXPECT_EQ(rc, "0\n") << writers[i] << "\n" << testing::slurp(dir_ / fmt::format("e{}", i));
  }
  // Six tagged runs, once each, and the sweep's four points once each, with a run each.
  EXPECT_EQ(testing::count_rows(db(), "SELECT COUNT(*) FROM runs WHERE tag LIKE 'writer%'"), 6);
  EXPECT_EQ(testing::count_rows(db(),
                                "SELECT COUNT(DISTINCT tag) FROM runs WHERE tag LIKE "
                                "'writer%'"),
            6);
  EXPECT_EQ(testing::count_rows(db(), "SELECT COUNT(*) FROM sweep_points"), 4);
  EXPECT_EQ(testing::count_rows(db(), "SELECT COUNT(DISTINCT point_key) FROM sweep_points"), 4);
  EXPECT_EQ(testing::count_rows(db(), "SELECT COUNT(*) FROM sweeps"), 1);
  SQLite::Database check(db(), SQLite::OPEN_READONLY);
  EXPECT_EQ(check.execAndGet("PRAGMA integrity_check").getString(), "ok");

  const std::string reader = testing::slurp(dir_ / "reader");
  for (const char* bad : {"locked", "malformed", "disk I/O", "internal error"})
    EXPECT_EQ(reader.find(bad), std::string::npos) << reader;
  EXPECT_NE(testing::slurp(dir_ / "reader_rc").find("0\n"), std::string::npos)
      << "no export succeeded while the writers ran:\n"
      << reader;
}

}  // namespace
}  // namespace plumb
