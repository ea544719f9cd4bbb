// The CLI test fixture: runs the real plumb binary in a fresh temporary directory and
// captures its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <SQLiteCpp/SQLiteCpp.h>
#include <nlohmann/json.hpp>

#include "plumb/platform/blas_check.h"

namespace plumb::testing {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The single integer `sql` yields on database `db` (a count, usually), read-only.
inline int64_t count_rows(const std::string& db, const std::string& sql) {
  SQLite::Database d(db, SQLite::OPEN_READONLY);
  return d.execAndGet(sql).getInt64();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/plumb_cli_XXXXXX";
    dir_ = mkdtemp(tmpl);
    // What plumb would restart itself with on a CPU OpenBLAS does not know, given up front so
    // that hundreds of commands do not each load LibTorch twice (the restart has its own test,
    // which clears this).
    static const std::string matching = platform::detect_blas().matching_core;
    if (!matching.empty()) setenv("OPENBLAS_CORETYPE", matching.c_str(), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result plumb(const std::string& args) {
    const std::string cmd = std::string(PLUMB_BINARY) + " " + args + " >" +
                            (dir_ / "out").string() + " 2>" + (dir_ / "err").string();
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "out"), slurp(dir_ / "err")};
  }

  std::string db() const { return (dir_ / "plumb.db").string(); }

  // Runs `plumb ARGS --json --db DB`, which must exit 0, and returns the document it printed
  // (a failure throws with plumb's stderr, which fails the test).
  nlohmann::json plumb_json(const std::string& args) {
    const Result r = plumb(args + " --json --db " + db());
    if (r.code != 0)
      throw std::runtime_error("plumb " + args + " exited " + std::to_string(r.code) + ": " +
                               r.err);
    return nlohmann::json::parse(r.out);
  }

  // A fast autoenc run (tiny MLP) so CLI tests take seconds.
  static std::string quick_run_args() {
    return "run autoenc --mode train --batch 8 --set hidden=16 --set latent=4 --threads 1 "
           "--max-time 2 --min-samples 5 --target-ci 0.5";
  }

  // The same tiny autoenc profiled in both modes; callers add threads, steps and budgets.
  static std::string quick_profile_args() {
    return "profile autoenc --mode train,infer --batch 8 --set hidden=16 --set latent=4";
  }

  void expect_usage_error(const std::string& args, const std::string& needle) {
    Result r = plumb(args);
    EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << "\nstdout: " << r.out;
  }

  fs::path dir_;
};

}  // namespace plumb::testing
