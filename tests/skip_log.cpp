// Records every skipped test for ctest's skip report. ctest runs a whole test suite as one ctest
// test (tests/CMakeLists.txt) and counts it passed whatever GTEST_SKIP said inside, so a skip
// would otherwise show nowhere in CI. With PLUMB_TEST_SKIP_DIR set (ctest sets it), each skip
// appends a line "<Suite.Test><TAB><reason>" to a file of this process there; the
// TestSkips.Report entry (tests/skip_report.sh) reads them all after the last test. Unset (the
// binary run by hand), nothing is recorded: gtest's own summary lists the skips.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace plumb::testing {
namespace {

class SkipRecorder : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& test) override {
    const char* dir = std::getenv("PLUMB_TEST_SKIP_DIR");
    if (dir == nullptr || !test.result()->Skipped()) return;
    std::string reason;
    for (int i = 0; i < test.result()->total_part_count(); ++i) {
      const ::testing::TestPartResult& part = test.result()->GetTestPartResult(i);
      if (part.skipped()) reason += part.message();
    }
    // One line per skip; the report turns ';' into ',' (a ctest label list would split there).
    for (char& c : reason)
      if (c == '\n' || c == '\t') c = ' ';
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream(std::string(dir) + "/" + std::to_string(::getpid()) + ".tsv", std::ios::app)
        << test.test_suite_name() << '.' << test.name() << '\t'
        << (reason.empty() ? "no reason given" : reason) << '\n';
  }
};

// Registered before main runs: gtest_main only initialises and runs the tests.
[[maybe_unused]] const bool kSkipRecorderRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SkipRecorder);
  return true;
}();

}  // namespace
}  // namespace plumb::testing
