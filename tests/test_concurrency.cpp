// Many processes on one results database at once: six runs and the two shards of a sweep,
// started together on a file that does not exist yet, with a reader exporting the whole store
// again and again meanwhile. Every writer succeeds within SQLite's busy wait (10 s,
// store/schema.h), nothing is lost or stored twice, and no reader ever sees a locked or
// damaged store. Two processes creating one database, one of them failing half-way: the
// database the other made stays. A run that finds the database locked past the busy wait
// exits 3 with what it measured.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "cli_fixture.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;
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

// Children started by a test; any still running when it ends (an ASSERT returned early) are
// killed and reaped, since a stopped one would wait for a SIGCONT forever.
class Children {
 public:
  ~Children() {
    for (const pid_t pid : running_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  // Starts `command` (a shell command line) as a child of this process, itself, not a shell
  // around it, so the test can see it stop (PLUMB_STOP_AT) and let it go on.
  pid_t start(const std::string& command) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    running_.insert(pid);
    return pid;
  }
  // waitpid's status once the child stops (true) or ends (false: it is reaped).
  bool stopped(pid_t pid, int& status) {
    if (waitpid(pid, &status, WUNTRACED) != pid) return false;
    if (WIFSTOPPED(status)) return true;
    running_.erase(pid);
    return false;
  }
  // Lets a stopped child go on and returns its status once it has ended.
  int resume_to_end(pid_t pid) {
    kill(pid, SIGCONT);
    int status = -1;
    waitpid(pid, &status, 0);
    running_.erase(pid);
    return status;
  }

 private:
  std::set<pid_t> running_;
};

// Two processes decide at once that the database does not exist and create it. The first
// stops with its copy made (PLUMB_STOP_AT), the second publishes its own and stores a run in
// it, then the first goes on and fails as if its disk had filled (PLUMB_FAIL_AT): the
// database and the second's run stay, and no file of the first's is left. Had the first not
// failed, it finds the database there and stores its run in it.
TEST_F(Cli, AFailedCreatorLeavesTheDatabaseAnotherCreatedAlone) {
  for (const bool fails : {true, false}) {
    SCOPED_TRACE(fails ? "the first creator fails" : "the first creator goes on");
    const std::string db = (dir_ / (fails ? "failed.db" : "shared.db")).string();
    const std::string err = (dir_ / "first.err").string();
    Children children;
    const pid_t first = children.start(
        std::string("env PLUMB_STOP_AT=create-db ") + (fails ? "PLUMB_FAIL_AT=create-db " : "") +
        PLUMB_BINARY + " " + quick_run_args() + " --tag first --db " + db + " >/dev/null 2>" + err);
    int status = 0;
    ASSERT_TRUE(children.stopped(first, status))
        << "wait status " << status << ": " << testing::slurp(err);
    EXPECT_FALSE(fs::exists(db)) << "published before it was whole";
    const auto second = plumb(quick_run_args() + " --tag second --db " + db);
    ASSERT_EQ(second.code, 0) << second.err;

    status = children.resume_to_end(first);
    const std::string first_err = testing::slurp(err);
    ASSERT_TRUE(fs::exists(db)) << first_err;
    SQLite::Database check(db, SQLite::OPEN_READONLY);
    const std::string tags =
        check.execAndGet("SELECT group_concat(tag, ' ') FROM (SELECT tag FROM runs ORDER BY id)")
            .getString();
    if (fails) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status << ": " << first_err;
      EXPECT_NE(first_err.find("cannot create results database"), std::string::npos) << first_err;
      EXPECT_NE(first_err.find("injected failure"), std::string::npos) << first_err;
      EXPECT_EQ(tags, "second");
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ": " << first_err;
      EXPECT_EQ(tags, "second first");
    }
    EXPECT_EQ(check.execAndGet("PRAGMA integrity_check").getString(), "ok");
  }
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "left behind: " << entry.path();
}

// A run measured while another process holds the database's write lock past the busy wait
// (10 s): not stored, and not bad usage either. Exit 3, and the error carries the figures.
TEST_F(Cli, AMeasuredRunThatCannotBeStoredExits3) {
  ASSERT_EQ(plumb(quick_run_args() + " --db " + db()).code, 0);
  SQLite::Database holder(db(), SQLite::OPEN_READWRITE);
  holder.exec("BEGIN IMMEDIATE");
  const auto start = std::chrono::steady_clock::now();
  const auto locked = plumb(quick_run_args() + " --tag locked --db " + db());
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  holder.exec("ROLLBACK");
  EXPECT_EQ(locked.code, 3) << locked.err;
  EXPECT_NE(locked.err.find("could not save the run of autoenc"), std::string::npos) << locked.err;
  EXPECT_NE(locked.err.find("nothing of it was stored"), std::string::npos) << locked.err;
  EXPECT_NE(locked.err.find("[measured: "), std::string::npos) << locked.err;
  EXPECT_NE(locked.err.find("another process holds the database locked"), std::string::npos)
      << locked.err;
  EXPECT_GE(waited, 10.0) << "gave up before the busy wait";
  EXPECT_EQ(testing::count_rows(db(), "SELECT COUNT(*) FROM runs WHERE tag = 'locked'"), 0);
}

}  // namespace
}  // namespace plumb
