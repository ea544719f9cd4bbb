// plumb memory: where a step's bytes go (TBD Sec. IV-B) — weights, gradients, optimizer
// state, feature maps, workspace, input, other — at each batch size asked for, how each
// category grows per example, which layers make the feature maps, and with --memory-limit the
// largest batch whose step fits a budget: predicted from the fit, searched by measuring, and
// verified by running it under that limit.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/memory_capacity.h"
#include "plumb/analysis/memory_scaling.h"
#include "plumb/cli/byte_size.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/kill_point.h"
#include "plumb/core/precision.h"
#include "plumb/platform/environment.h"
#include "plumb/profile/memory_json.h"
#include "plumb/profile/memory_profiler.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

using profile::MemoryCategory;

struct MemoryFlags {
  MeasureFlags measure;  // mode, threads, device, precision, engine, heap, seed, db, tag, json
  std::string batches;   // "" = the workload's default batch
  std::string memory_limit;
  int warmup_steps = profile::MemoryOptions{}.warmup_steps;
  size_t top = 10;
  bool rss_check = false;  // --heap return, named for what it is for here
};

// One `plumb memory` call: its passes share a group and are stored as they finish.
class MemorySession {
 public:
  MemorySession(const Workload& w, run::RunOptions options, const MemoryFlags& flags)
      : workload_(w),
        options_(std::move(options)),
        flags_(flags),
        db_(store::ResultsStore::open(flags.measure.db)) {
    group_ = fmt::format("{}-{}-{}", w.info.name, utc_now_iso8601(), getpid());
  }

  // Profiles one batch (limit 0: the machine's available memory) and stores it.
  const store::StoredMemoryProfile& measure(int64_t batch, int64_t limit_bytes) {
    kill_point("memory-search");
    run::RunOptions o = options_;
    o.config.set_int("batch", batch);
    profile::MemoryOptions m;
    m.warmup_steps = flags_.warmup_steps;
    m.limit_bytes = limit_bytes;
    std::cerr << fmt::format("memory {} {} batch {}{} ...\n", workload_.info.name,
                             mode_name(o.mode), batch,
                             limit_bytes > 0 ? " under " + format_bytes(limit_bytes) : "");
    const auto env = platform::capture_environment(o.threads, o.device);
    const auto result = profile::profile_memory(workload_, o, m);
    for (const auto& warning : result.warnings) std::cerr << "  warning: " << warning << '\n';
    if (result.status == run::RunStatus::kOk) {
      std::cerr << fmt::format("  total peak {}\n", format_bytes(result.breakdown.total_peak));
    } else {
      std::cerr << fmt::format("  {}: {}\n", run::status_name(result.status), result.message);
    }
    const int64_t id = db_->save_memory_profile(o, result, env, group_, flags_.measure.tag);
    for (auto& stored : db_->load_memory_profiles(group_))
      if (stored.id == id) passes_.push_back(std::move(stored));
    PLUMB_ASSERT(!passes_.empty() && passes_.back().id == id, "memory pass not read back");
    return passes_.back();
  }

  const std::vector<store::StoredMemoryProfile>& passes() const { return passes_; }
  const std::string& group() const { return group_; }
  const std::string& db_path() const { return db_->path(); }

  // The successful pass at `batch` without a limit of ours, if any.
  const store::StoredMemoryProfile* ok_at(int64_t batch) const {
    for (const auto& p : passes_)
      if (p.batch == batch && p.result.status == run::RunStatus::kOk) return &p;
    return nullptr;
  }

 private:
  const Workload& workload_;
  run::RunOptions options_;  // every pass's, but its batch
  const MemoryFlags& flags_;
  std::unique_ptr<store::ResultsStore> db_;
  std::string group_;
  std::vector<store::StoredMemoryProfile> passes_;
};

bool ok(const store::StoredMemoryProfile& p) {
  return p.result.status == run::RunStatus::kOk;
}

std::vector<analysis::MemoryPoint> points_of(const std::vector<store::StoredMemoryProfile>& ps) {
  std::vector<analysis::MemoryPoint> points;
  for (const auto& p : ps)
    if (ok(p)) points.push_back({p.batch, p.result.breakdown.peak, p.result.breakdown.total_peak});
  return points;
}

size_t distinct_batches(const std::vector<analysis::MemoryPoint>& points) {
  std::set<int64_t> b;
  for (const auto& p : points) b.insert(p.batch);
  return b.size();
}

std::string mix_text(const profile::CategoryBytes& b) {
  std::string out;
  for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i) {
    if (b[i] == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ",
                       profile::category_key(profile::category_at(i)),
                       format_bytes(static_cast<double>(b[i])));
  }
  return out;
}

analysis::MeasuredBatch measured_batch(const store::StoredMemoryProfile& p) {
  return {p.batch, ok(p), ok(p) ? p.result.breakdown.total_peak : 0,
          run::status_name(p.result.status)};
}

// "fits: 1.2 GiB", "over: 3.4 GiB" or the status of a pass that did not run.
std::string attempt_outcome(const analysis::MeasuredBatch& m, int64_t limit) {
  if (!m.ok) return m.status;
  return fmt::format("{} {}", m.total_peak <= limit ? "fits:" : "over:",
                     format_bytes(static_cast<double>(m.total_peak)));
}

// The search of --memory-limit (analysis/memory_capacity.h) over this session's passes; its
// refusals name what batch 1 needs or why it did not run.
analysis::CapacityResult find_capacity(MemorySession& session, int64_t limit) {
  std::vector<analysis::MeasuredBatch> measured;
  for (const auto& p : session.passes()) measured.push_back(measured_batch(p));
  const auto c =
      analysis::find_memory_capacity(limit, measured, [&](int64_t batch, int64_t limit_bytes) {
        return measured_batch(session.measure(batch, limit_bytes));
      });
  if (c.stop == analysis::CapacityStop::kSearched) return c;
  const store::StoredMemoryProfile* one = session.ok_at(1);
  for (const auto& p : session.passes())
    if (one == nullptr && p.batch == 1) one = &p;
  PLUMB_ASSERT(one != nullptr, "the capacity search stopped without a pass at batch 1");
  if (c.stop == analysis::CapacityStop::kBatchOneFailed)
    throw UsageError(
        fmt::format("cannot find a batch under --memory-limit: batch 1 did not run ({}: {})",
                    run::status_name(one->result.status), one->result.message));
  throw UsageError(fmt::format(
      "--memory-limit {} is below what {} {} needs at batch 1: {} at its peak ({}); raise the "
      "limit to at least {}",
      format_bytes(static_cast<double>(limit)), one->workload, one->mode,
      format_bytes(static_cast<double>(c.batch1_bytes)),
      mix_text(one->result.breakdown.at_total_peak),
      format_bytes(static_cast<double>(c.batch1_bytes))));
}

nlohmann::ordered_json fit_json(const analysis::LineFit& f) {
  return {{"bytes_per_example", json_number(f.slope)},
          {"intercept_bytes", json_number(f.intercept)},
          {"r_squared", json_number(f.r_squared)}};
}

void print_table(const MemorySession& s, const std::optional<analysis::MemoryScaling>& scaling,
                 size_t top) {
  const auto& passes = s.passes();
  std::cout << fmt::format(
      "\n{} {}, {} thread(s): bytes each category holds at its own peak during one step\n",
      passes.front().workload, passes.front().mode, passes.front().threads);
  std::vector<std::string> header = {"batch"};
  for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
    header.push_back(profile::category_key(profile::category_at(i)));
  header.insert(header.end(), {"total peak", "status"});
  Table t(header);
  for (const auto& p : passes) {
    std::vector<std::string> row = {std::to_string(p.batch)};
    for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
      row.push_back(ok(p) ? format_bytes(static_cast<double>(p.result.breakdown.peak[i])) : "-");
    row.push_back(ok(p) ? format_bytes(static_cast<double>(p.result.breakdown.total_peak)) : "-");
    row.push_back(run::status_name(p.result.status));
    t.add_row(row);
  }
  if (scaling) {
    std::vector<std::string> slope = {"per example"}, fixed = {"fixed"};
    for (const auto& f : scaling->category) {
      slope.push_back(format_bytes(f.slope));
      fixed.push_back(format_bytes(f.intercept));
    }
    slope.insert(slope.end(), {format_bytes(scaling->total.slope),
                               fmt::format("R2 {:.3f}", scaling->total.r_squared)});
    fixed.insert(fixed.end(), {format_bytes(scaling->total.intercept), ""});
    t.add_row(slope);
    t.add_row(fixed);
  }
  t.print(std::cout);
  if (!scaling)
    std::cout << "(per-example slopes need two or more batch sizes that ran: --batch 2,4,8)\n";
  const store::StoredMemoryProfile* largest = nullptr;
  for (const auto& p : passes)
    if (ok(p) && (largest == nullptr || p.batch > largest->batch)) largest = &p;
  if (largest == nullptr) return;
  const auto& b = largest->result.breakdown;
  std::cout << fmt::format("\nbatch {}: total peak {} at {:.1f} ms of a {:.1f} ms step: {}\n",
                           largest->batch, format_bytes(static_cast<double>(b.total_peak)),
                           static_cast<double>(b.total_peak_ns) * 1e-6,
                           static_cast<double>(b.duration_ns) * 1e-6, mix_text(b.at_total_peak));
  const auto& r = largest->result;
  if (r.rss_peak_growth > 0)
    std::cout << fmt::format(
        "tracked peak since the build {} vs the process's peak resident-set growth {} "
        "({:.2f}x){}\n",
        format_bytes(static_cast<double>(r.tracked_peak)),
        format_bytes(static_cast<double>(r.rss_peak_growth)),
        static_cast<double>(r.tracked_peak) / static_cast<double>(r.rss_peak_growth),
        largest->heap != heap_policy_name(HeapPolicy::kReturn)
            ? " (glibc keeps freed blocks on its heap: --rss-check for a like-for-like figure)"
            : "");
  const int64_t fm = b.peak[static_cast<size_t>(MemoryCategory::kFeatureMaps)];
  if (!b.feature_map_layers.empty() && fm > 0) {
    Table layers({"layer", "feature maps", "share"});
    int64_t made = 0;
    for (const auto& l : b.feature_map_layers) made += l.bytes;
    for (size_t i = 0; i < b.feature_map_layers.size() && i < top; ++i) {
      const auto& l = b.feature_map_layers[i];
      layers.add_row({l.layer.empty() ? "(outside named layers)" : l.layer,
                      format_bytes(static_cast<double>(l.bytes)),
                      format_percent(static_cast<double>(l.bytes) / static_cast<double>(made))});
    }
    std::cout << fmt::format("\nlayers holding the most feature-map bytes (batch {}):\n",
                             largest->batch);
    layers.print(std::cout);
  }
}

}  // namespace

void add_memory_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "memory", "Where a step's bytes go: weights, gradients, optimizer state, feature maps ...");
  auto name = std::make_shared<std::string>();
  auto flags = std::make_shared<MemoryFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  cmd->add_option("workload", *name, "Workload name (see plumb list)")->required();
  cmd->add_option("--mode", flags->measure.mode, "train or infer")->capture_default_str();
  cmd->add_option("--batch", flags->batches,
                  "Batch sizes, e.g. 1,2,4,8 (default: the workload's published batch)");
  cmd->add_option("--memory-limit", flags->memory_limit,
                  "Find the largest batch whose step fits this budget, e.g. 8GiB (verified by "
                  "running it under that limit)");
  cmd->add_option("--warmup-steps", flags->warmup_steps,
                  "Steps before the recorded one (the first makes gradients and optimizer state)")
      ->capture_default_str();
  cmd->add_option("--top", flags->top, "Layers listed by feature-map bytes")->capture_default_str();
  cmd->add_flag("--rss-check", flags->rss_check,
                "Same as --heap return: glibc returns freed blocks to the kernel, so the "
                "process's resident-set growth can be compared with the tracked peak (steps run "
                "~2x slower)");
  add_measure_options(*cmd, flags->measure, run::RunOptions{}.max_time_s,
                      run::RunOptions{}.max_warmup_s, SamplingOptions::kNone);
  restrict_device_to_cpu(*cmd,
                         "plumb tracks LibTorch's CPU allocator, and a model on a GPU keeps its "
                         "tensors in the CUDA allocator (plumb dist --device cuda reports a GPU "
                         "worker's peak memory)");
  add_config_options(*cmd, *overrides, BatchOption::kNone);
  cmd->callback([name, flags, overrides, &exit_code] {
    const Workload& w = workloads::default_registry().get(*name);
    const Mode mode = parse_mode(flags->measure.mode);
    const Config config = resolve_config(w, *overrides);
    std::vector<int> batches = {static_cast<int>(config.get_int("batch"))};
    if (!flags->batches.empty()) batches = parse_positive_int_list("--batch", flags->batches);
    std::optional<int64_t> limit;
    if (!flags->memory_limit.empty())
      limit = parse_byte_size("--memory-limit", flags->memory_limit);
    if (flags->warmup_steps < 1)
      throw UsageError(
          fmt::format("--warmup-steps must be at least 1, got {}", flags->warmup_steps));
    if (flags->rss_check) flags->measure.heap = heap_policy_name(HeapPolicy::kReturn);
    // Bad values fail before anything is measured.
    std::vector<run::RunOptions> options = make_options(w, config, mode, flags->measure);
    if (options.size() != 1)
      throw UsageError(fmt::format(
          "plumb memory profiles one precision per call; --dtype {} lists {}: run it once for "
          "each",
          flags->measure.dtypes, options.size()));

    MemorySession session(w, std::move(options.front()), *flags);
    for (int b : batches) session.measure(b, 0);
    std::optional<analysis::CapacityResult> capacity;
    if (limit) capacity = find_capacity(session, *limit);

    const auto points = points_of(session.passes());
    std::optional<analysis::MemoryScaling> scaling;
    if (distinct_batches(points) >= 2) scaling = analysis::fit_memory_scaling(points);
    for (const auto& p : session.passes())
      if (!ok(p)) exit_code = 1;
    if (capacity && capacity->verified == 0) exit_code = 1;

    if (flags->measure.json) {
      nlohmann::ordered_json out;
      out["workload"] = w.info.name;
      out["mode"] = mode_name(mode);
      out["group"] = session.group();
      out["batches"] = nlohmann::ordered_json::array();
      for (const auto& p : session.passes())
        out["batches"].push_back(store::memory_profile_json(p));
      out["slopes"] = nlohmann::ordered_json::object();
      if (scaling) {
        for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
          out["slopes"][profile::category_key(profile::category_at(i))] =
              fit_json(scaling->category[i]);
        out["slopes"]["total_peak"] = fit_json(scaling->total);
      }
      const store::StoredMemoryProfile* largest = nullptr;
      for (const auto& p : session.passes())
        if (ok(p) && (largest == nullptr || p.batch > largest->batch)) largest = &p;
      out["feature_map_layers"] = nlohmann::ordered_json::array();
      if (largest != nullptr) {
        const auto& layers = largest->result.breakdown.feature_map_layers;
        for (size_t i = 0; i < layers.size() && i < flags->top; ++i)
          out["feature_map_layers"].push_back(
              {{"batch", largest->batch}, {"layer", layers[i].layer}, {"bytes", layers[i].bytes}});
      }
      if (capacity) {
        nlohmann::ordered_json attempts = nlohmann::ordered_json::array();
        for (const auto& m : capacity->attempts)
          attempts.push_back(
              {{"batch", m.batch}, {"outcome", attempt_outcome(m, capacity->limit_bytes)}});
        out["memory_limit"] = {{"limit_bytes", capacity->limit_bytes},
                               {"batch1_bytes", capacity->batch1_bytes},
                               {"predicted_batch", capacity->predicted},
                               {"largest_fitting_batch", capacity->fits},
                               {"smallest_failing_batch", capacity->fails},
                               {"verified_batch", capacity->verified},
                               {"verified_total_peak", capacity->verified_peak},
                               {"attempts", attempts}};
      }
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    print_table(session, scaling, flags->top);
    if (capacity) {
      std::cout << fmt::format("\nmemory limit {}: batch 1 needs {}; ",
                               format_bytes(static_cast<double>(capacity->limit_bytes)),
                               format_bytes(static_cast<double>(capacity->batch1_bytes)));
      std::cout << fmt::format(
          "the fit over the measured batches predicts {}; ",
          capacity->predicted < 0 ? std::string("no bound") : std::to_string(capacity->predicted));
      std::cout << "searched:";
      for (const auto& m : capacity->attempts)
        std::cout << fmt::format(" {} ({})", m.batch, attempt_outcome(m, capacity->limit_bytes));
      if (capacity->verified > 0) {
        std::cout << fmt::format(
            "\nlargest batch that fits: {} (peak {}, verified under the limit){}\n",
            capacity->verified, format_bytes(static_cast<double>(capacity->verified_peak)),
            capacity->fails == capacity->fits + 1
                ? fmt::format("; batch {} does not", capacity->fails)
                : std::string("; the search stopped before finding a batch that does not"));
      } else {
        std::cout << fmt::format("\nbatch {} did not run under the limit\n", capacity->fits);
      }
    }
    std::cout << "\nstored as memory group " << session.group() << " in " << session.db_path()
              << '\n';
  });
}

}  // namespace plumb::cli
