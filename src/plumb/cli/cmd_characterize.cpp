// plumb characterize: what each workload does to the machine, measured in one pass that is
// stored as it goes. Per workload: throughput in training and inference, an operator profile
// of each mode (categories, operators, FLOPs and bytes: what the report's roofline, similarity
// and category views read), the memory mix of a training step (of inference for workloads that
// do not train), what bounds each profiled step, and inference speed and output
// error per precision against fp32; across the set, the category shares and their clustering. Every
// item is stored the moment it finishes, tagged with the characterization's name, so a killed pass
// rerun with the same name repeats nothing that finished (the item that was running is measured
// again).
// The command line parses and prints; the pass is jobs/characterize_job.h, its output
// jobs/characterize_report.h.

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "plumb/cli/commands.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/errors.h"
#include "plumb/core/precision.h"
#include "plumb/jobs/characterize_job.h"
#include "plumb/jobs/characterize_report.h"

namespace plumb::cli {
namespace {

struct CharacterizeFlags {
  std::vector<std::string> workloads;
  std::string suites;
  bool quick = false;
  bool thorough = false;
  std::string name;            // default: "quick" or "full"
  std::string size = "suite";  // suite: plumb suite's batches and sizes; tiny: the tests' sizes
  int threads = 0;             // 0: every online core
  std::string dtypes = "bf16,int8";
  double max_time = 0, max_warmup_time = 0;  // 0: by --quick
  uint64_t seed = 0;
  std::string db = "plumb.db";
  bool json = false;
};

// Declares the options; returns --dtypes, whose count says whether the user named it.
CLI::Option* declare_characterize_options(CLI::App& cmd, CharacterizeFlags& f) {
  cmd.add_option("workloads", f.workloads, "Workload names (see plumb list)");
  cmd.add_option("--suite", f.suites, "Every workload of these suites, e.g. fathom,tbd");
  auto* quick = cmd.add_flag(
      "--quick", f.quick,
      "Short budgets (4 s per timed run, 1 profiled step, 2 s per precision): the README's main "
      "job. A precision this CPU has no units for (the probe's verdict) is not timed unless "
      "--dtypes names it");
  cmd.add_flag("--thorough", f.thorough,
               "Full budgets (the default without --quick); times every precision, emulated ones "
               "included")
      ->excludes(quick);
  cmd.add_option("--name", f.name,
                 "The characterization's name in the database: rerunning with the same name "
                 "resumes it (default: quick or full)");
  cmd.add_option("--size", f.size,
                 "suite: the batches and sizes plumb suite measures; tiny: seconds-per-step "
                 "models (a smoke test)")
      ->capture_default_str();
  cmd.add_option("--threads", f.threads,
                 "Intra-op threads (default: every CPU this process may use)");
  auto* dtypes_option =
      cmd.add_option("--dtypes", f.dtypes, "Precisions measured against fp32 in inference, or none")
          ->capture_default_str();
  cmd.add_option("--max-time", f.max_time, "Measurement budget per timed run, seconds");
  cmd.add_option("--max-warmup-time", f.max_warmup_time, "Warm-up cap per run, seconds");
  cmd.add_option("--seed", f.seed, "Seed for weights and synthetic data")->capture_default_str();
  cmd.add_option("--db", f.db, "Results database (SQLite)")->capture_default_str();
  cmd.add_flag("--json", f.json, "Print one JSON document on stdout");
  return dtypes_option;
}

jobs::CharacterizeJobOptions characterize_job_options(const CharacterizeFlags& f,
                                                      bool dtypes_named) {
  jobs::CharacterizeJobOptions o;
  o.workloads = chosen_workloads(f.workloads, f.suites);
  if (f.size != "suite" && f.size != "tiny")
    throw UsageError("--size must be suite or tiny, got '" + f.size + "'");
  if (f.threads < 0) throw UsageError("--threads must be at least 1");
  o.threads = f.threads == 0 ? default_threads() : f.threads;
  if (f.max_time < 0 || f.max_warmup_time < 0)
    throw UsageError("--max-time and --max-warmup-time must be positive");
  if (f.dtypes != "none" && !f.dtypes.empty()) {
    o.dtypes = parse_dtype_list(f.dtypes);
    o.dtypes.erase(std::remove(o.dtypes.begin(), o.dtypes.end(), Dtype::kFp32), o.dtypes.end());
  }
  o.dtypes_named = dtypes_named;
  o.quick = f.quick;
  o.name = f.name.empty() ? (f.quick ? "quick" : "full") : f.name;
  o.size = f.size;
  o.max_time = f.max_time;
  o.max_warmup_time = f.max_warmup_time;
  o.seed = f.seed;
  o.db = f.db;
  return o;
}

}  // namespace

void add_characterize_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "characterize",
      "The main job: throughput, operator profile, memory mix and precisions of each workload, "
      "stored as it goes (rerun to resume)");
  auto f = std::make_shared<CharacterizeFlags>();
  auto* dtypes_option = declare_characterize_options(*cmd, *f);
  cmd->callback([f, dtypes_option, &exit_code] {
    const auto result =
        jobs::run_characterize_job(characterize_job_options(*f, dtypes_option->count() > 0));
    if (result.failed > 0) exit_code = 1;
    print_result(
        f->json, [&] { return jobs::characterize_json(result); },
        [&](std::ostream& out) { jobs::print_characterize(result, out); });
  });
}

}  // namespace plumb::cli
