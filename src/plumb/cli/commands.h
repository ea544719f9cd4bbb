// Sub-command registration for the plumb CLI. Each add_* function declares one command's
// options on `app` and the callback that executes it; callbacks throw UsageError for bad
// input and set `exit_code` to 1 when a workload run fails.
#pragma once

#include <CLI/CLI.hpp>

namespace plumb::cli {

void add_list_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_run_commands(CLI::App& app, int& exit_code);  // run, suite
void add_export_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_profile_command(CLI::App& app, int& exit_code);
void add_memory_command(CLI::App& app, int& exit_code);
void add_sweep_commands(CLI::App& app, int& exit_code);  // sweep, merge
void add_analyze_command(CLI::App& app, int& exit_code);
void add_analyze_similarity_command(CLI::App& analyze);              // analyze similarity
void add_analyze_fusion_command(CLI::App& analyze, int& exit_code);  // analyze fusion
void add_analyze_decode_command(CLI::App& analyze, int& exit_code);  // analyze decode
void add_probe_command(CLI::App& app);
void add_roofline_command(CLI::App& app, int& exit_code);
void add_project_command(CLI::App& app);
void add_compare_command(CLI::App& app, int& exit_code);  // exit 1: significant slowdown
void add_precision_command(CLI::App& app, int& exit_code);
void add_gemm_command(CLI::App& app, int& exit_code);          // GEMM shapes per precision
void add_characterize_command(CLI::App& app, int& exit_code);  // the main job, resumable
void add_serve_command(CLI::App& app, int& exit_code);         // inference under a latency bound
void add_tune_command(CLI::App& app, int& exit_code);          // tuning headroom
#ifdef PLUMB_WITH_DIST
void add_dist_command(CLI::App& app, int& exit_code);  // data-parallel training (c10d)
#endif

}  // namespace plumb::cli
