// plumb memory's reporters (see memory_report.h).
#include "plumb/jobs/memory_report.h"

#include <optional>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/execution_settings.h"
#include "plumb/core/generation.h"
#include "plumb/core/json_number.h"
#include "plumb/core/outcome.h"
#include "plumb/report/text_table.h"
#include "plumb/store/profile_records.h"
#include "plumb/store/record_json.h"

namespace plumb::jobs {
namespace {

using profile::MemoryCategory;
using report::format_bytes;
using report::format_percent;

bool memory_report_ok(const store::StoredMemoryProfile& p) {
  return p.result.status == run::RunStatus::kOk;
}

// The successful pass at the largest batch; nullptr when none ran.
const store::StoredMemoryProfile* largest_ok_pass(const MemoryJobResult& r) {
  const store::StoredMemoryProfile* largest = nullptr;
  for (const auto& p : r.passes)
    if (memory_report_ok(p) && (largest == nullptr || p.batch > largest->batch)) largest = &p;
  return largest;
}

// "fits: 1.2 GiB", "over: 3.4 GiB" or the status of a pass that did not run.
std::string attempt_outcome(const analysis::MeasuredBatch& m, int64_t limit) {
  if (!m.ok()) return outcome_state_name(m.state);
  return fmt::format("{} {}", m.total_peak <= limit ? "fits:" : "over:",
                     format_bytes(static_cast<double>(m.total_peak)));
}

nlohmann::ordered_json line_fit_json(const analysis::LineFit& f) {
  return {{"bytes_per_example", json_number(f.slope)},
          {"intercept_bytes", json_number(f.intercept)},
          {"r_squared", json_number(f.r_squared)}};
}

nlohmann::ordered_json capacity_json(const analysis::CapacityResult& c) {
  nlohmann::ordered_json attempts = nlohmann::ordered_json::array();
  for (const auto& m : c.attempts)
    attempts.push_back({{"batch", m.batch}, {"outcome", attempt_outcome(m, c.limit_bytes)}});
  return {{"limit_bytes", c.limit_bytes},           {"batch1_bytes", c.batch1_bytes},
          {"predicted_batch", c.predicted},         {"largest_fitting_batch", c.fits},
          {"smallest_failing_batch", c.fails},      {"verified_batch", c.verified},
          {"verified_total_peak", c.verified_peak}, {"attempts", attempts}};
}

// Bytes each category holds at its own peak, a row per batch, then the per-example slopes.
void print_category_table(std::ostream& out, const MemoryJobResult& r) {
  const auto& passes = r.passes;
  out << fmt::format(
      "\n{} {}, {} thread(s): bytes each category holds at its own peak during one step\n",
      passes.front().workload, passes.front().mode, passes.front().threads);
  std::vector<std::string> header = {"batch"};
  for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
    header.push_back(profile::category_key(profile::category_at(i)));
  header.insert(header.end(), {"total peak", "status"});
  report::TextTable t(header);
  for (const auto& p : passes) {
    const bool ok = memory_report_ok(p);
    std::vector<std::string> row = {std::to_string(p.batch)};
    for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
      row.push_back(ok ? format_bytes(static_cast<double>(p.result.breakdown.peak[i])) : "-");
    row.push_back(ok ? format_bytes(static_cast<double>(p.result.breakdown.total_peak)) : "-");
    row.push_back(run::status_name(p.result.status));
    t.add_row(row);
  }
  if (const auto& scaling = r.scaling) {
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
  t.print(out);
  if (!r.scaling)
    out << "(per-example slopes need two or more batch sizes that ran: --batch 2,4,8)\n";
}

// The largest batch's total peak, its resident-set check and the layers making its feature maps.
void print_largest_pass(std::ostream& out, const store::StoredMemoryProfile& largest, size_t top) {
  const auto& b = largest.result.breakdown;
  out << fmt::format("\nbatch {}: total peak {} at {:.1f} ms of a {:.1f} ms step: {}\n",
                     largest.batch, format_bytes(static_cast<double>(b.total_peak)),
                     static_cast<double>(b.total_peak_ns) * 1e-6,
                     static_cast<double>(b.duration_ns) * 1e-6, memory_mix_text(b.at_total_peak));
  const auto& r = largest.result;
  if (r.rss_peak_growth > 0)
    out << fmt::format(
        "tracked peak since the build {} vs the process's peak resident-set growth {} "
        "({:.2f}x){}\n",
        format_bytes(static_cast<double>(r.tracked_peak)),
        format_bytes(static_cast<double>(r.rss_peak_growth)),
        static_cast<double>(r.tracked_peak) / static_cast<double>(r.rss_peak_growth),
        largest.heap != heap_policy_name(HeapPolicy::kReturn)
            ? " (glibc keeps freed blocks on its heap: --rss-check for a like-for-like figure)"
            : "");
  const int64_t fm = b.peak[static_cast<size_t>(MemoryCategory::kFeatureMaps)];
  if (b.feature_map_layers.empty() || fm <= 0) return;
  report::TextTable layers({"layer", "feature maps", "share"});
  int64_t made = 0;
  for (const auto& l : b.feature_map_layers) made += l.bytes;
  for (size_t i = 0; i < b.feature_map_layers.size() && i < top; ++i) {
    const auto& l = b.feature_map_layers[i];
    layers.add_row({l.layer.empty() ? "(outside named layers)" : l.layer,
                    format_bytes(static_cast<double>(l.bytes)),
                    format_percent(static_cast<double>(l.bytes) / static_cast<double>(made))});
  }
  out << fmt::format("\nlayers holding the most feature-map bytes (batch {}):\n", largest.batch);
  layers.print(out);
}

// A generation's phases (the one asked for, or both) and its KV cache per token of context.
void print_generation(std::ostream& out, const store::StoredMemoryProfile& p,
                      std::optional<Phase> only) {
  const auto& b = p.result.breakdown;
  if (b.phases.empty()) return;
  out << fmt::format("\nbatch {}, by generation phase:\n", p.batch);
  for (const auto& m : b.phases) {
    if (only && *only != m.phase) continue;
    const double per_call = m.calls > 0 ? static_cast<double>(m.bytes_allocated) / m.calls : 0;
    out << fmt::format(
        "  [{}] {} call(s): peak {} ({}); {} allocated in {} allocations, {} per call\n",
        phase_name(m.phase), m.calls, format_bytes(static_cast<double>(m.peak)),
        memory_mix_text(m.at_peak), format_bytes(static_cast<double>(m.bytes_allocated)),
        m.allocations, format_bytes(per_call));
  }
  const auto& g = b.generation;
  if (!g) return;
  const auto kv = b.peak[static_cast<size_t>(MemoryCategory::kKvCache)];
  out << fmt::format(
      "  kv_cache {}: {} per token of context (batch {} x (prompt {} + gen {}) = {} positions); "
      "the model declares {}{}\n",
      format_bytes(static_cast<double>(kv)), format_bytes(profile::kv_cache_bytes_per_token(b)),
      g->shape.batch, g->shape.prompt, g->shape.gen, g->positions(),
      format_bytes(static_cast<double>(g->declared_kv_cache_bytes)),
      kv == g->declared_kv_cache_bytes
          ? ""
          : " (they differ: the category holds what the prefill made that outlived the step)");
}

void print_capacity(std::ostream& out, const analysis::CapacityResult& c) {
  out << fmt::format("\nmemory limit {}: batch 1 needs {}; ",
                     format_bytes(static_cast<double>(c.limit_bytes)),
                     format_bytes(static_cast<double>(c.batch1_bytes)));
  out << fmt::format("the fit over the measured batches predicts {}; ",
                     c.predicted < 0 ? std::string("no bound") : std::to_string(c.predicted));
  out << "searched:";
  for (const auto& m : c.attempts)
    out << fmt::format(" {} ({})", m.batch, attempt_outcome(m, c.limit_bytes));
  if (c.verified > 0) {
    out << fmt::format(
        "\nlargest batch that fits: {} (peak {}, verified under the limit){}\n", c.verified,
        format_bytes(static_cast<double>(c.verified_peak)),
        c.fails == c.fits + 1
            ? fmt::format("; batch {} does not", c.fails)
            : std::string("; the search stopped before finding a batch that does not"));
  } else {
    out << fmt::format("\nbatch {} did not run under the limit\n", c.fits);
  }
}

}  // namespace

std::string memory_mix_text(const profile::CategoryBytes& bytes) {
  std::string out;
  for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i) {
    if (bytes[i] == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ",
                       profile::category_key(profile::category_at(i)),
                       format_bytes(static_cast<double>(bytes[i])));
  }
  return out;
}

nlohmann::ordered_json memory_json(const MemoryJobResult& result, size_t top) {
  nlohmann::ordered_json out;
  out["workload"] = result.workload;
  out["mode"] = result.mode;
  out["group"] = result.group;
  // Every pass's "phases" hold both; this says which one was asked for.
  if (result.phase) out["phase"] = phase_name(*result.phase);
  out["batches"] = nlohmann::ordered_json::array();
  for (const auto& p : result.passes) out["batches"].push_back(store::memory_profile_json(p));
  out["slopes"] = nlohmann::ordered_json::object();
  if (const auto& scaling = result.scaling) {
    for (size_t i = 0; i < profile::kMemoryCategoryCount; ++i)
      out["slopes"][profile::category_key(profile::category_at(i))] =
          line_fit_json(scaling->category[i]);
    out["slopes"]["total_peak"] = line_fit_json(scaling->total);
  }
  const store::StoredMemoryProfile* largest = largest_ok_pass(result);
  out["feature_map_layers"] = nlohmann::ordered_json::array();
  if (largest != nullptr) {
    const auto& layers = largest->result.breakdown.feature_map_layers;
    for (size_t i = 0; i < layers.size() && i < top; ++i)
      out["feature_map_layers"].push_back(
          {{"batch", largest->batch}, {"layer", layers[i].layer}, {"bytes", layers[i].bytes}});
  }
  if (result.capacity) out["memory_limit"] = capacity_json(*result.capacity);
  return out;
}

void print_memory(std::ostream& out, const MemoryJobResult& result, size_t top) {
  print_category_table(out, result);
  if (const auto* largest = largest_ok_pass(result)) print_largest_pass(out, *largest, top);
  for (const auto& p : result.passes)
    if (memory_report_ok(p)) print_generation(out, p, result.phase);
  if (result.capacity) print_capacity(out, *result.capacity);
  out << "\nstored as memory group " << result.group << " in " << result.db_path << '\n';
}

}  // namespace plumb::jobs
