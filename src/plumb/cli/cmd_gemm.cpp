// plumb gemm: the GEMM shapes the workloads really run (Facebook inference paper, Fig. 5-6),
// taken from their operator profiles (convolutions as their im2col GEMMs), set against square
// HPC shapes, and each measured in fp32, bf16, fp16 and int8 on the best engine the linked
// libraries offer; int8 with 16-bit accumulation and the outlier split, which no library here
// runs, gets its exact error emulated and no speed.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/gemm_census.h"
#include "plumb/cli/commands.h"
#include "plumb/cli/config_options.h"
#include "plumb/cli/list_options.h"
#include "plumb/cli/measure_options.h"
#include "plumb/cli/table.h"
#include "plumb/cli/workload_selection.h"
#include "plumb/core/errors.h"
#include "plumb/core/json_number.h"
#include "plumb/core/json_text.h"
#include "plumb/core/text.h"
#include "plumb/platform/environment.h"
#include "plumb/platform/gemm_peaks.h"
#include "plumb/platform/int8_acc16.h"
#include "plumb/profile/profiler.h"
#include "plumb/run/runner.h"
#include "plumb/run/step_loop.h"
#include "plumb/store/results_store.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb::cli {
namespace {

struct GemmFlags {
  MeasureFlags measure;
  std::vector<std::string> workloads;
  std::string suites;
  std::string gemm_dtypes = "fp32,bf16,fp16,int8";
  size_t top = 12;
  double seconds = 0.2;
  int64_t square = 1024;
  bool from_db = false;
  int steps = 1;
  platform::Acc16Options acc16;
};

// One precision of one shape: the fastest supported engine, or why none runs it.
platform::GemmPeak fastest(const std::string& dtype, const GemmShape& shape, int threads,
                           double seconds) {
  std::vector<platform::GemmPeak> tried;
  // fp32 has two engines (OpenBLAS under LibTorch, oneDNN); the others run on oneDNN only.
  if (dtype == "fp32")
    tried.push_back(
        platform::measure_gemm(dtype, platform::GemmLibrary::kTorchMm, shape, threads, seconds));
  tried.push_back(
      platform::measure_gemm(dtype, platform::GemmLibrary::kOneDnn, shape, threads, seconds));
  platform::GemmPeak best = tried.back();
  for (const auto& t : tried)
    if (t.supported && (!best.supported || t.ops_per_s > best.ops_per_s)) best = t;
  return best;
}

// A profile per (workload, mode): the newest stored one with --from-db, else a new pass, stored.
struct Source {
  std::string workload, mode;
  int64_t batch = 0;
  int64_t profile_id = 0;
  bool reused = false;
  profile::StepProfile profile;
};

std::optional<Source> stored_source(const store::ResultsStore& db, const std::string& workload,
                                    const std::string& mode) {
  const auto all = db.load_profiles();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->workload != workload || it->mode != mode || it->result.status != run::RunStatus::kOk ||
        it->result.profile.ops.empty())
      continue;
    return Source{workload, mode, it->batch, it->id, true, it->result.profile};
  }
  return std::nullopt;
}

nlohmann::ordered_json shape_json(const GemmShape& s) {
  return {{"batch", s.batch}, {"m", s.m}, {"n", s.n}, {"k", s.k}};
}

nlohmann::ordered_json peak_json(const platform::GemmPeak& p) {
  nlohmann::ordered_json j;
  j["supported"] = p.supported;
  if (!p.supported) {
    j["reason"] = p.reason;
    return j;
  }
  j["library"] = p.library;
  j["implementation"] = p.implementation;
  j["flops"] = json_number(p.ops_per_s);
  return j;
}

nlohmann::ordered_json acc16_json(const platform::Acc16Error& e) {
  return {{"outputs", e.outputs},
          {"outlier_density", json_number(e.outlier_density)},
          {"acc32_relative_l2", json_number(e.acc32_relative_l2)},
          {"acc16_relative_l2", json_number(e.acc16_relative_l2)},
          {"acc16_saturated_share", json_number(e.acc16_saturated)},
          {"split_relative_l2", json_number(e.split_relative_l2)},
          {"split_saturated_share", json_number(e.split_saturated)},
          {"speed", nullptr},
          {"speed_note", "no kernel with 16-bit accumulation in the linked libraries"}};
}

std::string rate_text(const platform::GemmPeak& p, const platform::GemmPeak* square) {
  if (!p.supported) return "-";
  std::string s = format_number(p.ops_per_s / 1e9, 1);
  if (square != nullptr && square->supported && square->ops_per_s > 0)
    s += " (" + format_percent(p.ops_per_s / square->ops_per_s, 0) + ")";
  return s;
}

}  // namespace

void add_gemm_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "gemm", "The GEMM shapes workloads run, against square ones, measured per precision");
  auto f = std::make_shared<GemmFlags>();
  auto overrides = std::make_shared<ConfigOverrides>();
  f->measure.mode = "infer";
  cmd->add_option("workloads", f->workloads, "Workload names (see plumb list)");
  cmd->add_option("--suite", f->suites, "Every workload of these suites, e.g. fathom,tbd");
  cmd->add_option("--mode", f->measure.mode, "infer, train, or train,infer")->capture_default_str();
  add_config_options(*cmd, *overrides);
  cmd->add_flag("--suite-size", overrides->suite_size,
                "Profile the batch and sizes plumb suite measures (then --batch/--set on top)");
  add_measure_options(*cmd, f->measure, 60, 20, SamplingOptions::kWithout);
  restrict_device_to_cpu(*cmd, "the shapes are timed with the CPU's GEMM libraries");
  cmd->add_option("--dtypes", f->gemm_dtypes, "Precisions each GEMM shape is measured in")
      ->capture_default_str();
  cmd->add_option("--top", f->top, "Measure the K shapes with the largest share of time")
      ->capture_default_str();
  cmd->add_option("--seconds", f->seconds, "Timing budget per shape and precision")
      ->capture_default_str();
  cmd->add_option("--square", f->square, "Side of the square reference GEMM (M = N = K)")
      ->capture_default_str();
  cmd->add_option("--steps", f->steps, "Steps observed per profile pass")->capture_default_str();
  cmd->add_flag("--from-db", f->from_db,
                "Take the newest stored profile of each workload and mode when there is one");
  cmd->add_option("--acc16-spill", f->acc16.spill_every,
                  "int8 acc16 emulation: K elements between spills of the 16-bit sums")
      ->capture_default_str();
  cmd->add_option("--outlier-bits", f->acc16.main_bits,
                  "int8 acc16 emulation: bits of the weights' main part (the rest are outliers)")
      ->capture_default_str();
  cmd->callback([f, overrides, &exit_code] {
    const std::vector<const Workload*> chosen = chosen_workloads(f->workloads, f->suites);
    std::vector<Mode> modes;
    for (const auto& m : parse_name_list("--mode", f->measure.mode)) modes.push_back(parse_mode(m));
    std::vector<std::string> dtypes;
    for (Dtype d : parse_dtype_list(f->gemm_dtypes)) dtypes.emplace_back(dtype_name(d));
    if (f->top < 1) throw UsageError("--top must be at least 1");
    if (!(f->seconds > 0)) throw UsageError("--seconds must be positive");
    if (f->square < 16 || f->square > 8192) throw UsageError("--square must be 16 to 8192");
    if (f->steps < 1) throw UsageError("--steps must be at least 1");
    if (f->acc16.spill_every < 2 || f->acc16.spill_every % 2 != 0)
      throw UsageError("--acc16-spill must be an even number of K elements, at least 2");
    if (f->acc16.main_bits < 2 || f->acc16.main_bits > 8)
      throw UsageError("--outlier-bits must be 2 to 8");
    f->acc16.seed = f->measure.run.seed;
    // Validate every workload's options before the first pass starts.
    std::vector<run::RunOptions> plan;
    for (const Workload* w : chosen) {
      const Config config = resolve_config(*w, *overrides);
      for (Mode m : modes) plan.push_back(make_options(*w, config, m, f->measure).front());
    }

    auto db = store::ResultsStore::open(f->measure.db);
    const std::string group = fmt::format("gemm-{}-{}", utc_now_iso8601(), getpid());
    std::vector<Source> sources;
    for (const auto& o : plan) {
      const Workload& w = workloads::default_registry().get(o.workload);
      if (f->from_db) {
        if (auto s = stored_source(*db, o.workload, mode_name(o.mode))) {
          std::cerr << fmt::format("{} {}: stored profile {} (batch {})\n", o.workload,
                                   mode_name(o.mode), s->profile_id, s->batch);
          sources.push_back(std::move(*s));
          continue;
        }
      }
      std::cerr << fmt::format("profiling {} {} batch {} ...\n", o.workload, mode_name(o.mode),
                               o.config.get_int("batch"));
      const auto env = platform::capture_environment(o.threads, o.device);
      const auto result = profile::profile_workload(
          w, o, f->steps, [](const std::string& line) { std::cerr << "  " << line << '\n'; });
      const int64_t id = db->save_profile(o, result, env, group, f->measure.tag);
      if (result.status != run::RunStatus::kOk) {
        std::cerr << fmt::format("  {} {}: {} ({}): no GEMM shapes from it\n", o.workload,
                                 mode_name(o.mode), run::status_name(result.status),
                                 result.message);
        exit_code = 1;
        continue;
      }
      sources.push_back(
          {o.workload, mode_name(o.mode), o.config.get_int("batch"), id, false, result.profile});
    }
    std::vector<analysis::GemmSource> inputs;
    for (const auto& s : sources) inputs.push_back({s.workload, s.mode, &s.profile});
    const auto census = analysis::gemm_census(inputs);

    // Measure the leading shapes and the square reference, at the run's thread count.
    const int threads = f->measure.run.threads;
    const int previous = at::get_num_threads();
    run::apply_threads(threads);
    const GemmShape square{1, f->square, f->square, f->square};
    std::map<std::string, platform::GemmPeak> square_rates;
    std::cerr << fmt::format("square reference {} ...\n", square.text());
    for (const auto& d : dtypes) square_rates.emplace(d, fastest(d, square, threads, f->seconds));
    const size_t measured = std::min(f->top, census.rows.size());
    std::vector<std::vector<platform::GemmPeak>> rates(measured);
    std::vector<std::optional<platform::Acc16Error>> acc16(measured);
    const bool with_int8 = std::find(dtypes.begin(), dtypes.end(), "int8") != dtypes.end();
    for (size_t i = 0; i < measured; ++i) {
      const auto& shape = census.rows[i].shape;
      std::cerr << fmt::format("measuring {} ({}/{}) ...\n", shape.text(), i + 1, measured);
      for (const auto& d : dtypes) rates[i].push_back(fastest(d, shape, threads, f->seconds));
      if (with_int8) acc16[i] = platform::emulate_int8_acc16(shape, f->acc16);
    }
    run::apply_threads(previous);

    nlohmann::ordered_json out;
    out["threads"] = threads;
    out["dtypes"] = dtypes;
    out["sources"] = nlohmann::ordered_json::array();
    for (const auto& s : sources)
      out["sources"].push_back({{"workload", s.workload},
                                {"mode", s.mode},
                                {"batch", s.batch},
                                {"profile_id", s.profile_id},
                                {"reused", s.reused}});
    out["gemm_share"] = json_number(census.gemm_share);
    out["distinct_shapes"] = census.rows.size();
    out["unread_ops"] = census.unread;
    out["square"] = {{"shape", shape_json(square)},
                     {"intensity_fp32", json_number(square.intensity(4))},
                     {"by_dtype", nlohmann::ordered_json::object()}};
    for (const auto& d : dtypes) out["square"]["by_dtype"][d] = peak_json(square_rates.at(d));
    out["acc16"] = {{"spill_every", f->acc16.spill_every},
                    {"main_bits", f->acc16.main_bits},
                    {"data",
                     "synthetic: activations ReLU(N(0,1)) as u8 per tensor, weights N(0,1) as s8 "
                     "per output column"}};
    out["shapes"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < census.rows.size(); ++i) {
      const auto& r = census.rows[i];
      nlohmann::ordered_json j;
      j["shape"] = shape_json(r.shape);
      j["share"] = json_number(r.share);
      j["time_s"] = json_number(r.time_s);
      j["calls"] = json_number(r.calls);
      j["intensity_fp32"] = json_number(r.shape.intensity(4));
      j["square_side"] = json_number(r.shape.square_side());
      j["square_intensity_fp32"] = json_number(r.shape.square_intensity(4));
      j["workloads"] = r.workloads;
      j["ops"] = r.ops;
      if (i < measured) {
        j["by_dtype"] = nlohmann::ordered_json::object();
        for (const auto& m : rates[i]) {
          auto p = peak_json(m);
          const auto& sq = square_rates.at(m.dtype);
          if (m.supported && sq.supported && sq.ops_per_s > 0)
            p["of_square"] = json_number(m.ops_per_s / sq.ops_per_s);
          j["by_dtype"][m.dtype] = p;
        }
        if (acc16[i]) j["int8_acc16"] = acc16_json(*acc16[i]);
      }
      out["shapes"].push_back(j);
    }
    if (f->measure.json) {
      std::cout << json_text(out, 2) << '\n';
      return;
    }

    std::cout << fmt::format(
        "{} distinct GEMM shapes in {} profile(s); GEMMs take {} of operator time (mean over "
        "workloads){}\n",
        census.rows.size(), census.sources, format_percent(census.gemm_share),
        census.unread.empty() ? "" : "; shape unread for " + join(census.unread, ", "));
    if (census.rows.empty()) return;
    Table shapes({"shape (batch x MxNxK)", "share", "calls/step", "FLOP/B fp32",
                  "square of same MACs: FLOP/B", "used by"});
    for (size_t i = 0; i < measured; ++i) {
      const auto& r = census.rows[i];
      shapes.add_row(
          {r.shape.text(), format_percent(r.share), format_number(r.calls, 0),
           format_number(r.shape.intensity(4), 1),
           fmt::format("{:.0f}^3: {:.1f}", r.shape.square_side(), r.shape.square_intensity(4)),
           r.workloads.front() +
               (r.workloads.size() > 1 ? fmt::format(" +{}", r.workloads.size() - 1) : "") + ": " +
               r.ops.front()});
    }
    std::cout << "\nleading shapes (fp32 intensity, and that of the square GEMM with the same "
                 "MACs):\n";
    shapes.print(std::cout);
    if (census.rows.size() > measured)
      std::cout << fmt::format("({} more shapes; --top N)\n", census.rows.size() - measured);

    std::vector<std::string> header = {"shape"};
    for (const auto& d : dtypes) header.push_back(d + " GFLOP/s (of square)");
    Table speed(header);
    std::vector<std::string> square_row = {square.text() + " (square)"};
    for (const auto& d : dtypes) square_row.push_back(rate_text(square_rates.at(d), nullptr));
    speed.add_row(square_row);
    for (size_t i = 0; i < measured; ++i) {
      std::vector<std::string> row = {census.rows[i].shape.text()};
      for (const auto& m : rates[i]) row.push_back(rate_text(m, &square_rates.at(m.dtype)));
      speed.add_row(row);
    }
    std::cout << fmt::format(
        "\nmeasured, {} thread(s), best engine per precision, best call of "
        "{} s:\n",
        threads, f->seconds);
    speed.print(std::cout);
    for (const auto& d : dtypes) {
      const auto& sq = square_rates.at(d);
      std::cout << fmt::format(
          "  {}: {}\n", d,
          sq.supported ? sq.library + " " + sq.implementation : "not measured: " + sq.reason);
    }
    if (with_int8) {
      Table err({"shape", "K", "outliers", "i8-acc32 err", "i8-acc16 err (saturated)",
                 "acc16 + outlier split err (saturated)"});
      for (size_t i = 0; i < measured; ++i) {
        const auto& e = *acc16[i];
        err.add_row(
            {census.rows[i].shape.text(), format_count(census.rows[i].shape.k),
             format_percent(e.outlier_density, 2), fmt::format("{:.2e}", e.acc32_relative_l2),
             fmt::format("{:.2e} ({})", e.acc16_relative_l2, format_percent(e.acc16_saturated)),
             fmt::format("{:.2e} ({})", e.split_relative_l2, format_percent(e.split_saturated))});
      }
      std::cout << fmt::format(
          "\nint8 with 16-bit accumulation (spill every {} K elements, {}-bit main weights): "
          "error emulated exactly on synthetic data against the fp32 product; no speed is "
          "claimed, no library here has the kernel:\n",
          f->acc16.spill_every, f->acc16.main_bits);
      err.print(std::cout);
    }
  });
}

}  // namespace plumb::cli
