// How plumb's reading commands scale with the size of the results store (issue 27: a store of
// 10,000 runs with their samples and 200 profiles; none of report, compare and export above
// 30 s). Builds such a store from one real measured run and one real profile of a small
// workload, stored again and again under 10 workload names and 50 tags, then times the
// plumb binary reading it. Run on an idle machine:
//   ./build/bench/plumb_bench_store_scale ./build/plumb [RUNS=10000] [PROFILES=200] [DB]
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "plumb/platform/environment.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace {

using namespace plumb;
using Clock = std::chrono::steady_clock;

// Seconds `command` took; exits the bench when it fails.
double timed(const std::string& command) {
  const auto start = Clock::now();
  const int status = std::system(command.c_str());
  const double s = seconds_since(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "failed: %s\n", command.c_str());
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUMB_BINARY [RUNS] [PROFILES] [DB]\n", argv[0]);
    return 2;
  }
  const std::string plumb = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 10000;
  const int profiles = argc > 3 ? std::atoi(argv[3]) : 200;
  const std::string db = argc > 4 ? argv[4] : "/tmp/plumb_store_scale.db";
  for (const char* side : {"", "-wal", "-shm"}) std::filesystem::remove(db + side);

  const Workload& w = workloads::default_registry().get("autoenc");
  run::RunOptions o;
  o.workload = w.info.name;
  o.mode = Mode::kTrain;
  o.config = w.default_config();
  o.config.apply_settings({"batch=8", "hidden=16", "latent=4"});
  o.max_time_s = 1;
  o.min_samples = 200;
  o.target_ci = 0.001;  // sample to the budget, then keep 200 samples per run
  run::RunResult result = run::run_workload(w, o);
  if (result.samples_s.size() > 200) result.samples_s.resize(200);  // a long run's count
  const auto env = platform::capture_environment(1);
  const auto profile = profile::profile_workload(w, o, 3);
  const std::vector<std::string> names = {"autoenc",  "paradnn_fc", "paradnn_cnn", "paradnn_rnn",
                                          "resnet50", "vgg16",      "alexnet",     "seq2seq",
                                          "memnet",   "dlrm"};
  auto store = store::ResultsStore::open(db);
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    run::RunOptions stored = o;
    stored.workload = names[static_cast<size_t>(i) % names.size()];
    store->save_run(stored, result, env, "tag" + std::to_string(i % 50));
  }
  for (int i = 0; i < profiles; ++i)
    store->save_profile(o, profile, env, "group" + std::to_string(i % 20),
                        "tag" + std::to_string(i % 50));
  const double build_s = seconds_since(start);
  store.reset();
  std::printf(
      "store: %d runs of %zu samples, %d profiles of %zu operators; built in %.1f s, "
      "%.1f MB\n",
      runs, result.samples_s.size(), profiles, profile.profile.ops.size(), build_s,
      static_cast<double>(std::filesystem::file_size(db)) / 1e6);
  const std::string quiet = " >/dev/null 2>&1";
  std::printf("%-32s %8s\n", "command", "seconds");
  std::printf("%-32s %8.2f\n", "report",
              timed(plumb + " report --db " + db + " -o /tmp/plumb_store_scale.html" + quiet));
  // Against a copy of itself: every run matched with its twin.
  const std::string copy = db + ".copy";
  std::filesystem::copy_file(db, copy, std::filesystem::copy_options::overwrite_existing);
  std::printf("%-32s %8.2f\n", "compare (with a copy of itself)",
              timed(plumb + " compare " + db + " " + copy + quiet));
  std::printf("%-32s %8.2f\n", "export --format json",
              timed(plumb + " export --format json --db " + db + quiet));
  std::printf("%-32s %8.2f\n", "export --format csv (runs)",
              timed(plumb + " export --format csv --table runs --db " + db + quiet));
  std::printf("%-32s %8.2f\n", "export --format csv (samples)",
              timed(plumb + " export --format csv --table samples --db " + db + quiet));
  return 0;
}
