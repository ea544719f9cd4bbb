// plumb dist's results as JSON and as text tables (dist_report.h). The JSON keys and their
// order are the stored and printed format: a world's document in the store is dist_world_json's.
#include "plumb/jobs/dist_report.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_bytes;
using report::format_number;
using report::format_percent;
using report::format_seconds;

// One world's row; a failed world shows its status and message.
std::vector<std::string> dist_world_row(const DistWorld& w) {
  const run::DataParallelResult& t = w.result.training;
  const std::string workers = std::to_string(t.workers);
  if (!w.figures) {
    std::vector<std::string> row = {w.link_name(), workers, run::status_name(t.status), t.message};
    row.resize(12);  // the figures' columns stay empty
    return row;
  }
  const DistWorldFigures& f = *w.figures;
  // GPU workers: the GPU memory LibTorch allocated, and the host's resident set beside it.
  const std::string host = format_bytes(static_cast<double>(t.peak_rss_bytes));
  const double gpu = static_cast<double>(t.peak_device_bytes);
  return {w.link_name(),
          workers,
          "ok",
          fmt::format("{} {}", format_number(f.throughput, 2), t.throughput_unit),
          f.efficiency
              ? fmt::format("{} ({}..{})", format_percent(f.efficiency->value),
                            format_percent(f.efficiency->low), format_percent(f.efficiency->high))
              : "-",
          format_seconds(f.step.mean),
          format_seconds(f.compute_s),
          fmt::format("{} ({})", format_seconds(f.exposed_communication_s),
                      format_percent(f.exposed_share)),
          format_seconds(f.overlapped_communication_s),
          format_bytes(f.bytes_sent_per_worker_per_step),
          f.step_allreduce ? format_bytes(f.step_allreduce->bus_bytes_per_s) + "/s" : "-",
          gpu > 0 ? fmt::format("{} GPU + {} host", format_bytes(gpu), host) : host};
}

}  // namespace

nlohmann::ordered_json dist_world_json(const DistWorld& w) {
  nlohmann::ordered_json out = dist_worker_json(w.result);
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

nlohmann::ordered_json dist_result_json(const DistResult& r) {
  nlohmann::ordered_json worlds = nlohmann::ordered_json::array();
  for (const auto& w : r.worlds) {
    worlds.push_back(dist_world_json(w));
    worlds.back()["id"] = w.id;
  }
  return {{"workload", r.workload}, {"spec", nlohmann::json(r.spec)}, {"worlds", worlds}};
}

nlohmann::ordered_json dist_projection_json(const DistProjectionResult& p) {
  const analysis::DistModel& m = p.model;
  nlohmann::ordered_json out = {{"workload", p.workload},
                                {"model",
                                 {{"compute_s", m.compute_s},
                                  {"compute_from", m.compute_source},
                                  {"backward_s", m.backward_s},
                                  {"buckets", m.launches.size()},
                                  {"cpu_bytes_per_s", m.cpu_bytes_per_s},
                                  {"link_efficiency", m.link_efficiency},
                                  {"latency_s", p.latency_s}}},
                                {"anchors", nlohmann::ordered_json::array()},
                                {"projection", nlohmann::ordered_json::array()}};
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

// The text reporter of a measurement: one row per world, each world's split per worker, its
// all-reduce sweep, where it was stored.
void print_dist_result(std::ostream& out, const DistResult& r) {
  report::TextTable t({"link", "workers", "status", "throughput", "efficiency", "step", "compute",
                       "exposed comm", "overlapped comm", "sent/worker/step", "allreduce busbw",
                       "memory/worker"});
  for (const auto& w : r.worlds) t.add_row(dist_world_row(w));
  t.print(out);
  for (const auto& w : r.worlds) {
    const run::DataParallelResult& training = w.result.training;
    if (training.ranks.size() < 2) continue;
    out << fmt::format("\neach worker's own step, {} workers, link {} (means; {} clock):\n",
                       training.workers, w.link_name(),
                       w.result.device == "cpu" ? "host" : "device");
    report::TextTable k({"rank", "step", "compute", "exposed comm", "overlapped comm"});
    for (const auto& x : training.ranks)
      k.add_row({std::to_string(x.rank), format_seconds(x.step_s), format_seconds(x.compute_s()),
                 fmt::format("{} ({})", format_seconds(x.exposed_s),
                             format_percent(x.step_s > 0 ? x.exposed_s / x.step_s : 0)),
                 format_seconds(x.overlapped_s())});
    k.print(out);
  }
  for (const auto& w : r.worlds) {
    if (w.result.allreduce.empty()) continue;
    out << fmt::format("\nall-reduce alone, {} workers (fp32, the slowest worker):\n",
                       w.result.training.workers);
    report::TextTable a({"bytes", "time", "algbw", "busbw"});
    for (const auto& s : w.result.allreduce)
      a.add_row({format_bytes(static_cast<double>(s.bytes)), format_seconds(s.seconds),
                 format_bytes(s.algorithm_bytes_per_s) + "/s",
                 format_bytes(s.bus_bytes_per_s) + "/s"});
    a.print(out);
  }
  out << fmt::format("stored as {} in {}\n",
                     r.worlds.size() == 1 ? "world " + std::to_string(r.worlds[0].id)
                                          : fmt::format("{} worlds", r.worlds.size()),
                     r.db_path);
}

// The text reporter of a projection: the model, its error on the measured worlds, the table.
void print_dist_projection(std::ostream& out, const DistProjectionResult& p) {
  const analysis::DistModel& m = p.model;
  out << fmt::format(
      "model of {}: compute {} per step (from {}), backward {}, {} buckets; all-reduce in the "
      "step reached {}/s over the loopback (the CPU's limit here), {:.0f}% of a shaped link's "
      "rate; latency {} per ring step\n\n",
      p.workload, format_seconds(m.compute_s), m.compute_source, format_seconds(m.backward_s),
      m.launches.size(), format_bytes(m.cpu_bytes_per_s), 100 * m.link_efficiency,
      format_seconds(p.latency_s));
  report::TextTable a({"measured world", "step measured", "step modelled", "error"});
  for (const auto& x : p.anchors)
    a.add_row({fmt::format("{} workers, link {}", x.measured.workers, x.measured.link),
               format_seconds(x.measured.step_s), format_seconds(x.modelled.step_s),
               format_percent(x.step_error())});
  a.print(out);
  out << "\nprojection (a model, not a measurement):\n";
  report::TextTable t({"workers", "link", "all-reduce bw", "communication", "exposed", "step",
                       "throughput", "efficiency"});
  for (const auto& q : p.projection)
    t.add_row({std::to_string(q.workers), fmt::format("{} Gbit/s", p.link_gbps),
               format_bytes(q.beta_bytes_per_s) + "/s" + (q.cpu_bound ? " (CPU)" : ""),
               format_seconds(q.communication_s), format_seconds(q.exposed_s),
               format_seconds(q.step_s), format_number(q.throughput, 2),
               format_percent(q.efficiency)});
  t.print(out);
}

}  // namespace plumb::jobs
