// Roofline placement of work items (operators, layers, model steps) on measured ceilings:
// intensity, the memory level the data came from (judged by the measured rate; by the footprint
// when unmeasured), attainable roofs, the bound, and how much of the roof and of the peak was
// achieved. Pure functions, no LibTorch.
#include "plumb/analysis/roofline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "plumb/analysis/input_checks.h"
#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb::analysis {
namespace {

constexpr const char* kCompute = "compute";
constexpr const char* kOverhead = "overhead";
constexpr const char* kMemoryPrefix = "memory:";

void validate(const Ceilings& ceilings) {
  if (!is_positive_finite(ceilings.peak_flops)) {
    throw UsageError("roofline: peak FLOP/s is " + number_text(ceilings.peak_flops) +
                     "; it must be positive and finite (re-measure with `plumb probe --refresh`)");
  }
  if (ceilings.memory.empty()) {
    throw UsageError(
        "roofline: the ceilings have no memory bandwidths; measure them with `plumb probe`");
  }
  std::set<std::string> seen;
  for (const MemoryRoof& roof : ceilings.memory) {
    if (roof.level.empty()) {
      throw UsageError("roofline: a memory level has no name; name every level (l1, l2, ...)");
    }
    if (!seen.insert(roof.level).second) {
      throw UsageError("roofline: memory level '" + roof.level +
                       "' appears twice; give each level once");
    }
    if (!is_positive_finite(roof.bytes_per_s)) {
      throw UsageError("roofline: bandwidth of '" + roof.level + "' is " +
                       number_text(roof.bytes_per_s) +
                       " bytes/s; it must be positive and finite (re-measure with `plumb probe "
                       "--refresh`)");
    }
    if (roof.capacity_bytes < 0) {
      throw UsageError("roofline: capacity of '" + roof.level + "' is " +
                       std::to_string(roof.capacity_bytes) +
                       " bytes; use a positive size, or 0 for unlimited");
    }
  }
}

void validate(const WorkItem& item) {
  const std::pair<const char*, double> fields[] = {{"flops", item.flops},
                                                   {"bytes", item.bytes},
                                                   {"footprint_bytes", item.footprint_bytes},
                                                   {"seconds", item.seconds}};
  for (const auto& [field, value] : fields) {
    if (!(value >= 0) || !std::isfinite(value)) {
      throw UsageError("roofline: '" + item.name + "' has " + field + " = " + number_text(value) +
                       "; work and time must be finite and non-negative");
    }
  }
}

// Slowest level (lowest bandwidth) whose bandwidth is at least `bytes_per_s`: the slowest one
// that can explain the measured rate. None can: the fastest level. Ties in bandwidth keep
// Ceilings order.
const MemoryRoof& level_for_rate(double bytes_per_s, const Ceilings& ceilings) {
  const MemoryRoof* slowest_enough = nullptr;
  const MemoryRoof* fastest = nullptr;
  for (const MemoryRoof& roof : ceilings.memory) {
    if (roof.bytes_per_s >= bytes_per_s &&
        (slowest_enough == nullptr || roof.bytes_per_s < slowest_enough->bytes_per_s)) {
      slowest_enough = &roof;
    }
    if (fastest == nullptr || roof.bytes_per_s > fastest->bytes_per_s) fastest = &roof;
  }
  return slowest_enough != nullptr ? *slowest_enough : *fastest;  // memory is non-empty
}

double attainable(double intensity, double peak, double bytes_per_s) {
  // intensity may be +inf; bytes_per_s > 0, so the product is +inf, never NaN.
  return std::min(peak, intensity * bytes_per_s);
}

}  // namespace

const MemoryRoof& level_for_footprint(double footprint_bytes, const Ceilings& ceilings) {
  const MemoryRoof* best = nullptr;
  for (const MemoryRoof& roof : ceilings.memory) {
    if (roof.capacity_bytes > 0 && footprint_bytes <= static_cast<double>(roof.capacity_bytes) &&
        (best == nullptr || roof.capacity_bytes < best->capacity_bytes)) {
      best = &roof;
    }
  }
  if (best != nullptr) return *best;
  for (const MemoryRoof& roof : ceilings.memory) {
    if (roof.capacity_bytes == 0) return roof;
  }
  for (const MemoryRoof& roof : ceilings.memory) {
    if (best == nullptr || roof.capacity_bytes > best->capacity_bytes) best = &roof;
  }
  return *best;  // memory is non-empty (validated)
}

Placement place(const WorkItem& item, const Ceilings& ceilings, double overhead_fraction) {
  validate(ceilings);
  validate(item);
  if (!(overhead_fraction >= 0 && overhead_fraction <= 1)) {
    throw UsageError("roofline: overhead fraction " + number_text(overhead_fraction) +
                     " is outside [0, 1]; use e.g. 0.1 (below 10% of the roof = overhead)");
  }

  Placement p;
  p.name = item.name;
  p.dtype = item.dtype;
  const auto own =
      item.dtype.empty() ? ceilings.by_dtype.end() : ceilings.by_dtype.find(item.dtype);
  const double peak = own != ceilings.by_dtype.end() && own->second.flops > 0 ? own->second.flops
                                                                              : ceilings.peak_flops;
  p.peak_flops = peak;
  p.flops = item.flops;
  p.bytes = item.bytes;
  p.seconds = item.seconds;
  const bool has_work = item.flops > 0 || item.bytes > 0;
  if (item.bytes > 0) {
    p.intensity = item.flops / item.bytes;
  } else {
    p.intensity = item.flops > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }

  const bool measured = item.seconds > 0;
  const MemoryRoof& footprint_level = level_for_footprint(item.footprint_bytes, ceilings);
  p.footprint_level = footprint_level.level;
  // A measured rate says where the data came from; a footprint that fits a cache does not (the
  // data may have been evicted since it was last touched), so it only predicts unmeasured items.
  const MemoryRoof& level =
      has_work && measured ? level_for_rate(item.bytes / item.seconds, ceilings) : footprint_level;
  p.level = level.level;
  for (const MemoryRoof& roof : ceilings.memory) {
    p.roofs.push_back({roof.level, attainable(p.intensity, peak, roof.bytes_per_s)});
  }
  p.roof = attainable(p.intensity, peak, level.bytes_per_s);

  const double ridge = peak / level.bytes_per_s;
  const bool compute_bound = p.intensity >= ridge;
  const std::string predicted = compute_bound ? kCompute : kMemoryPrefix + level.level;
  p.predicted_bound = predicted;

  if (!has_work) {
    // Time spent without any costed work is overhead by definition; every rate is exactly 0.
    p.achieved_flops = p.achieved_bytes_per_s = p.roof_fraction = p.utilisation = 0;
    p.dram_fraction = 0;
    p.bound = kOverhead;
    return p;
  }
  if (!measured) {
    constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
    p.achieved_flops = p.achieved_bytes_per_s = p.roof_fraction = p.utilisation = kNotMeasured;
    p.dram_fraction = kNotMeasured;
    p.bound = predicted;
    return p;
  }

  p.achieved_flops = item.flops / item.seconds;
  p.achieved_bytes_per_s = item.bytes / item.seconds;
  p.utilisation = p.achieved_flops / peak;
  const MemoryRoof& dram = level_for_footprint(std::numeric_limits<double>::infinity(), ceilings);
  p.dram_fraction = p.achieved_bytes_per_s / dram.bytes_per_s;
  p.roof_fraction =
      compute_bound ? p.achieved_flops / peak : p.achieved_bytes_per_s / level.bytes_per_s;
  p.bound = p.roof_fraction < overhead_fraction ? kOverhead : predicted;
  return p;
}

std::vector<Placement> place_all(const std::vector<WorkItem>& items, const Ceilings& ceilings,
                                 double overhead_fraction) {
  std::vector<Placement> placements;
  placements.reserve(items.size());
  for (const WorkItem& item : items) placements.push_back(place(item, ceilings, overhead_fraction));
  return placements;
}

double ridge_intensity(const Ceilings& ceilings, const std::string& level) {
  validate(ceilings);
  std::string known;
  for (const MemoryRoof& roof : ceilings.memory) {
    if (roof.level == level) return ceilings.peak_flops / roof.bytes_per_s;
    known += (known.empty() ? "" : ", ") + roof.level;
  }
  throw UsageError("roofline: unknown memory level '" + level + "'; known: " + known);
}

std::string roof_words(const Placement& p, const Ceilings& ceilings) {
  if (p.predicted_bound.rfind(kMemoryPrefix, 0) == 0) {
    std::string level = p.predicted_bound.substr(std::string(kMemoryPrefix).size());
    std::transform(level.begin(), level.end(), level.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return level + " bandwidth";
  }
  // An item without a dtype of its own was placed under the ceilings' own peak.
  if (!p.dtype.empty() && ceilings.by_dtype.count(p.dtype) > 0) return p.dtype + " roof";
  const auto words = split(ceilings.peak_source, ' ');
  return (words.empty() || words.front().empty() ? "compute" : words.front()) + " roof";
}

std::string bound_text(const Placement& p, const Ceilings& ceilings) {
  if (p.flops <= 0 && p.bytes <= 0) return p.bound + " (no costed work)";
  if (!std::isfinite(p.roof_fraction)) return p.bound + " (not timed)";
  return fmt::format("{} {:.0f}% of {}", p.bound, p.roof_fraction * 100, roof_words(p, ceilings));
}

WorkItem sum_items(const std::vector<WorkItem>& items, std::string name) {
  WorkItem total;
  total.name = std::move(name);
  for (const WorkItem& item : items) {
    total.flops += item.flops;
    total.bytes += item.bytes;
    total.seconds += item.seconds;
    total.footprint_bytes = std::max(total.footprint_bytes, item.footprint_bytes);
  }
  return total;
}

}  // namespace plumb::analysis
