// The tests' own helpers: ScopedEnv puts back every variable it touched on any exit (a failed
// ASSERT returns early), and a skip in a fresh process reaches its parent with its reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fresh_process.h"
#include "scoped_env.h"

namespace plumb {
namespace {

TEST(ScopedEnv, PutsBackWhatItTouchedOnAnEarlyReturn) {
  setenv("PLUMB_TEST_SCOPED_SET", "before", 1);
  unsetenv("PLUMB_TEST_SCOPED_NEW");
  const auto early_return = [] {
    testing::ScopedEnv env;
    env.set("PLUMB_TEST_SCOPED_SET", "during").set("PLUMB_TEST_SCOPED_NEW", "during");
    env.unset("PLUMB_TEST_SCOPED_SET").set("PLUMB_TEST_SCOPED_SET", "again");
    if (std::getenv("PLUMB_TEST_SCOPED_NEW") != nullptr) return;  // as a failed ASSERT does
    ADD_FAILURE() << "not set";
  };
  early_return();
  ASSERT_NE(std::getenv("PLUMB_TEST_SCOPED_SET"), nullptr);
  EXPECT_EQ(std::string(std::getenv("PLUMB_TEST_SCOPED_SET")), "before");
  EXPECT_EQ(std::getenv("PLUMB_TEST_SCOPED_NEW"), nullptr);
  unsetenv("PLUMB_TEST_SCOPED_SET");
}

TEST(FreshProcess, TheReasonOfAChildsSkipIsTheLineGtestPrintsAfterSkipped) {
  EXPECT_EQ(testing::skip_reason("[ RUN      ] A.b\n/src/t.cpp:12: Skipped\nneeds AMX: none here\n"
                                 "[  SKIPPED ] A.b (0 ms)\n"),
            "needs AMX: none here");
  EXPECT_EQ(testing::skip_reason("[       OK ] A.b (0 ms)\n"), "");
}

}  // namespace
}  // namespace plumb
