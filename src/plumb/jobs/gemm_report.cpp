// plumb gemm's reporters (see gemm_report.h): one JSON document, or the shape, speed and int8
// acc16 error tables.
#include "plumb/jobs/gemm_report.h"

#include <fmt/format.h>

#include "plumb/core/json_number.h"
#include "plumb/core/text.h"
#include "plumb/report/text_table.h"

namespace plumb::jobs {
namespace {

using report::format_count;
using report::format_number;
using report::format_percent;

nlohmann::ordered_json gemm_shape_json(const GemmShape& s) {
  return {{"batch", s.batch}, {"m", s.m}, {"n", s.n}, {"k", s.k}};
}

nlohmann::ordered_json gemm_peak_json(const platform::GemmPeak& p) {
  nlohmann::ordered_json j;
  j["supported"] = p.outcome.ok();
  if (!p.outcome.ok()) {
    j["reason"] = p.outcome.reason;
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

nlohmann::ordered_json census_row_json(const GemmResult& result, size_t i) {
  const auto& r = result.census.rows[i];
  nlohmann::ordered_json j;
  j["shape"] = gemm_shape_json(r.shape);
  j["share"] = json_number(r.share);
  j["time_s"] = json_number(r.time_s);
  j["calls"] = json_number(r.calls);
  j["intensity_fp32"] = json_number(r.shape.intensity(4));
  j["square_side"] = json_number(r.shape.square_side());
  j["square_intensity_fp32"] = json_number(r.shape.square_intensity(4));
  j["workloads"] = r.workloads;
  j["ops"] = r.ops;
  if (i < result.measured) {
    j["by_dtype"] = nlohmann::ordered_json::object();
    for (const auto& m : result.rates[i]) {
      auto p = gemm_peak_json(m);
      const auto& sq = result.square_rates.at(m.dtype);
      if (m.outcome.ok() && sq.outcome.ok() && sq.ops_per_s > 0)
        p["of_square"] = json_number(m.ops_per_s / sq.ops_per_s);
      j["by_dtype"][m.dtype] = p;
    }
    if (result.acc16[i]) j["int8_acc16"] = acc16_json(*result.acc16[i]);
  }
  return j;
}

std::string rate_text(const platform::GemmPeak& p, const platform::GemmPeak* square) {
  if (!p.outcome.ok()) return "-";
  std::string s = format_number(p.ops_per_s / 1e9, 1);
  if (square != nullptr && square->outcome.ok() && square->ops_per_s > 0)
    s += " (" + format_percent(p.ops_per_s / square->ops_per_s, 0) + ")";
  return s;
}

void print_leading_shapes(const GemmResult& result, std::ostream& out) {
  const auto& census = result.census;
  report::TextTable shapes({"shape (batch x MxNxK)", "share", "calls/step", "FLOP/B fp32",
                            "square of same MACs: FLOP/B", "used by"});
  for (size_t i = 0; i < result.measured; ++i) {
    const auto& r = census.rows[i];
    shapes.add_row(
        {r.shape.text(), format_percent(r.share), format_number(r.calls, 0),
         format_number(r.shape.intensity(4), 1),
         fmt::format("{:.0f}^3: {:.1f}", r.shape.square_side(), r.shape.square_intensity(4)),
         r.workloads.front() +
             (r.workloads.size() > 1 ? fmt::format(" +{}", r.workloads.size() - 1) : "") + ": " +
             r.ops.front()});
  }
  out << "\nleading shapes (fp32 intensity, and that of the square GEMM with the same "
         "MACs):\n";
  shapes.print(out);
  if (census.rows.size() > result.measured)
    out << fmt::format("({} more shapes; --top N)\n", census.rows.size() - result.measured);
}

void print_speeds(const GemmResult& result, std::ostream& out) {
  std::vector<std::string> header = {"shape"};
  for (const auto& d : result.dtypes) header.push_back(d + " GFLOP/s (of square)");
  report::TextTable speed(header);
  std::vector<std::string> square_row = {result.square.text() + " (square)"};
  for (const auto& d : result.dtypes)
    square_row.push_back(rate_text(result.square_rates.at(d), nullptr));
  speed.add_row(square_row);
  for (size_t i = 0; i < result.measured; ++i) {
    std::vector<std::string> row = {result.census.rows[i].shape.text()};
    for (const auto& m : result.rates[i])
      row.push_back(rate_text(m, &result.square_rates.at(m.dtype)));
    speed.add_row(row);
  }
  out << fmt::format(
      "\nmeasured, {} thread(s), best engine per precision, best call of "
      "{} s:\n",
      result.threads, result.seconds);
  speed.print(out);
  for (const auto& d : result.dtypes) {
    const auto& sq = result.square_rates.at(d);
    out << fmt::format("  {}: {}\n", d,
                       sq.outcome.ok() ? sq.library + " " + sq.implementation
                                       : "not measured: " + sq.outcome.reason);
  }
}

void print_acc16_errors(const GemmResult& result, std::ostream& out) {
  report::TextTable err({"shape", "K", "outliers", "i8-acc32 err", "i8-acc16 err (saturated)",
                         "acc16 + outlier split err (saturated)"});
  for (size_t i = 0; i < result.measured; ++i) {
    const auto& e = *result.acc16[i];
    const auto& shape = result.census.rows[i].shape;
    err.add_row(
        {shape.text(), format_count(shape.k), format_percent(e.outlier_density, 2),
         fmt::format("{:.2e}", e.acc32_relative_l2),
         fmt::format("{:.2e} ({})", e.acc16_relative_l2, format_percent(e.acc16_saturated)),
         fmt::format("{:.2e} ({})", e.split_relative_l2, format_percent(e.split_saturated))});
  }
  out << fmt::format(
      "\nint8 with 16-bit accumulation (spill every {} K elements, {}-bit main weights): "
      "error emulated exactly on synthetic data against the fp32 product; no speed is "
      "claimed, no library here has the kernel:\n",
      result.acc16_options.spill_every, result.acc16_options.main_bits);
  err.print(out);
}

}  // namespace

nlohmann::ordered_json gemm_json(const GemmResult& result) {
  const auto& census = result.census;
  nlohmann::ordered_json out;
  out["threads"] = result.threads;
  out["dtypes"] = result.dtypes;
  out["sources"] = nlohmann::ordered_json::array();
  for (const auto& s : result.sources)
    out["sources"].push_back({{"workload", s.workload},
                              {"mode", s.mode},
                              {"batch", s.batch},
                              {"profile_id", s.profile_id},
                              {"reused", s.reused}});
  out["gemm_share"] = json_number(census.gemm_share);
  out["distinct_shapes"] = census.rows.size();
  out["unread_ops"] = census.unread;
  out["square"] = {{"shape", gemm_shape_json(result.square)},
                   {"intensity_fp32", json_number(result.square.intensity(4))},
                   {"by_dtype", nlohmann::ordered_json::object()}};
  for (const auto& d : result.dtypes)
    out["square"]["by_dtype"][d] = gemm_peak_json(result.square_rates.at(d));
  out["acc16"] = {{"spill_every", result.acc16_options.spill_every},
                  {"main_bits", result.acc16_options.main_bits},
                  {"data",
                   "synthetic: activations ReLU(N(0,1)) as u8 per tensor, weights N(0,1) as s8 "
                   "per output column"}};
  out["shapes"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < census.rows.size(); ++i)
    out["shapes"].push_back(census_row_json(result, i));
  return out;
}

void print_gemm(const GemmResult& result, std::ostream& out) {
  const auto& census = result.census;
  out << fmt::format(
      "{} distinct GEMM shapes in {} profile(s); GEMMs take {} of operator time (mean over "
      "workloads){}\n",
      census.rows.size(), census.sources, format_percent(census.gemm_share),
      census.unread.empty() ? "" : "; shape unread for " + join(census.unread, ", "));
  if (census.rows.empty()) return;
  print_leading_shapes(result, out);
  print_speeds(result, out);
  if (result.with_int8) print_acc16_errors(result, out);
}

}  // namespace plumb::jobs
