// Profile and probe records turned into roofline, intensity and projection inputs (see
// profile_roofline.h).
#include "plumb/analysis/profile_roofline.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "plumb/run/runner.h"

namespace plumb::analysis {
namespace {

bool is_costed(const profile::OpStat& op) {
  return op.kind == profile::kCosted;
}

double op_bytes(const profile::OpStat& op) {
  return op.bytes_read + op.bytes_written;
}

// Adds one operator statistic's time and (when costed) work to an item.
void accumulate(WorkItem& item, const profile::OpStat& op) {
  item.seconds += op.self_s;
  if (!is_costed(op)) return;
  item.flops += op.flops;
  item.bytes += op_bytes(op);
  if (op.calls > 0) item.footprint_bytes = std::max(item.footprint_bytes, op_bytes(op) / op.calls);
}

// The row of `rows` (objects with an integer "threads") to use for `threads`: the largest
// thread count not above it, else the smallest there is.
const nlohmann::json* row_for_threads(const nlohmann::json& rows, int threads) {
  const nlohmann::json* best = nullptr;
  for (const auto& r : rows) {
    const int t = r.at("threads").get<int>();
    if (t <= threads && (best == nullptr || t > best->at("threads").get<int>())) best = &r;
  }
  if (best != nullptr) return best;
  for (const auto& r : rows)
    if (best == nullptr || r.at("threads").get<int>() < best->at("threads").get<int>()) best = &r;
  return best;
}

}  // namespace

std::string op_compute_dtype(const std::string& signature) {
  // "aten::addmm|Float[8]|Float[8,16]|..." : the type before the first '['.
  const size_t bracket = signature.find('[');
  if (bracket == std::string::npos) return "";
  const size_t bar = signature.rfind('|', bracket);
  if (bar == std::string::npos) return "";
  std::string type = signature.substr(bar + 1, bracket - bar - 1);
  const size_t sparse = type.find("sparse");
  if (sparse != std::string::npos) type.resize(sparse);
  // The profiler writes LibTorch's names of the element type ("Float", "QUInt8", ...).
  for (const DtypeInfo& row : dtype_table())
    for (c10::ScalarType scalar : row.scalar_types)
      if (type == c10::toString(scalar)) return row.name;
  return "";
}

std::vector<WorkItem> work_items(const profile::StepProfile& profile, GroupBy by) {
  std::map<std::string, WorkItem> groups;
  std::map<std::string, double> dtype_flops;  // the FLOPs behind each group's dtype so far
  for (const profile::OpStat& op : profile.ops) {
    const std::string key = group_key(op, by);
    WorkItem& item = groups[key];
    accumulate(item, op);
    if (!is_costed(op)) continue;
    auto [seen, first] = dtype_flops.emplace(key, -1.0);
    if (first || op.flops > seen->second) {
      seen->second = op.flops;
      item.dtype = op_compute_dtype(op.signature);
    }
  }
  std::vector<WorkItem> out;
  for (auto& [name, item] : groups) {
    item.name = name;
    out.push_back(std::move(item));
  }
  std::sort(out.begin(), out.end(),
            [](const WorkItem& a, const WorkItem& b) { return a.seconds > b.seconds; });
  return out;
}

std::map<std::string, Placement> place_rows(const profile::StepProfile& profile, GroupBy by,
                                            const Ceilings& ceilings) {
  std::map<std::string, Placement> out;
  for (const WorkItem& item : work_items(profile, by))
    out.emplace(item.name, place(item, ceilings));
  return out;
}

WorkItem step_item(const profile::StepProfile& profile, const std::string& name) {
  WorkItem item = sum_items(work_items(profile, GroupBy::kOp), name);
  item.seconds = profile.step_s;  // wall time: framework overhead outside operators included
  return item;
}

PeakKind parse_peak_kind(const std::string& text) {
  if (text == "instruction") return PeakKind::kInstruction;
  if (text == "gemm") return PeakKind::kGemm;
  throw UsageError(fmt::format("unknown peak '{}': use instruction or gemm", text));
}

namespace {

// The compute roof of one dtype's entry in the probe's `peaks`, or nullopt-like {0, reason}.
ComputeRoof compute_roof(const nlohmann::json& p, const std::string& dtype, int threads,
                         PeakKind kind) {
  ComputeRoof roof;
  if (kind == PeakKind::kInstruction) {
    const auto* row = row_for_threads(p.at("by_threads"), threads);
    if (row == nullptr) return roof;
    roof.flops = row->at("flops").get<double>();
    const std::string engine = p.value("engine", std::string("vector"));
    roof.source = fmt::format("{} instruction peak ({}{}, {} threads)", dtype,
                              engine == "matrix" ? "matrix engine, " : "",
                              p.at("isa").get<std::string>(), row->at("threads").get<int>());
    return roof;
  }
  nlohmann::json supported = nlohmann::json::array();
  for (const auto& g : p.at("gemm"))
    if (g.at("supported").get<bool>()) supported.push_back(g);
  const auto* row = row_for_threads(supported, threads);
  if (row == nullptr) return roof;
  // Several libraries per thread count: the fastest one at the chosen count.
  const int t = row->at("threads").get<int>();
  for (const auto& g : supported)
    if (g.at("threads").get<int>() == t && g.at("flops").get<double>() > roof.flops) {
      roof.flops = g.at("flops").get<double>();
      roof.source = fmt::format("{} GEMM peak ({}, {} threads)", dtype,
                                g.at("library").get<std::string>(), t);
    }
  return roof;
}

}  // namespace

Ceilings ceilings_from_probe(const nlohmann::json& probe, const std::string& dtype, int threads,
                             PeakKind kind) {
  const auto& peaks = probe.at("peaks");
  if (!peaks.contains(dtype))
    throw UsageError(fmt::format("the probe has no peak for dtype '{}'", dtype));
  const auto& p = peaks.at(dtype);
  if (!p.at("supported").get<bool>())
    throw UsageError(fmt::format("dtype {} is not supported on this machine: {}", dtype,
                                 p.at("reason").get<std::string>()));
  Ceilings c;
  const ComputeRoof own = compute_roof(p, dtype, threads, kind);
  if (own.flops <= 0) {
    PLUMB_ASSERT(kind == PeakKind::kGemm, "a supported dtype has per-thread peaks");
    throw UsageError(fmt::format("the probe measured no GEMM for dtype {}", dtype));
  }
  c.peak_flops = own.flops;
  c.peak_source = own.source;
  for (const auto& [name, entry] : peaks.items()) {
    if (!entry.at("supported").get<bool>()) continue;
    const ComputeRoof roof = compute_roof(entry, name, threads, kind);
    if (roof.flops > 0) c.by_dtype[name] = roof;
  }
  nlohmann::json levels = nlohmann::json::array();
  const auto* level_row = row_for_threads(probe.at("bandwidth").at("levels"), threads);
  if (level_row == nullptr)
    throw UsageError(
        "the probe has no memory-level bandwidths: neither sysfs nor cpuid gave this machine's "
        "cache sizes (machine.caches of plumb probe --json is empty), so it cannot tell a cache "
        "level from DRAM");
  const int t = level_row->at("threads").get<int>();
  for (const auto& l : probe.at("bandwidth").at("levels")) {
    if (l.at("threads").get<int>() != t) continue;
    // A level the probe found indistinct from a slower one is not a roof of its own.
    if (!l.value("merged_into", std::string()).empty()) continue;
    c.memory.push_back({l.at("level").get<std::string>(), l.at("triad").get<double>(),
                        l.at("capacity_bytes").get<int64_t>()});
  }
  return c;
}

Ceilings gpu_ceilings_from_probe(const nlohmann::json& probe, const std::string& dtype) {
  const nlohmann::json gpu = probe.value("gpu", nlohmann::json::object());
  if (!gpu.value("available", false))
    throw UsageError(fmt::format(
        "the probe measured no GPU ({}); run plumb probe --refresh on the GPU's machine",
        gpu.value("reason", std::string("it predates GPU probing"))));
  const nlohmann::json peaks = gpu.value("peaks", nlohmann::json::object());
  const std::string name = gpu.value("device", std::string("the GPU"));
  Ceilings c;
  for (const auto& [peak_dtype, entry] : peaks.items()) {
    if (!entry.value("supported", false)) continue;
    const double flops = entry.at("gemm_flops").get<double>();
    if (flops <= 0) continue;
    c.by_dtype[peak_dtype] = {flops, fmt::format("{} cuBLAS GEMM peak ({}, n = {})", peak_dtype,
                                                 name, entry.at("size").get<int64_t>())};
  }
  const auto own = c.by_dtype.find(dtype);
  if (own == c.by_dtype.end()) {
    const nlohmann::json entry = peaks.value(dtype, nlohmann::json::object());
    throw UsageError(fmt::format(
        "the GPU probe has no {} GEMM peak for {}{}", dtype, name,
        entry.contains("reason") ? ": " + entry.at("reason").get<std::string>() : std::string()));
  }
  c.peak_flops = own->second.flops;
  c.peak_source = own->second.source;
  const nlohmann::json bandwidth = gpu.value("bandwidth", nlohmann::json::object());
  const double copy = bandwidth.value("copy", 0.0);
  if (copy <= 0)
    throw UsageError(fmt::format("the GPU probe measured no memory bandwidth for {}", name));
  c.memory.push_back({"device memory", copy, 0});
  return c;
}

Ceilings device_ceilings_from_probe(const nlohmann::json& probe, const std::string& device,
                                    const std::string& dtype, int threads, PeakKind kind) {
  if (run::names_a_gpu(device)) return gpu_ceilings_from_probe(probe, dtype);
  return ceilings_from_probe(probe, dtype, threads, kind);
}

LevelBandwidths level_bandwidths(const nlohmann::json& probe, const std::string& level,
                                 int threads) {
  nlohmann::json rows = nlohmann::json::array();
  if (probe.contains("bandwidth"))
    for (const auto& l : probe.at("bandwidth").value("levels", nlohmann::json::array()))
      if (l.at("level").get<std::string>() == level) rows.push_back(l);
  const auto* row = row_for_threads(rows, threads);
  if (row == nullptr)
    throw UsageError(fmt::format(
        "the probe measured no {} bandwidth; run plumb probe --refresh on this machine", level));
  return {row->at("read").get<double>(), row->at("triad").get<double>(),
          row->at("threads").get<int>()};
}

LayerTrafficResult layer_traffic(const profile::StepProfile& profile,
                                 const std::vector<ParameterSize>& parameters,
                                 const std::map<std::string, double>& layer_calls,
                                 double element_bytes) {
  PLUMB_ASSERT(element_bytes > 0, "element size must be positive");
  struct Acc {
    double ops = 0, bytes = 0, macs = 0;
    bool embedding = false;
    double lookup_read = 0;  // bytes the layer's embedding lookups read (rows and indices)
  };
  std::map<std::string, Acc> layers;
  for (const profile::OpStat& op : profile.ops) {
    if (op.layer.empty()) continue;
    Acc& a = layers[op.layer];
    const bool lookup = op.category == "Embedding";
    a.embedding = a.embedding || lookup;
    if (!is_costed(op)) continue;
    a.ops += op.flops;
    a.bytes += op_bytes(op);
    a.macs += op.macs;
    // The lookups proper compute in the table's type; the integer bookkeeping of offsets and
    // bag sizes around them (also labelled Embedding) reads no row of the table.
    if (lookup && !op_compute_dtype(op.signature).empty()) a.lookup_read += op.bytes_read;
  }
  // Each parameter to the longest layer path it extends; the first parameter orders layers
  // (registration order, which is the order the model runs its layers in).
  std::map<std::string, double> weights;
  std::map<std::string, size_t> first_parameter;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::string& name = parameters[i].name;
    const std::string* owner = nullptr;
    for (const auto& [layer, acc] : layers)
      if (name.size() > layer.size() && name.compare(0, layer.size(), layer) == 0 &&
          name[layer.size()] == '.' && (owner == nullptr || layer.size() > owner->size()))
        owner = &layer;
    if (owner == nullptr) continue;
    weights[*owner] += parameters[i].elements;
    first_parameter.emplace(*owner, i);
  }
  struct Row {
    size_t order;
    LayerTraffic traffic;
    double parameters;
  };
  LayerTrafficResult out;
  std::vector<Row> rows;
  for (const auto& [layer, a] : layers) {
    if (a.macs <= 0 && !a.embedding) continue;  // not a compute layer (see the header)
    auto w = weights.find(layer);
    if (w == weights.end()) {
      out.unmatched.push_back(layer);
      continue;
    }
    auto calls = layer_calls.find(layer);
    const double evaluations = calls != layer_calls.end() ? std::max(1.0, calls->second) : 1.0;
    double weight_traffic = w->second * evaluations;
    // A lookup reads the rows it gathers, not its table: a table of millions of rows would
    // otherwise count as read in full at every call (Table 1's embeddings: 1-2 ops per weight).
    if (a.embedding && a.macs <= 0)
      weight_traffic = std::min(weight_traffic, a.lookup_read / element_bytes);
    // Operators read each weight once per evaluation; activations are the rest of the traffic.
    const double activation_elements = std::max(0.0, a.bytes / element_bytes - weight_traffic);
    rows.push_back({first_parameter.at(layer),
                    {layer, a.ops, weight_traffic, activation_elements, element_bytes},
                    w->second});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.order < y.order; });
  for (auto& r : rows) {
    out.layers.push_back(std::move(r.traffic));
    out.parameter_elements.push_back(r.parameters);
  }
  return out;
}

}  // namespace plumb::analysis
