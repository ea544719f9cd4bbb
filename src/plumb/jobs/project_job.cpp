// plumb project's job (see project_job.h).
#include "plumb/jobs/project_job.h"

#include "plumb/jobs/layer_traffic_trace.h"

namespace plumb::jobs {

ProjectJobResult run_project_job(const Workload& w, const ProjectJobOptions& o) {
  const ModelTraffic t = trace_layer_traffic(w, o.config);
  std::vector<analysis::LayerDemand> demands;
  for (size_t i = 0; i < t.traffic.layers.size(); ++i) {
    const auto& l = t.traffic.layers[i];
    // Weights occupy on-chip memory once (their distinct elements); activations per step.
    demands.push_back({l.layer, l.ops, t.traffic.parameter_elements[i] * o.element_bytes,
                       l.activation_elements * o.element_bytes});
  }
  ProjectJobResult r{w.info.name,    o.config.get_int("batch"), o,
                     demands.size(), t.traffic.unmatched,       {}};
  for (double gbs : o.onchip_gbs) {
    for (double mb : o.onchip_mb) {
      const analysis::Accelerator acc{o.peak_tops * 1e12, o.dram_gbs * 1e9, mb * 1e6, gbs * 1e9};
      r.points.push_back({mb, gbs, acc, analysis::project(demands, acc)});
    }
  }
  return r;
}

}  // namespace plumb::jobs
