// plumb probe: this machine's measured ceilings (instruction and GEMM peaks per dtype,
// bandwidth per memory level) beside the theoretical peak, stored for later commands.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/cli/commands.h"
#include "plumb/cli/probe_source.h"
#include "plumb/cli/table.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"

namespace plumb::cli {
namespace {

struct ProbeFlags {
  bool quick = false;
  bool thorough = false;
  bool refresh = false;
  int threads = 0;
  std::string db = "plumb.db";
  bool json = false;
};

std::string giga(double per_s) {
  return per_s > 0 ? format_number(per_s / 1e9, 1) : "-";
}

void print_probe(const ProbeChoice& choice) {
  const auto& d = choice.probe.document;
  const auto& m = d.at("machine");
  const auto& f = m.at("frequency");
  std::cout << fmt::format(
      "{} ({}; {} logical CPUs; widest fp32 ISA {})\n", m.at("model_name").get<std::string>(),
      m.at("microarchitecture").get<std::string>(), m.at("logical_cpus").get<int>(),
      m.at("widest_fp32_isa").get<std::string>());
  std::cout << fmt::format("core clock: measured {} GHz, nominal {} GHz ({})\n",
                           format_number(f.at("measured_hz").get<double>() / 1e9, 2),
                           format_number(f.at("nominal_hz").get<double>() / 1e9, 2),
                           f.at("nominal_source").get<std::string>());
  std::cout << fmt::format(
      "{} probe, {} s, measured {}{}\n\n", d.at("mode").get<std::string>(),
      format_number(d.at("seconds").get<double>(), 1), d.at("measured_at").get<std::string>(),
      choice.reused ? " (stored probe reused; --refresh to measure again)" : "");
  Table peaks({"dtype", "engine", "instruction", "peak G(FL)OP/s", "thr", "theory per core",
               "theoretical", "of theory", "GEMM G(FL)OP/s", "thr", "GEMM library"});
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
        gemm = {giga(p.at("gemm_flops").get<double>()),
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
                                      giga(q.at("instruction_flops").get<double>())));
        notes.push_back(fmt::format("{} {}: timed {}; the fastest is the peak", dtype, engine,
                                    join(timed, ", ")));
      }
      peaks.add_row({first ? dtype : "", engine + (roof ? " (roof)" : ""),
                     e.at("isa").get<std::string>(), giga(peak),
                     std::to_string(e.at("instruction_threads").get<int>()), per_core, giga(theory),
                     theory > 0 ? format_percent(peak / theory) : "-", gemm[0], gemm[1], gemm[2]});
      first = false;
    }
    const std::string gemm_note = p.value("gemm_note", std::string());
    if (!gemm_note.empty()) notes.push_back(dtype + ": " + gemm_note);
  }
  peaks.print(std::cout);
  std::cout << "theory = issue rate inferred from measured throughput per cycle (at the clock "
               "measured under the same engine's load) x ops per instruction x clock x cores\n";
  for (const auto& n : notes) std::cout << "note: " << n << '\n';
  std::cout << "\nmemory bandwidth (GB/s; " << d.at("bandwidth").at("isa").get<std::string>()
            << " kernels, no write-allocate traffic counted):\n";
  Table bw({"level", "threads", "capacity", "working set", "read", "write", "copy", "triad",
            "curve drops after"});
  for (const auto& l : d.at("bandwidth").at("levels")) {
    const auto cap = l.at("capacity_bytes").get<int64_t>();
    const auto drop = l.at("plateau_break_bytes").get<int64_t>();
    const std::string merged = l.value("merged_into", std::string());
    bw.add_row({l.at("level").get<std::string>() + (merged.empty() ? "" : " (= " + merged + ")"),
                std::to_string(l.at("threads").get<int>()),
                cap > 0 ? format_number(cap / 1024.0, 0) + " KiB" : "-",
                format_number(l.at("working_set_bytes").get<int64_t>() / 1024.0, 0) + " KiB",
                giga(l.at("read").get<double>()), giga(l.at("write").get<double>()),
                giga(l.at("copy").get<double>()), giga(l.at("triad").get<double>()),
                drop > 0 ? format_number(drop / 1024.0, 0) + " KiB" : "-"});
  }
  bw.print(std::cout);
  if (d.at("bandwidth").contains("merged"))
    for (const auto& merge : d.at("bandwidth").at("merged"))
      std::cout << "note: " << merge.at("note").get<std::string>() << '\n';
  const auto& gpu = d.at("gpu");
  if (!gpu.at("available").get<bool>()) {
    std::cout << "\nGPU: " << gpu.at("reason").get<std::string>() << '\n';
    return;
  }
  std::cout << "\nGPU " << gpu.at("device").get<std::string>() << ": memory copy "
            << giga(gpu.at("bandwidth").at("copy").get<double>()) << " GB/s; GEMM";
  for (const auto& [dtype, p] : gpu.at("peaks").items())
    std::cout << ' ' << dtype << ' '
              << (p.at("supported").get<bool>() ? giga(p.at("gemm_flops").get<double>()) : "-");
  std::cout << " G(FL)OP/s\n";
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "probe", "Measure this machine's ceilings: peak FLOP/s per dtype, bandwidth per level");
  auto f = std::make_shared<ProbeFlags>();
  cmd->add_flag("--quick", f->quick, "A few seconds (the default)");
  cmd->add_flag("--thorough", f->thorough, "Finer sweeps and longer timings (about a minute)");
  cmd->add_flag("--refresh", f->refresh, "Measure again even if a stored probe exists");
  cmd->add_option("--threads", f->threads, "Largest thread count to measure (default: all CPUs)");
  cmd->add_option("--db", f->db, "Results database (SQLite)")->capture_default_str();
  cmd->add_flag("--json", f->json, "Print one JSON document on stdout");
  cmd->callback([f] {
    if (f->quick && f->thorough) throw UsageError("--quick and --thorough exclude each other");
    if (f->threads < 0) throw UsageError("--threads must be positive");
    auto db = store::ResultsStore::open(f->db);
    const ProbeChoice choice = current_probe(*db, {f->thorough, f->refresh, f->threads});
    if (f->json) {
      nlohmann::ordered_json out = {{"reused", choice.reused}};
      const nlohmann::ordered_json stored = store::probe_json(choice.probe);
      for (const auto& [key, value] : stored.items()) out[key] = value;
      std::cout << json_text(out, 2) << '\n';
      return;
    }
    print_probe(choice);
    std::cout << "\nstored as probe " << choice.probe.id << " in " << db->path() << '\n';
  });
}

}  // namespace plumb::cli
