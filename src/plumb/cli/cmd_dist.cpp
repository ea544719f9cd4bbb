// plumb dist: data-parallel training of a workload across worker processes (TBD section E).
// Locally, plumb launches the workers itself, one world per --workers entry, each worker
// pinned to cores of its own (so oversubscription cannot pass for communication cost), and
// stops them all when one dies. In a job that torchrun or Slurm started, every process is a
// worker of that world (process_group.h reads the variables) and rank 0 reports. Per worker
// count: throughput, scaling efficiency against one worker, the step split into compute,
// communication it waited for (exposed) and communication hidden under backward (overlapped),
// the gradient bytes every worker sends, the bandwidth the all-reduces reached, the memory per
// worker; optionally the all-reduce sweep (1 KiB to 256 MiB, nccl-tests' bandwidths). Workers
// train on the CPU over Gloo, or with --device cuda one GPU each over NCCL.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/dist_projection.h"
#include "plumb/cli/byte_size.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/atomic_file.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/environment.h"
#include "plumb/run/data_parallel.h"
#include "plumb/run/process_group.h"
#include "plumb/run/runner.h"
#include "plumb/run/shaped_link.h"
#include "plumb/run/stats.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/store/rows.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Everything a worker needs, passed from the launcher in PLUMB_DIST_SPEC (JSON).
struct DistSpec {
  std::string workload;
  std::string device = "cpu";     // "cpu" (Gloo) or "cuda": GPU LOCAL_RANK per worker (NCCL)
  std::vector<std::string> sets;  // "key=value", batch included
  int threads_per_worker = 1;
  int64_t bucket_bytes = 25 << 20;
  bool overlap = true;
  int steps = 20, warmup_steps = 5;
  uint64_t seed = 0;
  int timeout_s = 120;
  bool allreduce_sweep = false;
};

// The spec travels as JSON (nlohmann::json: the macro converts that type only), field by
// field, named as in the struct; a field missing (a world stored before it existed) keeps
// its default.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DistSpec, workload, device, sets,
                                                threads_per_worker, bucket_bytes, overlap, steps,
                                                warmup_steps, seed, timeout_s, allreduce_sweep)

// The device a worker of `world` trains on: the CPU, or the GPU of its local rank.
std::string worker_device(const DistSpec& s, const run::WorldInfo& world) {
  return s.device == "cuda" ? fmt::format("cuda:{}", world.local_rank) : "cpu";
}

Config config_of(const Workload& w, const DistSpec& s) {
  Config c = w.default_config();
  c.apply_settings(s.sets);
  return c;
}

// Pins this process (and the threads it starts later) to `cpus`.
void pin_process(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    std::cerr << "plumb dist: could not pin the worker to its cores; timings may overlap\n";
}

// One worker's whole life in a world: join, train, (sweep), and rank 0's result as JSON.
json run_worker(const DistSpec& s, const run::WorldInfo& world) {
  const Workload& w = workloads::default_registry().get(s.workload);
  run::DataParallelOptions o;
  o.run.workload = w.info.name;
  o.run.mode = Mode::kTrain;
  o.run.config = config_of(w, s);
  o.run.threads = s.threads_per_worker;
  o.run.device = worker_device(s, world);
  o.run.seed = s.seed;
  o.bucket_bytes = s.bucket_bytes;
  o.overlap = s.overlap;
  o.steps = s.steps;
  o.warmup_steps = s.warmup_steps;
  run::validate_options(o.run);
  const c10::Device device = run::parse_device(o.run.device);
  const auto group = run::join_process_group(world, std::chrono::seconds(s.timeout_s), device);
  const auto r = run::train_data_parallel(w, o, group);
  json out = {{"workers", r.workers},
              {"device", s.device},
              {"backend", run::backend_for(device)},
              {"status", run::status_name(r.status)},
              {"message", r.message},
              {"batch_per_worker", o.run.config.get_int("batch")},
              {"step_s", r.step_s},
              {"backward_s", r.backward_s},
              {"exposed_s", r.exposed_s},
              {"busy_s", r.busy_s},
              {"buckets", r.buckets},
              {"gradient_bytes", r.gradient_bytes},
              {"units_per_step", r.units_per_step},
              {"unit", r.throughput_unit},
              {"peak_rss_bytes", r.peak_rss_bytes},
              {"peak_device_bytes", r.peak_device_bytes},
              {"notes", r.notes}};
  out["sample_buckets"] = json::array();
  for (const auto& b : r.sample_buckets)
    out["sample_buckets"].push_back(
        {{"bytes", b.bytes}, {"launched_s", b.launched_s}, {"done_s", b.done_s}});
  out["allreduce"] = json::array();
  // One worker has no peer: its all-reduce moves nothing (NCCL returns at once), so the sweep
  // would time a no-op and call it bandwidth.
  if (s.allreduce_sweep && r.status == run::RunStatus::kOk && r.workers > 1)
    for (const auto& a : run::allreduce_sweep(group, device, 1 << 10, 256 << 20))
      out["allreduce"].push_back({{"bytes", a.bytes},
                                  {"repetitions", a.repetitions},
                                  {"seconds", a.seconds},
                                  {"algorithm_bytes_per_s", a.algorithm_bytes_per_s},
                                  {"bus_bytes_per_s", a.bus_bytes_per_s}});
  run::leave_process_group(group, device);
  return out;
}

// Launches `workers` local worker processes of this binary and waits for them; rank 0's result.
// When one fails, the others are stopped and the reason is thrown.
json launch_local_world(const DistSpec& s, int workers, const fs::path& dir,
                        const run::ShapedLink* link) {
  const auto cpus = platform::allowed_cpus();
  const int port = run::free_loopback_port();
  const fs::path result = dir / fmt::format("rank0-{}.json", workers);
  std::map<pid_t, int> ranks;
  for (int r = 0; r < workers; ++r) {
    std::vector<int> mine(cpus.begin() + r * s.threads_per_worker,
                          cpus.begin() + (r + 1) * s.threads_per_worker);
    const pid_t pid = fork();
    if (pid < 0) throw run::DistError("cannot start a worker process (fork failed)");
    if (pid == 0) {
      if (link != nullptr && !link->enter()) {
        std::cerr << "plumb dist: worker could not enter network namespace " << link->name()
                  << '\n';
        _exit(1);
      }
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(workers).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("PLUMB_DIST_LAUNCHER", "1", 1);
      setenv("PLUMB_DIST_SPEC", json_text(nlohmann::json(s)).c_str(), 1);
      setenv("PLUMB_DIST_RESULT", result.c_str(), 1);
      std::vector<std::string> cpu_text;
      for (int c : mine) cpu_text.push_back(std::to_string(c));
      setenv("PLUMB_DIST_CPUS", join(cpu_text, ",").c_str(), 1);
      execl("/proc/self/exe", "plumb", "_dist-worker", static_cast<char*>(nullptr));
      _exit(127);
    }
    ranks[pid] = r;
  }
  std::string failure;
  bool refused = false;  // a worker exited with a usage error (its line is on stderr already)
  while (!ranks.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    const auto it = ranks.find(pid);
    if (it == ranks.end()) continue;
    const int rank = it->second;
    ranks.erase(it);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || !failure.empty()) continue;
    refused = WIFEXITED(status) && WEXITSTATUS(status) == 2;
    failure = WIFSIGNALED(status) ? fmt::format("worker rank {} of {} was killed by signal {}",
                                                rank, workers, WTERMSIG(status))
                                  : fmt::format("worker rank {} of {} exited with status {}", rank,
                                                workers, WEXITSTATUS(status));
    // The others would wait for it until the collective timeout: stop them now.
    for (const auto& [other, r] : ranks) kill(other, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      bool alive = false;
      for (const auto& [other, r] : ranks) alive = alive || waitpid(other, nullptr, WNOHANG) == 0;
      if (!alive) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (const auto& [other, r] : ranks) kill(other, SIGKILL);
  }
  if (refused)
    throw UsageError(
        fmt::format("the {} worker(s) refused the configuration (the reason is above)", workers));
  if (!failure.empty())
    throw run::DistError(failure + "; the other workers were stopped and nothing was stored");
  std::ifstream in(result);
  if (!in) throw run::DistError("rank 0 finished without writing its result");
  return json::parse(in);
}

// The figures of one world, from rank 0's result; `one` is the single-worker world (or null).
json summarize_world(const json& r, const json* one) {
  json s = r;
  const int workers = r.at("workers");
  if (r.at("status") != "ok") return s;
  const auto steps = r.at("step_s").get<std::vector<double>>();
  const auto exposed = r.at("exposed_s").get<std::vector<double>>();
  const auto busy = r.at("busy_s").get<std::vector<double>>();
  const auto t = run::summarize(steps);
  const double mean_exposed = run::summarize(exposed).mean;
  const double mean_busy = run::summarize(busy).mean;
  const double units = r.at("units_per_step");
  const double throughput = units / t.mean;
  const double bytes = r.at("gradient_bytes").get<double>();
  s["step"] = {{"mean_s", t.mean}, {"ci_rel", json_number(t.ci_rel)}, {"n", t.n}};
  s["throughput"] = throughput;
  s["split"] = {{"compute_s", t.mean - mean_exposed},
                {"exposed_communication_s", mean_exposed},
                {"overlapped_communication_s", std::max(0.0, mean_busy - mean_exposed)},
                {"exposed_share", mean_exposed / t.mean}};
  s["bytes_sent_per_worker_per_step"] = bytes * run::ring_traffic_factor(workers);
  if (workers > 1 && mean_busy > 0) {
    s["step_allreduce"] = {
        {"algorithm_bytes_per_s", bytes / mean_busy},
        {"bus_bytes_per_s", bytes / mean_busy * run::ring_traffic_factor(workers)}};
  }
  if (one != nullptr && one->at("status") == "ok") {
    const double base = one->at("throughput");
    const double rel =
        std::sqrt(std::pow(one->at("step").value("ci_rel", 0.0), 2) + std::pow(t.ci_rel, 2));
    const double eff = throughput / (workers * base);
    s["efficiency"] = {{"value", eff}, {"low", eff * (1 - rel)}, {"high", eff * (1 + rel)}};
  }
  return s;
}

// Stores one summarized world as it finishes (a later world that fails leaves it intact).
int64_t store_world(store::ResultsStore& db, const DistSpec& s, const json& w,
                    const std::string& tag, const std::string& started_at) {
  store::StoredDistWorld r;
  r.started_at = started_at;
  r.workload = s.workload;
  r.workers = w.at("workers");
  r.threads_per_worker = s.threads_per_worker;
  r.batch_per_worker = w.at("batch_per_worker");
  r.bucket_bytes = s.bucket_bytes;
  r.overlap = s.overlap;
  r.link = w.value("link", "none");  // "none": the machine's own loopback; else a shaped rate
  r.tag = tag;
  r.status = store::detail::status_from_name(w.at("status"));
  r.message = w.at("message");
  r.throughput_unit = w.at("unit");
  r.gradient_bytes = w.at("gradient_bytes");
  r.peak_rss_bytes = w.at("peak_rss_bytes");
  const double nan = std::nan("");
  const bool ok = r.status == run::RunStatus::kOk;
  r.throughput = ok ? w.at("throughput").get<double>() : nan;
  r.step_mean_s = ok ? w.at("step").at("mean_s").get<double>() : nan;
  r.step_ci_rel = ok ? w.at("step").value("ci_rel", nan) : nan;
  r.efficiency = ok && w.contains("efficiency") ? w["efficiency"]["value"].get<double>() : nan;
  r.compute_s = ok ? w.at("split").at("compute_s").get<double>() : nan;
  r.exposed_s = ok ? w.at("split").at("exposed_communication_s").get<double>() : nan;
  r.overlapped_s = ok ? w.at("split").at("overlapped_communication_s").get<double>() : nan;
  r.environment =
      platform::capture_environment(s.threads_per_worker, s.device == "cuda" ? "cuda:0" : "cpu");
  r.document = w;
  r.document["spec"] = nlohmann::json(s);
  return db.save_dist_world(r);
}

void print_worlds(const std::vector<json>& worlds) {
  Table t({"link", "workers", "status", "throughput", "efficiency", "step", "compute",
           "exposed comm", "overlapped comm", "sent/worker/step", "allreduce busbw",
           "memory/worker"});
  // GPU workers: the GPU memory LibTorch allocated, and the host's resident set beside it.
  const auto memory = [](const json& w) {
    const std::string host = format_bytes(w.at("peak_rss_bytes").get<double>());
    const double gpu = w.value("peak_device_bytes", 0.0);
    return gpu > 0 ? fmt::format("{} GPU + {} host", format_bytes(gpu), host) : host;
  };
  for (const auto& w : worlds) {
    if (w.at("status") != "ok") {
      t.add_row({w.value("link", "none"), std::to_string(w.at("workers").get<int>()),
                 w.at("status").get<std::string>(), w.at("message").get<std::string>(), "", "", "",
                 "", "", "", "", ""});
      continue;
    }
    const auto& split = w.at("split");
    const double step = w.at("step").at("mean_s");
    t.add_row(
        {w.value("link", "none"), std::to_string(w.at("workers").get<int>()), "ok",
         fmt::format("{} {}", format_number(w.at("throughput").get<double>(), 2),
                     w.at("unit").get<std::string>()),
         w.contains("efficiency")
             ? fmt::format("{} ({}..{})", format_percent(w["efficiency"]["value"].get<double>()),
                           format_percent(w["efficiency"]["low"].get<double>()),
                           format_percent(w["efficiency"]["high"].get<double>()))
             : "-",
         format_seconds(step), format_seconds(split.at("compute_s").get<double>()),
         fmt::format("{} ({})", format_seconds(split.at("exposed_communication_s").get<double>()),
                     format_percent(split.at("exposed_share").get<double>())),
         format_seconds(split.at("overlapped_communication_s").get<double>()),
         format_bytes(w.at("bytes_sent_per_worker_per_step").get<double>()),
         w.contains("step_allreduce")
             ? format_bytes(w["step_allreduce"]["bus_bytes_per_s"].get<double>()) + "/s"
             : "-",
         memory(w)});
  }
  t.print(std::cout);
  for (const auto& w : worlds) {
    if (!w.contains("allreduce") || w["allreduce"].empty()) continue;
    std::cout << fmt::format("\nall-reduce alone, {} workers (fp32, the slowest worker):\n",
                             w.at("workers").get<int>());
    Table a({"bytes", "time", "algbw", "busbw"});
    for (const auto& s : w["allreduce"])
      a.add_row({format_bytes(s.at("bytes").get<double>()),
                 format_seconds(s.at("seconds").get<double>()),
                 format_bytes(s.at("algorithm_bytes_per_s").get<double>()) + "/s",
                 format_bytes(s.at("bus_bytes_per_s").get<double>()) + "/s"});
    a.print(std::cout);
  }
}

// The stored worlds of `workload` with the newest world's setting (batch, threads, buckets,
// overlap), one per (workers, link): the newest.
std::vector<analysis::DistWorldPoint> stored_points(const store::ResultsStore& db,
                                                    const std::string& workload) {
  std::vector<store::StoredDistWorld> worlds;
  for (auto& w : db.load_dist_worlds())
    if (w.workload == workload && w.status == run::RunStatus::kOk) worlds.push_back(std::move(w));
  if (worlds.empty())
    throw UsageError(fmt::format(
        "no data-parallel worlds of {} stored in {}: measure them first, e.g. plumb dist {} "
        "--workers 1,2 --link none,1gbit --db {}",
        workload, db.path(), workload, db.path()));
  const auto& newest = worlds.back();
  std::map<std::pair<int, std::string>, analysis::DistWorldPoint> points;
  for (const auto& w : worlds) {
    if (w.batch_per_worker != newest.batch_per_worker ||
        w.threads_per_worker != newest.threads_per_worker ||
        w.bucket_bytes != newest.bucket_bytes || w.overlap != newest.overlap)
      continue;
    analysis::DistWorldPoint p;
    p.workers = w.workers;
    p.link = w.link;
    p.link_bytes_per_s = w.link == "none" ? 0 : run::parse_link_rate(w.link) / 8;
    p.step_s = w.step_mean_s;
    p.compute_s = w.compute_s;
    p.exposed_s = w.exposed_s;
    p.throughput = w.throughput;
    p.backward_s = run::summarize(w.document.at("backward_s").get<std::vector<double>>()).mean;
    for (const auto& b : w.document.at("sample_buckets"))
      p.buckets.push_back({b.at("bytes").get<double>(), b.at("launched_s").get<double>(),
                           b.at("done_s").get<double>()});
    points[{w.workers, w.link}] = p;
  }
  std::vector<analysis::DistWorldPoint> out;
  for (auto& [key, p] : points) out.push_back(std::move(p));
  return out;
}

// plumb dist --project: the model fitted to the stored worlds, checked against them, and
// projected to the requested worker counts on the requested link.
json project(const store::ResultsStore& db, const std::string& workload,
             const std::vector<int>& counts, double link_gbps, double latency_us) {
  const double alpha = latency_us * 1e-6;
  const auto points = stored_points(db, workload);
  const auto model = analysis::fit_dist_model(points, alpha);
  json out = {{"workload", workload},
              {"model",
               {{"compute_s", model.compute_s},
                {"compute_from", model.compute_source},
                {"backward_s", model.backward_s},
                {"buckets", model.launches.size()},
                {"cpu_bytes_per_s", model.cpu_bytes_per_s},
                {"link_efficiency", model.link_efficiency},
                {"latency_s", alpha}}},
              {"anchors", json::array()},
              {"projection", json::array()}};
  for (const auto& p : points) {
    const auto fitted = analysis::project_world(model, p.workers, p.link_bytes_per_s, alpha);
    out["anchors"].push_back({{"workers", p.workers},
                              {"link", p.link},
                              {"measured_step_s", p.step_s},
                              {"model_step_s", fitted.step_s},
                              {"error", fitted.step_s / p.step_s - 1},
                              {"measured_throughput", p.throughput},
                              {"model_throughput", fitted.throughput}});
  }
  const double link = link_gbps * 1e9 / 8;
  for (int n : counts) {
    const auto q = analysis::project_world(model, n, link, alpha);
    out["projection"].push_back({{"workers", n},
                                 {"link_gbps", link_gbps},
                                 {"beta_bytes_per_s", q.beta_bytes_per_s},
                                 {"cpu_bound", q.cpu_bound},
                                 {"communication_s", q.communication_s},
                                 {"exposed_s", q.exposed_s},
                                 {"step_s", q.step_s},
                                 {"throughput", q.throughput},
                                 {"efficiency", q.efficiency}});
  }
  return out;
}

void print_projection(const json& p) {
  const auto& m = p.at("model");
  std::cout << fmt::format(
      "model of {}: compute {} per step (from {}), backward {}, {} buckets; all-reduce in the "
      "step reached {}/s over the loopback (the CPU's limit here), {:.0f}% of a shaped link's "
      "rate; latency {} per ring step\n\n",
      p.at("workload").get<std::string>(), format_seconds(m.at("compute_s").get<double>()),
      m.at("compute_from").get<std::string>(), format_seconds(m.at("backward_s").get<double>()),
      m.at("buckets").get<int>(), format_bytes(m.at("cpu_bytes_per_s").get<double>()),
      100 * m.at("link_efficiency").get<double>(), format_seconds(m.at("latency_s").get<double>()));
  Table a({"measured world", "step measured", "step modelled", "error"});
  for (const auto& x : p.at("anchors"))
    a.add_row({fmt::format("{} workers, link {}", x.at("workers").get<int>(),
                           x.at("link").get<std::string>()),
               format_seconds(x.at("measured_step_s").get<double>()),
               format_seconds(x.at("model_step_s").get<double>()),
               format_percent(x.at("error").get<double>())});
  a.print(std::cout);
  std::cout << "\nprojection (a model, not a measurement):\n";
  Table t({"workers", "link", "all-reduce bw", "communication", "exposed", "step", "throughput",
           "efficiency"});
  for (const auto& x : p.at("projection"))
    t.add_row({std::to_string(x.at("workers").get<int>()),
               fmt::format("{} Gbit/s", x.at("link_gbps").get<double>()),
               format_bytes(x.at("beta_bytes_per_s").get<double>()) + "/s" +
                   (x.at("cpu_bound").get<bool>() ? " (CPU)" : ""),
               format_seconds(x.at("communication_s").get<double>()),
               format_seconds(x.at("exposed_s").get<double>()),
               format_seconds(x.at("step_s").get<double>()),
               format_number(x.at("throughput").get<double>(), 2),
               format_percent(x.at("efficiency").get<double>())});
  t.print(std::cout);
}

}  // namespace

void add_dist_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "dist",
      "Data-parallel training across worker processes: throughput and scaling efficiency, the "
      "step split into compute and exposed / overlapped communication, all-reduce bandwidth");
  auto name = std::make_shared<std::string>();
  auto spec = std::make_shared<DistSpec>();
  auto workers_text = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(0);
  auto bucket_mb = std::make_shared<double>(25);
  auto no_overlap = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  auto db_path = std::make_shared<std::string>("plumb.db");
  auto tag = std::make_shared<std::string>();
  auto links_text = std::make_shared<std::string>("none");
  auto project_text = std::make_shared<std::string>();
  auto link_gbps = std::make_shared<double>(0);
  auto latency_us = std::make_shared<double>(0);
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--workers", *workers_text,
                  "Worker counts to launch on this machine, e.g. 1,2 (omit inside a torchrun or "
                  "Slurm job: the job's world is used)");
  cmd->add_option("--device", spec->device,
                  "cpu: workers on cores of their own, over Gloo; cuda: one GPU per worker (its "
                  "local rank), over NCCL")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--threads-per-worker", spec->threads_per_worker,
                  "Intra-op threads of each worker, each on cores of its own")
      ->capture_default_str();
  cmd->add_option("--batch-per-worker", *batch,
                  "Examples per worker and step (default: the batch plumb suite uses)");
  cmd->add_option("--bucket-mb", *bucket_mb, "Gradient bucket size, MiB")->capture_default_str();
  cmd->add_flag("--no-overlap", *no_overlap,
                "All-reduce every bucket after backward ends (no overlap with backward)");
  cmd->add_option("--link", *links_text,
                  "Links to measure over, e.g. none,1gbit,10gbit: a rate runs the workers in a "
                  "network namespace of plumb's own whose loopback tc shapes to it (root only)")
      ->capture_default_str();
  cmd->add_option("--project", *project_text,
                  "Instead of measuring: project the stored worlds of the workload to these "
                  "worker counts, e.g. 8,64,512 (an alpha-beta model of ring all-reduce)");
  cmd->add_option("--link-gbps", *link_gbps,
                  "The projected link's rate in Gbit/s (default: this machine's loopback)");
  cmd->add_option("--latency-us", *latency_us,
                  "The projected link's latency per ring step, microseconds")
      ->capture_default_str();
  cmd->add_option("--steps", spec->steps, "Measured steps per worker count")->capture_default_str();
  cmd->add_option("--warmup-steps", spec->warmup_steps, "Steps before measuring")
      ->capture_default_str();
  cmd->add_flag(
      "--allreduce-sweep", spec->allreduce_sweep,
      "Also time all-reduce alone from 1 KiB to 256 MiB (nccl-tests' algbw and busbw), in "
      "worlds of 2 or more workers");
  cmd->add_option("--timeout", spec->timeout_s,
                  "Seconds a worker waits for the rendezvous or a peer before giving up")
      ->capture_default_str();
  cmd->add_option("--seed", spec->seed, "Seed for weights and synthetic data")
      ->capture_default_str();
  cmd->add_option("--set", spec->sets, "Override a config key: --set key=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--db", *db_path, "Results database (SQLite)")->capture_default_str();
  cmd->add_option("--tag", *tag, "Label stored with the results");
  cmd->add_flag("--json", *as_json, "Print one JSON document on stdout");
  cmd->callback([=, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    if (!project_text->empty()) {
      if (*link_gbps < 0 || *latency_us < 0)
        throw UsageError("--link-gbps and --latency-us must be at least 0");
      const auto counts = parse_positive_int_list("--project", *project_text);
      const auto db = store::ResultsStore::open(*db_path, /*read_only=*/true);
      const json p = project(*db, w.info.name, counts, *link_gbps, *latency_us);
      if (*as_json)
        std::cout << json_text(p, 2) << '\n';
      else
        print_projection(p);
      return;
    }
    if (const std::string why = run::workload_data_parallel_refusal(w.info.name); !why.empty())
      throw UsageError(w.info.name + " cannot train data-parallel: " + why);
    if (*bucket_mb <= 0) throw UsageError("--bucket-mb must be positive");
    if (spec->threads_per_worker < 1) throw UsageError("--threads-per-worker must be at least 1");
    if (spec->steps < 2) throw UsageError("--steps must be at least 2");
    if (spec->warmup_steps < 0) throw UsageError("--warmup-steps must be at least 0");
    if (spec->timeout_s < 1) throw UsageError("--timeout must be at least 1 second");
    spec->workload = w.info.name;
    spec->bucket_bytes = static_cast<int64_t>(*bucket_mb * 1024 * 1024);
    spec->overlap = !*no_overlap;
    const int64_t per_worker = *batch > 0 ? *batch : suite_config(w).get_int("batch");
    if (*batch < 0) throw UsageError("--batch-per-worker must be at least 1");
    spec->sets.push_back("batch=" + std::to_string(per_worker));
    config_of(w, *spec);  // unknown keys and bad values are refused before anything starts

    std::vector<json> worlds;
    std::unique_ptr<store::ResultsStore> db;  // opened before measuring: a bad --db fails fast
    const std::string started_at = utc_now_iso8601();
    const auto world = run::world_from_environment();
    if (!world || world->rank == 0) db = store::ResultsStore::open(*db_path);
    if (world) {
      if (!workers_text->empty())
        throw UsageError(
            "--workers launches workers on this machine; inside a torchrun or Slurm job the "
            "job's world is used: leave --workers out");
      json r = run_worker(*spec, *world);
      if (world->rank != 0) return;
      worlds.push_back(summarize_world(r, nullptr));
      worlds.back()["id"] = store_world(*db, *spec, worlds.back(), *tag, started_at);
    } else {
      if (workers_text->empty())
        throw UsageError("name the worker counts, e.g. --workers 1,2 (or run inside torchrun)");
      auto counts = parse_positive_int_list("--workers", *workers_text);
      std::sort(counts.begin(), counts.end());  // one worker first: the efficiencies' base
      counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
      const size_t cores = platform::allowed_cpus().size();
      for (int n : counts)
        if (static_cast<size_t>(n * spec->threads_per_worker) > cores)
          throw UsageError(fmt::format(
              "{} workers x {} thread(s) need {} cores, and this process may use {}: "
              "oversubscribed workers would time-share cores and pass it off as communication; "
              "lower --workers or --threads-per-worker",
              n, spec->threads_per_worker, n * spec->threads_per_worker, cores));
      const auto links = split(*links_text, ',');
      for (const auto& l : links)
        if (l != "none") run::parse_link_rate(l);
      if (spec->device == "cuda") {
        const int gpus =
            torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
        if (gpus == 0)
          throw UsageError(
              "--device cuda: no CUDA GPU is visible to this plumb (or it was built against a "
              "LibTorch without CUDA)");
        if (counts.back() > gpus)
          throw UsageError(fmt::format(
              "{} workers need {} GPUs: NCCL runs one worker per GPU, and this machine shows {}",
              counts.back(), counts.back(), gpus));
        for (const auto& l : links)
          if (l != "none")
            throw UsageError(
                "--link shapes the loopback's sockets; GPU workers on one machine exchange "
                "gradients over NVLink, PCIe or shared memory, which tc cannot shape: use --link "
                "none with --device cuda");
      }
      std::string dir_template = (fs::temp_directory_path() / "plumb-dist-XXXXXX").string();
      if (mkdtemp(dir_template.data()) == nullptr)
        throw run::DistError("cannot create a temporary directory for the workers' results");
      const fs::path dir = dir_template;
      try {
        for (const auto& l : links) {
          std::unique_ptr<run::ShapedLink> link;
          if (l != "none") link = std::make_unique<run::ShapedLink>(l);
          std::optional<json> one;  // the one-worker world, the base of the efficiencies
          for (int n : counts) {
            std::cerr << fmt::format(
                "plumb dist: {} with {} worker(s) x {} thread(s), batch {} per worker, link {} "
                "...\n",
                w.info.name, n, spec->threads_per_worker, per_worker, l);
            json r = launch_local_world(*spec, n, dir, link.get());
            r["link"] = l;
            worlds.push_back(summarize_world(r, one ? &*one : nullptr));
            worlds.back()["id"] = store_world(*db, *spec, worlds.back(), *tag, started_at);
            if (n == 1) one = worlds.back();
          }
        }
      } catch (...) {
        fs::remove_all(dir);
        throw;
      }
      fs::remove_all(dir);
    }
    for (const auto& r : worlds)
      if (r.at("status") != "ok") exit_code = 1;
    if (*as_json) {
      json out = {{"workload", w.info.name}, {"spec", nlohmann::json(*spec)}, {"worlds", worlds}};
      std::cout << json_text(out, 2) << '\n';
    } else {
      print_worlds(worlds);
      std::cout << fmt::format("stored as {} in {}\n",
                               worlds.size() == 1 ? "world " + json_text(worlds[0]["id"])
                                                  : fmt::format("{} worlds", worlds.size()),
                               db->path());
    }
  });

  // The worker side of a local launch (hidden): everything comes from the environment.
  auto* worker = app.add_subcommand("_dist-worker", "")->group("");
  worker->callback([] {
    const char* spec_text = std::getenv("PLUMB_DIST_SPEC");
    const char* result = std::getenv("PLUMB_DIST_RESULT");
    if (spec_text == nullptr || result == nullptr)
      throw UsageError("_dist-worker is started by plumb dist, not by hand");
    const auto s = nlohmann::json::parse(spec_text).get<DistSpec>();
    if (const char* cpus = std::getenv("PLUMB_DIST_CPUS")) {
      std::vector<int> mine;
      for (const auto& c : split(cpus, ',')) mine.push_back(std::stoi(c));
      pin_process(mine);
    }
    const auto world = run::world_from_environment();
    if (!world) throw UsageError("_dist-worker needs RANK and WORLD_SIZE");
    const json r = run_worker(s, *world);
    if (world->rank == 0) write_file_atomically(result, json_text(r));
  });
}

}  // namespace plumb::cli
