// plumb project: the Facebook paper's Fig. 3 — a workload's inference projected onto a
// hypothetical accelerator (peak ops/s, DRAM bandwidth, on-chip memory of a given capacity
// and bandwidth) with a per-layer roofline and greedy on-chip allocation. Lists of on-chip
// capacities and bandwidths give the figure's curves. The work is jobs/project_job, printed by
// jobs/project_report.
#include <memory>
#include <ostream>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/core/errors.h"
#include "plumb/jobs/project_job.h"
#include "plumb/jobs/project_report.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct ProjectFlags {
  double peak_tops = 100;  // the paper's hypothetical accelerator: 100 TOP/s ...
  double dram_gbs = 100;   // ... 100 GB/s DRAM ...
  std::string onchip_mb = "0,1,2,4,8,16,32,64,128,256";
  std::string onchip_gbs = "1000,10000";  // ... 1 TB/s (solid) and 10 TB/s (dashed)
  double element_bytes = 1;               // int8 parameters and activations, as in the paper
  bool layers = false;
  bool json = false;
};

}  // namespace

void add_project_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "project", "Project a workload's inference onto a hypothetical accelerator (Fig. 3)");
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<ProjectFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--peak-tops", f->peak_tops, "Accelerator peak, tera-ops/s")
      ->capture_default_str();
  cmd->add_option("--dram-gbs", f->dram_gbs, "Off-chip bandwidth, GB/s")->capture_default_str();
  cmd->add_option("--onchip-mb", f->onchip_mb, "On-chip capacities, MB (list)")
      ->capture_default_str();
  cmd->add_option("--onchip-gbs", f->onchip_gbs, "On-chip bandwidths, GB/s (list)")
      ->capture_default_str();
  cmd->add_option("--element-bytes", f->element_bytes,
                  "Bytes per weight/activation element on the accelerator (1 = int8)")
      ->capture_default_str();
  cmd->add_flag("--layers", f->layers, "Show per-layer placement and bound");
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  add_config_options(*cmd, *overrides);
  cmd->callback([name, f, overrides] {
    const Workload& w = workloads::default_registry().get(*name);
    if (!(f->peak_tops > 0) || !(f->dram_gbs > 0) || !(f->element_bytes > 0))
      throw UsageError("--peak-tops, --dram-gbs and --element-bytes must be positive");
    jobs::ProjectJobOptions job;
    job.onchip_mb = parse_number_list("--onchip-mb", f->onchip_mb, 0, false);
    job.onchip_gbs = parse_number_list("--onchip-gbs", f->onchip_gbs, 0, true);
    job.config = resolve_config(w, *overrides);
    if (!overrides->batch_given) job.config.set_int("batch", 1);  // Fig. 3: one inference
    job.peak_tops = f->peak_tops;
    job.dram_gbs = f->dram_gbs;
    job.element_bytes = f->element_bytes;
    const jobs::ProjectJobResult result = jobs::run_project_job(w, job);
    print_result(
        f->json, [&] { return jobs::project_json(result, f->layers); },
        [&](std::ostream& out) { jobs::print_project(out, result, f->layers); });
  });
}

}  // namespace plumb::cli
