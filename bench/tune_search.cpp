// plumb tune's search against an exhaustive grid over the same space (issue 26's target: the
// search reaches 95% of the grid's best configuration's speed in under a third of the grid's
// time). Both use plumb's trials (run/tune_trials.h); the grid gives every point as many timed
// steps as the search's longest rung gave its finalist, so both answers rest on trials of the
// same length. The two picks are then measured to steady state, alternately, twice each. Run
// on an idle machine:
//   ./build/bench/plumb_bench_tune_search W infer|train BATCH THREADS [DTYPES=bf16,int8]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plumb/analysis/tune_search.h"
#include "plumb/platform/blas_check.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/run/tune_trials.h"
#include "plumb/workloads/all_workloads.h"

namespace {

using namespace plumb;

double steady_throughput(const Workload& w, const run::RunOptions& o) {
  const auto r = run::run_workload(w, o);
  return r.status == run::RunStatus::kOk ? r.throughput : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The GEMMs on the kernels plumb itself runs them on (blas_check.h).
  const std::string restart =
      platform::restart_with_matching_openblas_kernels(platform::detect_blas(), argv);
  if (!restart.empty()) std::fprintf(stderr, "%s\n", restart.c_str());
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s WORKLOAD infer|train BATCH THREADS [DTYPES]\n", argv[0]);
    return 2;
  }
  const Workload& w = workloads::default_registry().get(argv[1]);
  run::RunOptions stock;
  stock.workload = w.info.name;
  stock.mode = parse_mode(argv[2]);
  stock.config = w.default_config();
  stock.config.set_int("batch", std::atoll(argv[3]));
  stock.threads = std::atoi(argv[4]);
  stock.max_time_s = 20;
  stock.max_warmup_s = 30;
  run::TuneSpaceRequest request;
  request.dtypes = parse_dtype_list(argc > 5 ? argv[5] : "bf16,int8");
  request.has_convolutions = run::has_convolution_weights(w, stock);
  const run::TuneSpace space = run::make_tune_space(stock, request);
  const auto points = analysis::all_points(space.factors);
  std::printf("%s %s batch %s threads %d: %zu points\n", argv[1], argv[2], argv[3], stock.threads,
              points.size());

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  run::TrialRunner search_trials(w, space);
  analysis::HalvingOptions o;
  o.budget_s = 3600;  // the search runs to its finalist: its own time is the figure
  const auto search = analysis::successive_halving(points, search_trials, o);
  const double search_s = seconds_since(start);
  if (search.ranking.empty()) {
    std::fprintf(stderr, "the search found no configuration: %s\n", search.stop_reason.c_str());
    return 1;
  }
  const size_t search_pick = search.ranking.front();
  const size_t steps = search.rungs.back().steps;

  start = Clock::now();
  run::TrialRunner grid_trials(w, space);
  const auto grid = grid_trials(points, steps);
  const double grid_s = seconds_since(start);
  size_t grid_pick = 0;
  for (size_t i = 0; i < grid.size(); ++i)
    if (grid[i].outcome.ok() && grid[i].throughput > grid[grid_pick].throughput) grid_pick = i;

  const auto search_options = run::options_at(space, points[search_pick]);
  const auto grid_options = run::options_at(space, points[grid_pick]);
  double search_thr = 0, grid_thr = 0;
  for (int round = 0; round < 2; ++round) {
    search_thr += steady_throughput(w, search_options) / 2;
    grid_thr += search_pick == grid_pick ? 0 : steady_throughput(w, grid_options) / 2;
  }
  if (search_pick == grid_pick) grid_thr = search_thr;
  std::printf("search: %zu trials in %.1f s, %zu rungs (longest %zu steps), pick: %s\n",
              search.trials, search_s, search.rungs.size(), steps,
              analysis::point_text(space.factors, points[search_pick]).c_str());
  std::printf("grid:   %zu trials of %zu steps in %.1f s, pick: %s\n", points.size(), steps, grid_s,
              analysis::point_text(space.factors, points[grid_pick]).c_str());
  std::printf("steady state (2 runs each, alternating): search's pick %.2f, grid's pick %.2f %s\n",
              search_thr, grid_thr, w.info.throughput_unit.c_str());
  std::printf("search/grid speed %.3f (target >= 0.95), search/grid time %.3f (target < 0.333)\n",
              search_thr / grid_thr, search_s / grid_s);
  return 0;
}
