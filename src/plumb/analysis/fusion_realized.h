// A fused-kernel check (profile/fused_kernels.h) set beside the projection plumb would have made
// for it: the unfused sequence's own graph projected as one fused kernel on the same roofs. The
// saving is compared as a fraction of each side's unfused time (roofline vs measured), so the
// projection's error is stated in percentage points; a gap is a finding about the engine or the
// roofline, not a failure.
#pragma once

#include "plumb/analysis/fusion_mining.h"
#include "plumb/profile/fused_kernels.h"

namespace plumb::analysis {

struct RealizedFusion {
  GroupProjection projection;     // the unfused graph, every node in one group
  double projected_fraction = 0;  // 1 - after / before (roofline)
  double realized_fraction = 0;   // 1 - fused / unfused (measured medians)
  double realized_saving_s = 0;   // unfused - fused, per call
  double error_points = 0;        // 100 x (projected - realized fraction)
};

RealizedFusion realized_fusion(const profile::FusedKernelCheck& check, const Ceilings& ceilings);

}  // namespace plumb::analysis
