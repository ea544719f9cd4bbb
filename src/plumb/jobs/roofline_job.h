// plumb roofline's job (ParaDnn, Facebook DL inference): a workload's operators or layers, and
// its whole step, placed on this machine's measured roofs. Profiles the workload now (stored like
// plumb profile), reads the stored record back, and takes the roofs from the newest stored probe
// of this machine, measuring a quick one when there is none. Its reporters are in
// roofline_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/phase_profile.h"
#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"
#include "plumb/run/runner.h"

namespace plumb::jobs {

struct RooflineJobOptions {
  run::RunOptions run;                               // validated, one dtype
  analysis::GroupBy by = analysis::GroupBy::kLayer;  // op or layer
  analysis::PeakKind peak = analysis::PeakKind::kInstruction;
  int steps = 3;  // observed after warm-up
  // A generation's phase to place (cli/phase_option.h); nullopt: each phase on its own.
  std::optional<Phase> phase;
  bool refresh_probe = false;
  std::string db;
  std::string tag;
};

struct RooflineJobResult {
  run::RunStatus status = run::RunStatus::kOk;  // of the profiling pass; nothing placed unless ok
  std::string message;
  std::string workload, mode, dtype;
  int64_t batch = 0;
  int threads = 0;
  int64_t profile_id = 0;
  int64_t probe_id = 0;
  analysis::Ceilings ceilings;
  analysis::Placement step;               // the whole step
  std::vector<analysis::Placement> rows;  // by operator or layer, most expensive first
  // A generation (a generative model's inference step): `step` and `rows` are the phase asked
  // for (the whole step for both), and each phase shown is placed on its own: its time per step,
  // the phase as one item, and its operators or layers.
  struct PhasePlacements {
    analysis::PhaseTime time;
    analysis::Placement whole;
    std::vector<analysis::Placement> rows;
  };
  std::optional<Phase> phase;  // as asked for
  std::vector<PhasePlacements> phases;
};

RooflineJobResult run_roofline_job(const RooflineJobOptions& options,
                                   const run::ProgressFn& progress);

}  // namespace plumb::jobs
