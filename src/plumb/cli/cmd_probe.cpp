// plumb probe: this machine's measured ceilings (instruction and GEMM peaks per dtype,
// bandwidth per memory level) beside the theoretical peak, stored for later commands. The
// probe is jobs/stored_or_fresh_probe.h, its output jobs/probe_report.h.
#include <iostream>
#include <memory>
#include <string>

#include "plumb/cli/commands.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/jobs/probe_report.h"
#include "plumb/jobs/stored_or_fresh_probe.h"

namespace plumb::cli {
namespace {

struct ProbeFlags {
  bool quick = false;
  bool thorough = false;
  bool refresh = false;
  int threads = 0;
  std::string db = "plumb.db";
  bool json = false;
};

}  // namespace

void add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "probe", "Measure this machine's ceilings: peak FLOP/s per dtype, bandwidth per level");
  auto f = std::make_shared<ProbeFlags>();
  cmd->add_flag("--quick", f->quick, "A few seconds (the default)");
  cmd->add_flag("--thorough", f->thorough, "Finer sweeps and longer timings (about a minute)");
  cmd->add_flag("--refresh", f->refresh, "Measure again even if a stored probe exists");
  cmd->add_option("--threads", f->threads, "Largest thread count to measure (default: all CPUs)");
  cmd->add_option("--db", f->db, "Results database (SQLite)")->capture_default_str();
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  cmd->callback([f] {
    if (f->quick && f->thorough) throw UsageError("--quick and --thorough exclude each other");
    if (f->threads < 0) throw UsageError("--threads must be positive");
    auto db = store::ResultsStore::open(f->db);
    const jobs::ProbeChoice choice =
        jobs::current_probe(*db, {f->thorough, f->refresh, f->threads});
    if (f->json) {
      std::cout << json_text(jobs::probe_choice_json(choice), 2) << '\n';
      return;
    }
    jobs::print_probe(std::cout, choice);
    std::cout << "\nstored as probe " << choice.probe.id << " in " << db->path() << '\n';
  });
}

}  // namespace plumb::cli
