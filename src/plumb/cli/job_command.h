// What the commands that run a job share around it: registering a command whose options fill one
// flags value that its callback reads, progress lines on stderr, and the result on stdout as one
// JSON document (--json) or the job's text report.
#pragma once

#include <iostream>
#include <memory>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "plumb/core/json_text.h"

namespace plumb::cli {

// A job's progress: a line on stderr, so that stdout holds the result alone.
inline void print_progress(const std::string& line) {
  std::cerr << line << '\n';
}

// The result on stdout: `to_json()` as one JSON document (indent 2) with --json, else what
// `print_text(std::cout)` writes.
template <typename ToJson, typename PrintText>
void print_result(bool as_json, const ToJson& to_json, const PrintText& print_text) {
  if (as_json)
    std::cout << json_text(to_json(), 2) << '\n';
  else
    print_text(std::cout);
}

// Adds subcommand `name` to `parent`: `declare(cmd, flags)` declares its options into one Flags
// kept for the callback, and the callback is `run(flags)`. Returns the subcommand.
template <typename Flags, typename Declare, typename Run>
CLI::App* add_job_command(CLI::App& parent, const std::string& name, const std::string& description,
                          const Declare& declare, Run run) {
  CLI::App* cmd = parent.add_subcommand(name, description);
  auto flags = std::make_shared<Flags>();
  declare(*cmd, *flags);
  cmd->callback([flags, run] { run(*flags); });
  return cmd;
}

}  // namespace plumb::cli
