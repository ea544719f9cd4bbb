// plumb probe's reporters (see probe_report.h).
#include "plumb/jobs/probe_report.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "plumb/core/text.h"
#include "plumb/report/text_table.h"
#include "plumb/store/record_json.h"

namespace plumb::jobs {
namespace {

using report::format_number;
using report::format_percent;

std::string giga_per_s(double per_s) {
  return per_s > 0 ? format_number(per_s / 1e9, 1) : "-";
}

// Peak per dtype and engine beside theory and the best library GEMM, with the notes it needs.
void print_probe_peaks(std::ostream& out, const nlohmann::ordered_json& d) {
  report::TextTable peaks({"dtype", "engine", "instruction", "peak G(FL)OP/s", "thr",
                           "theory per core", "theoretical", "of theory", "GEMM G(FL)OP/s", "thr",
                           "GEMM library"});
  std::vector<std::string> notes;
  for (const auto& [dtype, p] : d.at("peaks").items()) {
    // Probes of version 1 have no engines: their one row is the vector engine.
    nlohmann::ordered_json engines = nlohmann::ordered_json::array({p});
    if (p.contains("engines")) engines = p.at("engines");
    bool first = true;
    for (const auto& e : engines) {
      const std::string engine = e.value("engine", std::string("vector"));
      const bool roof = e.at("supported").get<bool>() &&
                        e.value("isa", std::string()) == p.value("isa", std::string());
      std::vector<std::string> gemm = {"", "", ""};
      if (first)
        gemm = {giga_per_s(p.at("gemm_flops").get<double>()),
                p.at("gemm_threads").get<int>() > 0
                    ? std::to_string(p.at("gemm_threads").get<int>())
                    : "-",
                p.at("gemm_library").get<std::string>()};
      if (!e.at("supported").get<bool>()) {
        peaks.add_row({first ? dtype : "", engine,
                       "unsupported: " + e.at("reason").get<std::string>(), "", "", "", "", "",
                       gemm[0], gemm[1], gemm[2]});
        first = false;
        continue;
      }
      const double theory =
          e.at("theoretical_flops").is_number() ? e.at("theoretical_flops").get<double>() : 0.0;
      const double peak = e.at("instruction_flops").get<double>();
      const nlohmann::ordered_json theory_info =
          e.contains("theory") ? e.at("theory") : nlohmann::ordered_json();
      std::string per_core = "-";
      if (theory_info.is_object()) {
        // Agreeing: the table's wording (2x256 on Zen 4 issues as 1x512 would).
        per_core = theory_info.at("agrees_with_table").get<bool>()
                       ? theory_info.at("table").get<std::string>() + " (measured agrees)"
                       : theory_info.at("inferred").get<std::string>() + " (measured)";
        const std::string note = theory_info.at("note").get<std::string>();
        if (!note.empty()) notes.push_back(dtype + " " + engine + ": " + note);
      }
      // Several forms of the engine's work timed (int8 without VNNI): each, and which won.
      if (e.contains("sequences") && e.at("sequences").size() > 1) {
        std::vector<std::string> timed;
        for (const auto& q : e.at("sequences"))
          timed.push_back(fmt::format("{} {} G", q.at("isa").get<std::string>(),
                                      giga_per_s(q.at("instruction_flops").get<double>())));
        notes.push_back(fmt::format("{} {}: timed {}; the fastest is the peak", dtype, engine,
                                    join(timed, ", ")));
      }
      peaks.add_row({first ? dtype : "", engine + (roof ? " (roof)" : ""),
                     e.at("isa").get<std::string>(), giga_per_s(peak),
                     std::to_string(e.at("instruction_threads").get<int>()), per_core,
                     giga_per_s(theory), theory > 0 ? format_percent(peak / theory) : "-", gemm[0],
                     gemm[1], gemm[2]});
      first = false;
    }
    const std::string gemm_note = p.value("gemm_note", std::string());
    if (!gemm_note.empty()) notes.push_back(dtype + ": " + gemm_note);
  }
  peaks.print(out);
  out << "theory = issue rate inferred from measured throughput per cycle (at the clock "
         "measured under the same engine's load) x ops per instruction x clock x cores\n";
  for (const auto& n : notes) out << "note: " << n << '\n';
}

// Read, write, copy and triad bandwidth per memory level and thread count.
void print_probe_bandwidth(std::ostream& out, const nlohmann::ordered_json& d) {
  out << "\nmemory bandwidth (GB/s; " << d.at("bandwidth").at("isa").get<std::string>()
      << " kernels, no write-allocate traffic counted):\n";
  report::TextTable bw({"level", "threads", "capacity", "working set", "read", "write", "copy",
                        "triad", "curve drops after"});
  for (const auto& l : d.at("bandwidth").at("levels")) {
    const auto cap = l.at("capacity_bytes").get<int64_t>();
    const auto drop = l.at("plateau_break_bytes").get<int64_t>();
    const std::string merged = l.value("merged_into", std::string());
    bw.add_row({l.at("level").get<std::string>() + (merged.empty() ? "" : " (= " + merged + ")"),
                std::to_string(l.at("threads").get<int>()),
                cap > 0 ? format_number(cap / 1024.0, 0) + " KiB" : "-",
                format_number(l.at("working_set_bytes").get<int64_t>() / 1024.0, 0) + " KiB",
                giga_per_s(l.at("read").get<double>()), giga_per_s(l.at("write").get<double>()),
                giga_per_s(l.at("copy").get<double>()), giga_per_s(l.at("triad").get<double>()),
                drop > 0 ? format_number(drop / 1024.0, 0) + " KiB" : "-"});
  }
  bw.print(out);
  if (d.at("bandwidth").contains("merged"))
    for (const auto& merge : d.at("bandwidth").at("merged"))
      out << "note: " << merge.at("note").get<std::string>() << '\n';
}

void print_probe_gpu(std::ostream& out, const nlohmann::ordered_json& d) {
  const auto& gpu = d.at("gpu");
  if (!gpu.at("available").get<bool>()) {
    out << "\nGPU: " << gpu.at("reason").get<std::string>() << '\n';
    return;
  }
  out << "\nGPU " << gpu.at("device").get<std::string>() << ": memory copy "
      << giga_per_s(gpu.at("bandwidth").at("copy").get<double>()) << " GB/s; GEMM";
  for (const auto& [dtype, p] : gpu.at("peaks").items())
    out << ' ' << dtype << ' '
        << (p.at("supported").get<bool>() ? giga_per_s(p.at("gemm_flops").get<double>()) : "-");
  out << " G(FL)OP/s\n";
}

}  // namespace

void print_probe(std::ostream& out, const ProbeChoice& choice) {
  const auto& d = choice.probe.document;
  const auto& m = d.at("machine");
  const auto& f = m.at("frequency");
  out << fmt::format("{} ({}; {} logical CPUs; widest fp32 ISA {})\n",
                     m.at("model_name").get<std::string>(),
                     m.at("microarchitecture").get<std::string>(), m.at("logical_cpus").get<int>(),
                     m.at("widest_fp32_isa").get<std::string>());
  out << fmt::format("core clock: measured {} GHz, nominal {} GHz ({})\n",
                     format_number(f.at("measured_hz").get<double>() / 1e9, 2),
                     format_number(f.at("nominal_hz").get<double>() / 1e9, 2),
                     f.at("nominal_source").get<std::string>());
  // Where the cache sizes came from matters on VMs: cpuid may report the host's whole LLC.
  std::string caches;
  for (const auto& c : m.at("caches"))
    caches += fmt::format("{}L{}{} {}", caches.empty() ? "" : ", ", c.at("level").get<int>(),
                          c.at("type").get<std::string>() == "Data" ? "d" : "",
                          format_bytes(c.at("size_bytes").get<double>()));
  const std::string source = m.value("cache_source", std::string("sysfs"));
  out << "caches: " << (caches.empty() ? "none readable (neither sysfs nor cpuid)" : caches)
      << (caches.empty() ? "" : " (from " + source + ")") << "\n";
  out << fmt::format("{} probe, {} s, measured {}{}\n\n", d.at("mode").get<std::string>(),
                     format_number(d.at("seconds").get<double>(), 1),
                     d.at("measured_at").get<std::string>(),
                     choice.reused ? " (stored probe reused; --refresh to measure again)" : "");
  print_probe_peaks(out, d);
  print_probe_bandwidth(out, d);
  print_probe_gpu(out, d);
}

nlohmann::ordered_json probe_choice_json(const ProbeChoice& choice) {
  nlohmann::ordered_json out = {{"reused", choice.reused}};
  const nlohmann::ordered_json stored = store::probe_json(choice.probe);
  for (const auto& [key, value] : stored.items()) out[key] = value;
  return out;
}

}  // namespace plumb::jobs
