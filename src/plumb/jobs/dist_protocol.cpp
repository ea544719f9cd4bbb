// A worker's result as JSON and back (dist_protocol.h). The two functions list the same fields
// in the same order: what one writes the other reads.
#include "plumb/jobs/dist_protocol.h"

namespace plumb::jobs {

nlohmann::ordered_json dist_worker_json(const DistWorkerResult& r) {
  const run::DataParallelResult& t = r.training;
  nlohmann::ordered_json out = {{"workers", t.workers},
                                {"device", r.device},
                                {"backend", r.backend},
                                {"status", run::status_name(t.status)},
                                {"message", t.message},
                                {"batch_per_worker", r.batch_per_worker},
                                {"step_s", t.step_s},
                                {"backward_s", t.backward_s},
                                {"exposed_s", t.exposed_s},
                                {"busy_s", t.busy_s},
                                {"buckets", t.buckets},
                                {"gradient_bytes", t.gradient_bytes},
                                {"units_per_step", t.units_per_step},
                                {"unit", t.throughput_unit},
                                {"peak_rss_bytes", t.peak_rss_bytes},
                                {"peak_device_bytes", t.peak_device_bytes},
                                {"notes", t.notes}};
  out["sample_buckets"] = nlohmann::ordered_json::array();
  for (const auto& b : t.sample_buckets)
    out["sample_buckets"].push_back(
        {{"bytes", b.bytes}, {"launched_s", b.launched_s}, {"done_s", b.done_s}});
  out["ranks"] = nlohmann::ordered_json::array();
  for (const auto& k : t.ranks)
    out["ranks"].push_back(
        {{"rank", k.rank}, {"step_s", k.step_s}, {"exposed_s", k.exposed_s}, {"busy_s", k.busy_s}});
  out["allreduce"] = nlohmann::ordered_json::array();
  for (const auto& a : r.allreduce)
    out["allreduce"].push_back({{"bytes", a.bytes},
                                {"repetitions", a.repetitions},
                                {"seconds", a.seconds},
                                {"algorithm_bytes_per_s", a.algorithm_bytes_per_s},
                                {"bus_bytes_per_s", a.bus_bytes_per_s}});
  return out;
}

DistWorkerResult dist_worker_from_json(const nlohmann::ordered_json& j) {
  DistWorkerResult r;
  run::DataParallelResult& t = r.training;
  t.workers = j.at("workers").get<int>();
  r.device = j.at("device").get<std::string>();
  r.backend = j.at("backend").get<std::string>();
  // A name the worker did not write would be a different binary's: an error, as the store does.
  t.status =
      run::status_from_name(j.at("status").get<std::string>()).value_or(run::RunStatus::kError);
  t.message = j.at("message").get<std::string>();
  r.batch_per_worker = j.at("batch_per_worker").get<int64_t>();
  t.step_s = j.at("step_s").get<std::vector<double>>();
  t.backward_s = j.at("backward_s").get<std::vector<double>>();
  t.exposed_s = j.at("exposed_s").get<std::vector<double>>();
  t.busy_s = j.at("busy_s").get<std::vector<double>>();
  t.buckets = j.at("buckets").get<size_t>();
  t.gradient_bytes = j.at("gradient_bytes").get<int64_t>();
  t.units_per_step = j.at("units_per_step").get<double>();
  t.throughput_unit = j.at("unit").get<std::string>();
  t.peak_rss_bytes = j.at("peak_rss_bytes").get<int64_t>();
  t.peak_device_bytes = j.at("peak_device_bytes").get<int64_t>();
  t.notes = j.at("notes").get<std::vector<std::string>>();
  for (const auto& b : j.at("sample_buckets"))
    t.sample_buckets.push_back({b.at("bytes").get<int64_t>(), b.at("launched_s").get<double>(),
                                b.at("done_s").get<double>()});
  // A world stored before the per-rank split has none.
  for (const auto& k : j.value("ranks", nlohmann::ordered_json::array()))
    t.ranks.push_back({k.at("rank").get<int>(), k.at("step_s").get<double>(),
                       k.at("exposed_s").get<double>(), k.at("busy_s").get<double>()});
  for (const auto& a : j.at("allreduce"))
    r.allreduce.push_back({a.at("bytes").get<int64_t>(), a.at("repetitions").get<int>(),
                           a.at("seconds").get<double>(),
                           a.at("algorithm_bytes_per_s").get<double>(),
                           a.at("bus_bytes_per_s").get<double>()});
  return r;
}

}  // namespace plumb::jobs
