// plumb command-line entry point: builds the CLI11 app, maps errors to exit codes
// (0 ok, 1 a run failed or plumb compare found a slowdown, 2 bad usage, 3 a result measured but
// not stored) and prints one actionable line for bad input.
#include <algorithm>
#include <iostream>
#include <string>

#include <c10/util/Exception.h>
#include <CLI/CLI.hpp>

#include "plumb/cli/commands.h"
#include "plumb/core/errors.h"
#include "plumb/core/version.h"
#include "plumb/platform/blas_check.h"
#include "plumb/platform/memory_cap.h"
#ifdef PLUMB_WITH_DIST
#include "plumb/run/process_group.h"
#endif

namespace {

// A data-parallel world's workers on this machine, each of which gets its share of the memory
// cap; 1 outside a world. A malformed world is the command's to report, not this check's.
int processes_sharing_memory() {
#ifdef PLUMB_WITH_DIST
  try {
    if (const auto world = plumb::run::world_from_environment())
      return std::max(1, world->local_size);
  } catch (const std::exception&) {
  }
#endif
  return 1;
}

// Commands that only read the store or describe a workload: they run no timed matrix product,
// so they do not pay a second LibTorch load for OpenBLAS's kernels (about 0.6 s on the VM).
bool runs_timed_work(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;  // --help, --version
  const std::string command = argv[1];
  for (const char* reader : {"list", "info", "export", "report", "compare", "merge"})
    if (command == reader) return false;
  return true;
}

// What a command that times work needs first: OpenBLAS's own kernels, a warning where BLAS is the
// reference one, and the memory cap. Reads the CPU's features, so a bad PLUMB_CPU_FEATURES_OFF
// surfaces here as a UsageError.
void prepare_for_timed_work(char** argv) {
  const auto blas = plumb::platform::detect_blas();
  const std::string restart = plumb::platform::restart_with_matching_openblas_kernels(blas, argv);
  if (!restart.empty()) std::cerr << restart << '\n';
  // A reference BLAS makes every number wrong: say so before anything is measured.
  const std::string warning = plumb::platform::blas_warning(blas);
  if (!warning.empty()) std::cerr << warning << '\n';
  // A batch too large for the machine then fails its allocation (an out-of-memory run that
  // says so) instead of being killed by the kernel later, mid-suite.
  const std::string cap =
      plumb::platform::cap_data_segment_to_available_memory(processes_sharing_memory());
  if (!cap.empty()) std::cerr << "warning: " << cap << '\n';
}

// Every command, in the order plumb --help lists them.
void add_commands(CLI::App& app, int& exit_code) {
  plumb::cli::add_list_command(app);
  plumb::cli::add_info_command(app);
  plumb::cli::add_run_commands(app, exit_code);
  plumb::cli::add_profile_command(app, exit_code);
  plumb::cli::add_memory_command(app, exit_code);
  plumb::cli::add_sweep_commands(app, exit_code);
  plumb::cli::add_analyze_command(app, exit_code);
  plumb::cli::add_probe_command(app);
  plumb::cli::add_roofline_command(app, exit_code);
  plumb::cli::add_project_command(app);
  plumb::cli::add_compare_command(app, exit_code);
  plumb::cli::add_precision_command(app, exit_code);
  plumb::cli::add_gemm_command(app, exit_code);
  plumb::cli::add_characterize_command(app, exit_code);
  plumb::cli::add_serve_command(app, exit_code);
  plumb::cli::add_tune_command(app, exit_code);
#ifdef PLUMB_WITH_DIST
  plumb::cli::add_dist_command(app, exit_code);
#endif
  plumb::cli::add_export_command(app);
  plumb::cli::add_report_command(app);
}

// An error's one line on stderr, "plumb: <what>", and the exit status it maps to.
int error_status(const std::string& what, int status) {
  std::cerr << "plumb: " << what << '\n';
  return status;
}

// Parses and runs the command; an error becomes its exit status and one line on stderr.
int run_command(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return error_status(std::string(e.what()) + " (see plumb --help)", 2);
  } catch (const plumb::SaveError& e) {
    // Not bad usage: the work was done and its figures are in the message.
    return error_status(e.what(), 3);
  } catch (const plumb::UsageError& e) {
    return error_status(e.what(), 2);
  } catch (const c10::Error& e) {
    return error_status(std::string("LibTorch error: ") + e.what_without_backtrace(), 1);
  } catch (const std::exception& e) {
    return error_status(e.what(), 1);
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS chose its kernels when it loaded; on a CPU it did not recognise they are the slow
  // generic ones, and the fix needs a fresh start (blas_check.h). Returns when none is needed.
  if (runs_timed_work(argc, argv)) {
    try {
      prepare_for_timed_work(argv);
    } catch (const plumb::UsageError& e) {
      std::cerr << "plumb: " << e.what() << '\n';
      return 2;
    }
  }
  CLI::App app{"plumb: runs real deep-learning workloads and explains how they use the hardware"};
  app.require_subcommand(1);
  // A flag given twice takes its last value, so scripts can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag(
      "--version", std::string(plumb::plumb_version()) + " (" + plumb::plumb_git_commit() + ")");
  int exit_code = 0;
  add_commands(app, exit_code);
  return run_command(app, argc, argv, exit_code);
}
