// Runs the current test again in a new process of the test binary and takes that run's outcome
// as its own. For tests whose premise is a fresh process (a heap no earlier test has left
// holding large free blocks: fresh_heap.h), which ctest cannot give them, because it runs a
// whole suite in one process (tests/CMakeLists.txt); and for checks that root would pass for
// the wrong reason (file permissions), run as an unprivileged user.
//
//   TEST(Suite, Name) {
//     PLUMB_RUN_IN_FRESH_PROCESS();  // the rest runs in the child only
//     ...
//   }
#pragma once

#include <gtest/gtest.h>

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>

#include "scoped_env.h"

namespace plumb::testing {

enum class Privileges { kAsIs, kDropRoot };

// Names the test a child process was started for; set only in that child.
inline constexpr char kFreshProcessVariable[] = "PLUMB_TEST_FRESH_PROCESS";

struct ChildRun {
  int status = -1;     // waitpid's status
  std::string output;  // stdout and stderr together
};

// Runs this binary with `filter` as --gtest_filter, as user 'nobody' when `privileges` says
// so (the caller is root), and collects what it prints.
inline ChildRun run_test_binary(const std::string& filter, Privileges privileges) {
  char self[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return {-1, "cannot read /proc/self/exe"};
  self[length] = '\0';
  const std::string filter_flag = "--gtest_filter=" + filter;
  const passwd* nobody = ::getpwnam("nobody");
  const uid_t uid = nobody != nullptr ? nobody->pw_uid : 65534;
  const gid_t gid = nobody != nullptr ? nobody->pw_gid : 65534;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {-1, "pipe failed"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec: the parent has LibTorch's threads.
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    if (privileges == Privileges::kDropRoot &&
        (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
      ::_exit(126);
    ::execl(self, self, filter_flag.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  ChildRun run;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) run.output.append(buffer, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  ::close(pipe_fds[0]);
  if (pid < 0) return {-1, "fork failed"};
  ::waitpid(pid, &run.status, 0);
  return run;
}

// The reason gtest printed for a skipped test: the line after "<file>:<line>: Skipped".
inline std::string skip_reason(const std::string& output) {
  const std::string marker = ": Skipped\n";
  const size_t at = output.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return output.substr(start, output.find('\n', start) - start);
}

// What the caller does next: run the test's body (in the child), or stop, the child's outcome
// taken (a failure has been recorded; a skip is for the caller to record, with its reason).
struct FreshProcess {
  bool in_child = false;
  std::optional<std::string> skipped;
};

// In the child, returns at once. In the parent, runs the child and records a failure of it as
// this test's failure, with the child's output.
inline FreshProcess run_in_fresh_process(Privileges privileges = Privileges::kAsIs) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string(test->test_suite_name()) + "." + test->name();
  const char* started_for = std::getenv(kFreshProcessVariable);
  if (started_for != nullptr && name == started_for) return {true, std::nullopt};
  ChildRun child;
  {
    ScopedEnv env;
    env.set(kFreshProcessVariable, name);
    env.unset("PLUMB_TEST_SKIP_DIR");  // a skip there is reported once, by this process
    child = run_test_binary(name, privileges);
  }
  const bool exited_0 = WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0;
  if (!exited_0) {
    ADD_FAILURE() << name << " in a fresh process"
                  << (privileges == Privileges::kDropRoot ? " as user 'nobody'" : "")
                  << " failed (wait status " << child.status
                  << "; 126: could not become 'nobody'):\n"
                  << child.output;
  } else if (child.output.find("[  SKIPPED ] " + name) != std::string::npos) {
    return {false, skip_reason(child.output)};
  } else if (child.output.find("[       OK ] " + name) == std::string::npos) {
    ADD_FAILURE() << name << " did not run in the fresh process:\n" << child.output;
  }
  return {false, std::nullopt};
}

}  // namespace plumb::testing

// The rest of the test runs in a fresh child process only; this process takes its outcome.
#define PLUMB_RUN_IN_FRESH_PROCESS(...)                                            \
  do {                                                                             \
    const ::plumb::testing::FreshProcess plumb_fresh_process =                     \
        ::plumb::testing::run_in_fresh_process(__VA_ARGS__);                       \
    if (plumb_fresh_process.skipped) GTEST_SKIP() << *plumb_fresh_process.skipped; \
    if (!plumb_fresh_process.in_child) return;                                     \
  } while (0)
