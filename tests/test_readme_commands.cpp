// The README's first command, as a user pastes it, run with its set-up script and plumb replaced
// by stubs that record what ran: what is checked is what the command line itself does with their
// exit statuses. plumb characterize exits 1 when one of its items failed (stored with that status
// and shown on its card), and the report must still be written.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_fixture.h"

namespace plumb {
namespace {

namespace fs = std::filesystem;

// The first line of README.md's first ```sh block: the main job.
std::string readme_main_job() {
  const std::string readme =
      testing::slurp(fs::path(__FILE__).parent_path().parent_path() / "README.md");
  const std::string fence = "```sh\n";
  const size_t start = readme.find(fence);
  if (start == std::string::npos) return "";
  const size_t begin = start + fence.size();
  return readme.substr(begin, readme.find('\n', begin) - begin);
}

class ReadmeMainJob : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/plumb_readme_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs::create_directories(dir_ / "build");
    fs::create_directories(dir_ / "scripts");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the README's command with a set-up that exits `setup_exit` and a plumb whose
  // characterize exits `characterize_exit`; returns the plumb commands that ran, one a line.
  std::string run(int setup_exit, int characterize_exit) {
    std::ofstream(dir_ / "scripts" / "setup.sh") << "exit " << setup_exit << "\n";
    const fs::path plumb = dir_ / "build" / "plumb";
    std::ofstream(plumb) << "#!/bin/sh\necho \"$1\" >>calls\n[ \"$1\" = characterize ] && exit "
                         << characterize_exit << "\nexit 0\n";
    fs::permissions(plumb, fs::perms::owner_all);
    fs::remove(dir_ / "calls");
    const std::string line = readme_main_job();
    std::ofstream(dir_ / "main_job.sh") << line << "\n";
    const int status =
        std::system(("cd " + dir_.string() + " && bash main_job.sh >/dev/null 2>&1").c_str());
    EXPECT_TRUE(WIFEXITED(status)) << status;
    return fs::exists(dir_ / "calls") ? testing::slurp(dir_ / "calls") : "";
  }

  fs::path dir_;
};

TEST_F(ReadmeMainJob, WritesTheReportEvenWhenACharacterizeItemFailed) {
  ASSERT_NE(readme_main_job().find("./build/plumb report"), std::string::npos) << readme_main_job();
  EXPECT_EQ(run(0, 0), "probe\ncharacterize\nreport\n");
  EXPECT_EQ(run(0, 1), "probe\ncharacterize\nreport\n");
  // A set-up that failed built nothing to run.
  EXPECT_EQ(run(1, 0), "");
}

}  // namespace
}  // namespace plumb
