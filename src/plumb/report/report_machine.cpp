// Report section "Machine and ceilings": the environments the records were measured in (one
// row per distinct machine and software stack, so mixed records are visible at once), and the
// newest probe's ceilings: peak FLOP/s per dtype and bandwidth over the working-set size.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/report/report.h"
#include "plumb/report/vega_lite.h"

namespace plumb::report {
namespace {

using vl::json;

Table environment_table(const ReportData& d) {
  // Distinct (machine, software) stacks with how many records each holds.
  std::map<std::string, std::pair<platform::Environment, int>> stacks;
  auto add = [&](const platform::Environment& e) {
    const std::string key = platform::machine_key(e) + "|" + e.libtorch_version + "|" + e.blas +
                            "|" + e.onednn_version + "|" + e.git_commit + "|" + e.compiler;
    auto [it, inserted] = stacks.try_emplace(key, e, 0);
    ++it->second.second;
  };
  for (const auto& r : d.runs) add(r.environment);
  for (const auto& p : d.profiles) add(p.environment);
  for (const auto& m : d.memory) add(m.environment);
  for (const auto& p : d.probes) add(p.environment);
  Table t;
  t.title = "Environments";
  t.columns = {"host", "CPU",    "logical cores", "ISA",      "LibTorch",
               "BLAS", "oneDNN", "plumb commit",  "compiler", "records"};
  for (const auto& [key, entry] : stacks) {
    const auto& e = entry.first;
    t.rows.push_back({{e.host},
                      {e.cpu_model},
                      number_cell(e.logical_cores, std::to_string(e.logical_cores)),
                      {join(e.isa, " ")},
                      {e.libtorch_version},
                      {e.blas + (e.blas_optimized ? "" : " (REFERENCE BLAS: ~25x slower GEMM)")},
                      {e.onednn_version},
                      {e.git_commit},
                      {e.compiler},
                      number_cell(entry.second, std::to_string(entry.second))});
  }
  t.note = stacks.size() > 1
               ? "More than one machine or software stack: compare records only within one."
               : "Every record comes from this one machine and software stack.";
  return t;
}

Chart peaks_chart(const json& doc) {
  json values = json::array();
  for (const auto& [dtype, p] : doc.at("peaks").items()) {
    if (!p.value("supported", false)) continue;
    auto add = [&](const char* kind, const json& v) {
      if (v.is_number() && v.get<double>() > 0)
        values.push_back({{"dtype", dtype}, {"kind", kind}, {"gflops", v.get<double>() / 1e9}});
    };
    // Probes of version 1 have one (vector) engine, described at the top level.
    const json engines = p.contains("engines") ? p.at("engines") : json::array({p});
    for (const auto& e : engines) {
      if (!e.value("supported", false)) continue;
      const std::string engine = e.value("engine", std::string("vector"));
      add((engine + " theoretical").c_str(), e.value("theoretical_flops", json()));
      add((engine + " peak (measured)").c_str(), e.value("instruction_flops", json()));
    }
    add("best library GEMM", p.value("gemm_flops", json()));
  }
  json s = vl::spec(values, 520, 260);
  s["mark"] = {{"type", "bar"}, {"tooltip", true}};
  s["encoding"] = {{"x", vl::field("dtype", "nominal", "data type")},
                   {"xOffset", vl::field("kind", "nominal", "")},
                   {"y", vl::field("gflops", "quantitative", "GFLOP/s (GOP/s for int8)")},
                   {"color", vl::field("kind", "nominal", "peak")}};
  return {"Peak compute per data type",
          "For each data type and engine (vector units; the matrix engine, AMX, where there is "
          "one) the probe's register-resident peak, the theoretical peak inferred from the "
          "throughput per cycle it measured at the clock measured under the same load, and the "
          "best GEMM a library reaches. A data type's roof is its fastest engine; the gap "
          "between the roof and the GEMM is what a real kernel loses.",
          s};
}

// What the probe had to say about its own figures: theory overruling the CPU's model number,
// measurements above theory, a library GEMM above the roof, memory levels merged.
std::vector<std::string> probe_notes(const json& doc) {
  std::vector<std::string> notes;
  for (const auto& [dtype, p] : doc.at("peaks").items()) {
    if (p.contains("engines"))
      for (const auto& e : p.at("engines"))
        if (e.contains("theory") && e.at("theory").is_object() &&
            !e.at("theory").value("note", std::string()).empty())
          notes.push_back(fmt::format("{} {} engine: {}", dtype, e.value("engine", std::string()),
                                      e.at("theory").at("note").get<std::string>()));
    if (!p.value("gemm_note", std::string()).empty())
      notes.push_back(dtype + ": " + p.at("gemm_note").get<std::string>());
  }
  if (doc.contains("bandwidth") && doc.at("bandwidth").contains("merged"))
    for (const auto& m : doc.at("bandwidth").at("merged"))
      notes.push_back("Memory: " + m.at("note").get<std::string>());
  return notes;
}

Chart bandwidth_chart(const json& doc) {
  const auto& b = doc.at("bandwidth");
  int threads = 0;
  for (const auto& c : b.at("curve")) threads = std::max(threads, c.at("threads").get<int>());
  json values = json::array();
  for (const auto& c : b.at("curve"))
    if (c.at("threads").get<int>() == threads)
      values.push_back({{"kernel", c.at("kernel")},
                        {"kib", c.at("working_set_bytes").get<double>() / 1024.0},
                        {"gbs", c.at("bytes_per_s").get<double>() / 1e9}});
  json rules = json::array();
  for (const auto& level : b.at("levels"))
    if (level.at("threads").get<int>() == threads && level.value("capacity_bytes", 0.0) > 0)
      rules.push_back({{"level", level.at("level")},
                       {"kib", level.at("capacity_bytes").get<double>() / 1024.0}});
  json s = vl::spec(json::array(), 620, 300);
  s.erase("data");
  json line = {{"data", {{"values", values}}},
               {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
               {"encoding",
                {{"x", vl::log_field("kib", "working set (KiB, log scale)")},
                 {"y", vl::field("gbs", "quantitative", "bandwidth (GB/s)")},
                 {"color", vl::field("kernel", "nominal", "kernel")}}}};
  json rule = {{"data", {{"values", rules}}},
               {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", "#888"}}},
               {"encoding", {{"x", vl::field("kib", "quantitative", "")}}}};
  json text = {
      {"data", {{"values", rules}}},
      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 3}, {"y", 8}}},
      {"encoding", {{"x", vl::field("kib", "quantitative", "")}, {"text", {{"field", "level"}}}}}};
  s["layer"] = json::array({line, rule, text});
  return {fmt::format("Bandwidth over the working set ({} threads)", threads),
          "Each kernel's data rate as the working set grows; dashed lines mark the cache "
          "capacities. The plateaus are the bandwidth of L1, L2, L3 and DRAM that the rooflines "
          "below use.",
          s};
}

}  // namespace

std::optional<Section> machine_section(const ReportData& d) {
  if (d.runs.empty() && d.profiles.empty() && d.memory.empty() && d.probes.empty())
    return std::nullopt;
  Section s{"machine",
            "Machine and ceilings",
            "Where the records were measured, and what this machine can do at most: every "
            "figure below is read against these ceilings.",
            {}};
  s.blocks.push_back(environment_table(d));
  if (!d.probes.empty()) {
    const auto& probe = d.probes.back();
    s.blocks.push_back(Paragraph{fmt::format("Ceilings from the {} probe measured {} ({:.1f} s).",
                                             probe.mode, probe.measured_at, probe.seconds)});
    s.blocks.push_back(peaks_chart(probe.document));
    for (const std::string& note : probe_notes(probe.document)) s.blocks.push_back(Paragraph{note});
    if (probe.document.contains("bandwidth") && !probe.document["bandwidth"]["curve"].empty())
      s.blocks.push_back(bandwidth_chart(probe.document));
  }
  return s;
}

}  // namespace plumb::report
