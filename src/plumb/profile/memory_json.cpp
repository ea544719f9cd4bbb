// JSON form of a memory breakdown (see memory_json.h).
#include "plumb/profile/memory_json.h"

#include <string>

namespace plumb::profile {
namespace {

constexpr double kMsPerNs = 1e-6;

StepPhase phase_from_name(const std::string& name) {
  for (StepPhase p : {StepPhase::kBuild, StepPhase::kData, StepPhase::kForward,
                      StepPhase::kBackward, StepPhase::kOptimizer})
    if (name == phase_name(p)) return p;
  throw nlohmann::json::other_error::create(501, "unknown step phase '" + name + "'", nullptr);
}

MemoryCategory category_from_key(const std::string& key) {
  for (size_t i = 0; i < kMemoryCategoryCount; ++i)
    if (key == category_key(category_at(i))) return category_at(i);
  throw nlohmann::json::other_error::create(501, "unknown memory category '" + key + "'", nullptr);
}

CategoryBytes category_bytes_from_json(const nlohmann::json& j) {
  CategoryBytes b{};
  // A record stored before a category existed (kv_cache) had none of its bytes.
  for (size_t i = 0; i < kMemoryCategoryCount; ++i)
    b[i] = j.value(category_key(category_at(i)), int64_t{0});
  return b;
}

int64_t ns_from_ms(const nlohmann::json& ms) {
  return static_cast<int64_t>(ms.get<double>() / kMsPerNs + 0.5);
}

}  // namespace

nlohmann::ordered_json category_bytes_json(const CategoryBytes& bytes) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < kMemoryCategoryCount; ++i) j[category_key(category_at(i))] = bytes[i];
  return j;
}

nlohmann::ordered_json to_json(const MemoryBreakdown& b) {
  nlohmann::ordered_json j;
  j["peak"] = category_bytes_json(b.peak);
  j["total_peak"] = b.total_peak;
  j["total_peak_ms"] = static_cast<double>(b.total_peak_ns) * kMsPerNs;
  j["at_total_peak"] = category_bytes_json(b.at_total_peak);
  j["at_start"] = category_bytes_json(b.at_start);
  j["duration_ms"] = static_cast<double>(b.duration_ns) * kMsPerNs;
  nlohmann::ordered_json starts = nlohmann::ordered_json::array();
  for (int64_t t : b.backward_starts_ns) starts.push_back(static_cast<double>(t) * kMsPerNs);
  j["backward_starts_ms"] = starts;
  j["allocations"] = b.allocations;
  j["bytes_allocated"] = b.bytes_allocated;
  j["feature_map_layers"] = nlohmann::ordered_json::array();
  for (const auto& l : b.feature_map_layers)
    j["feature_map_layers"].push_back({{"layer", l.layer}, {"bytes", l.bytes}});
  j["largest_allocations"] = nlohmann::ordered_json::array();
  for (const auto& a : b.largest)
    j["largest_allocations"].push_back({{"bytes", a.bytes},
                                        {"category", category_key(a.category)},
                                        {"phase", phase_name(a.phase)},
                                        {"op", a.op},
                                        {"layer", a.layer}});
  // Column form: one array of times and one per category.
  nlohmann::ordered_json timeline;
  timeline["t_ms"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < kMemoryCategoryCount; ++i)
    timeline[category_key(category_at(i))] = nlohmann::ordered_json::array();
  for (const auto& p : b.timeline) {
    timeline["t_ms"].push_back(static_cast<double>(p.t_ns) * kMsPerNs);
    for (size_t i = 0; i < kMemoryCategoryCount; ++i)
      timeline[category_key(category_at(i))].push_back(p.bytes[i]);
  }
  j["timeline"] = timeline;
  if (!b.phases.empty()) {
    j["phases"] = nlohmann::ordered_json::array();
    for (const auto& m : b.phases)
      j["phases"].push_back({{"phase", plumb::phase_name(m.phase)},
                             {"calls", m.calls},
                             {"peak", m.peak},
                             {"at_peak", category_bytes_json(m.at_peak)},
                             {"allocations", m.allocations},
                             {"bytes_allocated", m.bytes_allocated}});
  }
  if (const auto& g = b.generation)
    j["generation"] = {{"batch", g->shape.batch},
                       {"prompt", g->shape.prompt},
                       {"gen", g->shape.gen},
                       {"declared_kv_cache_bytes", g->declared_kv_cache_bytes},
                       // Derived (not read back): the cache's bytes per position of context.
                       {"positions", g->positions()},
                       {"kv_cache_bytes_per_token", kv_cache_bytes_per_token(b)}};
  return j;
}

MemoryBreakdown breakdown_from_json(const nlohmann::json& j) {
  MemoryBreakdown b;
  b.peak = category_bytes_from_json(j.at("peak"));
  b.total_peak = j.at("total_peak").get<int64_t>();
  b.total_peak_ns = ns_from_ms(j.at("total_peak_ms"));
  b.at_total_peak = category_bytes_from_json(j.at("at_total_peak"));
  b.at_start = category_bytes_from_json(j.at("at_start"));
  b.duration_ns = ns_from_ms(j.at("duration_ms"));
  for (const auto& t : j.at("backward_starts_ms")) b.backward_starts_ns.push_back(ns_from_ms(t));
  b.allocations = j.at("allocations").get<int64_t>();
  b.bytes_allocated = j.at("bytes_allocated").get<int64_t>();
  for (const auto& l : j.at("feature_map_layers"))
    b.feature_map_layers.push_back(
        {l.at("layer").get<std::string>(), l.at("bytes").get<int64_t>()});
  for (const auto& a : j.at("largest_allocations"))
    b.largest.push_back({a.at("bytes").get<int64_t>(),
                         category_from_key(a.at("category").get<std::string>()),
                         phase_from_name(a.at("phase").get<std::string>()),
                         a.at("op").get<std::string>(), a.at("layer").get<std::string>()});
  if (j.contains("phases"))
    for (const auto& m : j.at("phases")) {
      const auto phase = plumb::phase_from_name(m.at("phase").get<std::string>());
      if (!phase)
        throw nlohmann::json::other_error::create(501, "unknown generation phase", nullptr);
      b.phases.push_back({*phase, m.at("calls").get<int64_t>(), m.at("peak").get<int64_t>(),
                          category_bytes_from_json(m.at("at_peak")),
                          m.at("allocations").get<int64_t>(),
                          m.at("bytes_allocated").get<int64_t>()});
    }
  if (j.contains("generation")) {
    const auto& g = j.at("generation");
    b.generation = GenerationMemory{
        {g.at("batch").get<int64_t>(), g.at("prompt").get<int64_t>(), g.at("gen").get<int64_t>()},
        g.at("declared_kv_cache_bytes").get<int64_t>()};
  }
  const auto& timeline = j.at("timeline");
  const auto& times = timeline.at("t_ms");
  for (size_t k = 0; k < times.size(); ++k) {
    TimelinePoint p;
    p.t_ns = ns_from_ms(times[k]);
    for (size_t i = 0; i < kMemoryCategoryCount; ++i) {
      const char* key = category_key(category_at(i));
      p.bytes[i] = timeline.contains(key) ? timeline.at(key).at(k).get<int64_t>() : 0;
    }
    b.timeline.push_back(p);
  }
  return b;
}

}  // namespace plumb::profile
