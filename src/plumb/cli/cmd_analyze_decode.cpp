// plumb analyze decode: parses the options of the decode roofline (jobs/decode_roofline_job.h:
// decode over model sizes fitted to the memory roof, or over batches, or over contexts), runs
// the job and prints its result.
#include <ostream>

#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/job_command.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/core/errors.h"
#include "plumb/core/mode.h"
#include "plumb/jobs/decode_roofline_report.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct DecodeFlags {
  MeasureFlags measure;
  ConfigOverrides overrides;
  std::string workload = "gpt2", sizes, batches, contexts;
  std::vector<std::string> size;
  jobs::DecodeRooflineOptions job;
};

std::vector<int64_t> int_list(const std::string& option, const std::string& text) {
  const auto values = parse_positive_int_list(option, text);
  return {values.begin(), values.end()};
}

jobs::DecodeRooflineOptions decode_options(const DecodeFlags& f) {
  if (!f.batches.empty() && !f.contexts.empty())
    throw UsageError("analyze decode sweeps one thing: give --batches or --contexts, not both");
  jobs::DecodeRooflineOptions o = f.job;
  o.workload = &workloads::default_registry().get(f.workload);
  const auto options =
      make_options(*o.workload, resolve_config(*o.workload, f.overrides), Mode::kInfer, f.measure);
  if (options.size() != 1) throw UsageError("analyze decode takes one --dtype");
  o.base = options.front();
  o.sizes = jobs::parse_decode_sizes(f.sizes, f.size);
  o.sweep = !f.batches.empty()    ? jobs::DecodeSweep::kBatches
            : !f.contexts.empty() ? jobs::DecodeSweep::kContexts
                                  : jobs::DecodeSweep::kSizes;
  if (o.sweep == jobs::DecodeSweep::kSizes && o.sizes.empty())
    o.sizes = jobs::default_decode_sizes(*o.workload);
  if (!f.batches.empty()) o.batches = int_list("--batches", f.batches);
  if (!f.contexts.empty()) o.contexts = int_list("--contexts", f.contexts);
  o.db = f.measure.db;
  if (!f.measure.tag.empty()) o.tag = f.measure.tag;
  return o;
}

void declare_decode_options(CLI::App& cmd, DecodeFlags& f) {
  cmd.add_option("workload", f.workload, "A generative workload (gpt2, llama, ...)")
      ->capture_default_str();
  cmd.add_option("--sizes", f.sizes,
                 "One key over sizes, KEY=V1,V2,V3 (default: the first three presets)");
  cmd.add_option("--size", f.size,
                 "One size as K=V,K=V (repeatable; the batch and context "
                 "sweeps take one)");
  cmd.add_option("--batches", f.batches, "Batch sweep over these batches, e.g. 1,2,4,8,16");
  cmd.add_option("--contexts", f.contexts, "Context sweep over these prompt lengths at batch 1");
  cmd.add_option("--prompt", f.job.prompt, "Prompt tokens per request")->capture_default_str();
  cmd.add_option("--gen", f.job.gen, "Output tokens per request")->capture_default_str();
  cmd.add_flag("--reuse", f.job.reuse_stored,
               "Take a stored run of exactly the same setting and tag instead of running it");
  cmd.add_flag("--refresh-probe", f.job.probe.refresh, "Probe this machine again");
  add_config_options(cmd, f.overrides, BatchOption::kNone);
  add_measure_options(cmd, f.measure, 10, 30);
  restrict_device_to_cpu(cmd, "the roofs are the probe's CPU bandwidths");
}

}  // namespace

void add_analyze_decode_command(CLI::App& analyze, int& exit_code) {
  add_job_command<DecodeFlags>(
      analyze, "decode",
      "Decode on the memory roof: tokens/s against bytes per token over model sizes (the "
      "bandwidth fit), batches (the ridge) or contexts (the KV cache)",
      declare_decode_options, [&exit_code](const DecodeFlags& f) {
        const auto result = jobs::run_decode_roofline(decode_options(f), print_progress);
        if (!result.all_ok) exit_code = 1;
        print_result(
            f.measure.json, [&] { return jobs::decode_roofline_json(result); },
            [&](std::ostream& out) { jobs::print_decode_roofline(result, out); });
      });
}

}  // namespace plumb::cli
