// Projected vs realized fusion (see fusion_realized.h).
#include "plumb/analysis/fusion_realized.h"

#include <numeric>

namespace plumb::analysis {

RealizedFusion realized_fusion(const profile::FusedKernelCheck& check, const Ceilings& ceilings) {
  RealizedFusion r;
  std::vector<int> all(check.unfused_graph.nodes.size());
  std::iota(all.begin(), all.end(), 0);
  r.projection = project_group(check.unfused_graph, all, ceilings);
  r.projected_fraction =
      r.projection.before_s > 0 ? 1 - r.projection.after_s / r.projection.before_s : 0;
  r.realized_fraction = check.unfused_s > 0 ? 1 - check.fused_s / check.unfused_s : 0;
  r.realized_saving_s = check.unfused_s - check.fused_s;
  r.error_points = 100 * (r.projected_fraction - r.realized_fraction);
  return r;
}

}  // namespace plumb::analysis
