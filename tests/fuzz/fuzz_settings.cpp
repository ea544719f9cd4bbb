// Fuzz target: `--set key=value` and `--grid key=v1,v2` text. The first line picks the form
// and the rest are the arguments: settings applied to a workload's config, or a grid (and
// sets) turned into a sweep and validated. Only UsageError may escape.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_workload.h"
#include "plumb/core/errors.h"
#include "plumb/run/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const plumb::Workload workload = plumb::fuzz::fuzz_workload();
  std::vector<std::string> lines = plumb::fuzz::input_lines(data, size);
  const bool as_grid = !lines.front().empty() && lines.front()[0] == 'g';
  lines.erase(lines.begin());
  try {
    if (as_grid) {
      const size_t half = lines.size() / 2;
      const std::vector<std::string> grid(lines.begin(), lines.begin() + half);
      const std::vector<std::string> sets(lines.begin() + half, lines.end());
      const plumb::run::SweepSpec spec = plumb::run::sweep_spec_from_grid("fuzz", grid, sets);
      plumb::run::validate_sweep_spec(spec, workload);
      for (const auto& point : plumb::run::expand(spec))
        (void)plumb::run::point_config(workload, spec, point);
    } else {
      plumb::Config config = workload.default_config();
      config.apply_settings(lines);
      (void)config.to_json();
      (void)config.differences_from(workload.default_config());
    }
  } catch (const plumb::UsageError&) {
  }
  return 0;
}
