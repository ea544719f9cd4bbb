// plumb dist's results as JSON (dist_report.h). The keys and their order are the stored and
// printed format: a world's document in the store is dist_world_json's.
#include "plumb/jobs/dist_report.h"

#include "plumb/core/json_number.h"

namespace plumb::jobs {

using json = nlohmann::ordered_json;

json dist_world_json(const DistWorld& w) {
  json out = dist_worker_json(w.result);
  if (w.link) out["link"] = *w.link;
  if (!w.figures) return out;
  const DistWorldFigures& f = *w.figures;
  out["step"] = {{"mean_s", f.step.mean}, {"ci_rel", json_number(f.step.ci_rel)}, {"n", f.step.n}};
  out["throughput"] = f.throughput;
  out["split"] = {{"compute_s", f.compute_s},
                  {"exposed_communication_s", f.exposed_communication_s},
                  {"overlapped_communication_s", f.overlapped_communication_s},
                  {"exposed_share", f.exposed_share}};
  out["bytes_sent_per_worker_per_step"] = f.bytes_sent_per_worker_per_step;
  if (f.step_allreduce)
    out["step_allreduce"] = {{"algorithm_bytes_per_s", f.step_allreduce->algorithm_bytes_per_s},
                             {"bus_bytes_per_s", f.step_allreduce->bus_bytes_per_s}};
  if (f.efficiency)
    out["efficiency"] = {
        {"value", f.efficiency->value}, {"low", f.efficiency->low}, {"high", f.efficiency->high}};
  return out;
}

json dist_result_json(const DistResult& r) {
  json worlds = json::array();
  for (const auto& w : r.worlds) {
    worlds.push_back(dist_world_json(w));
    worlds.back()["id"] = w.id;
  }
  return {{"workload", r.workload}, {"spec", nlohmann::json(r.spec)}, {"worlds", worlds}};
}

json dist_projection_json(const DistProjectionResult& p) {
  const analysis::DistModel& m = p.model;
  json out = {{"workload", p.workload},
              {"model",
               {{"compute_s", m.compute_s},
                {"compute_from", m.compute_source},
                {"backward_s", m.backward_s},
                {"buckets", m.launches.size()},
                {"cpu_bytes_per_s", m.cpu_bytes_per_s},
                {"link_efficiency", m.link_efficiency},
                {"latency_s", p.latency_s}}},
              {"anchors", json::array()},
              {"projection", json::array()}};
  for (const auto& a : p.anchors)
    out["anchors"].push_back({{"workers", a.measured.workers},
                              {"link", a.measured.link},
                              {"measured_step_s", a.measured.step_s},
                              {"model_step_s", a.modelled.step_s},
                              {"error", a.step_error()},
                              {"measured_throughput", a.measured.throughput},
                              {"model_throughput", a.modelled.throughput}});
  for (const auto& q : p.projection)
    out["projection"].push_back({{"workers", q.workers},
                                 {"link_gbps", p.link_gbps},
                                 {"beta_bytes_per_s", q.beta_bytes_per_s},
                                 {"cpu_bound", q.cpu_bound},
                                 {"communication_s", q.communication_s},
                                 {"exposed_s", q.exposed_s},
                                 {"step_s", q.step_s},
                                 {"throughput", q.throughput},
                                 {"efficiency", q.efficiency}});
  return out;
}

}  // namespace plumb::jobs
