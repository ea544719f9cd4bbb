// A tuning session's document, written and read (see tune_result.h). The writer reproduces the
// document plumb tune always wrote, key order included (ordered_json), so a stored session
// reads back and prints byte for byte; the reader takes what is there and leaves defaults for
// keys an older plumb did not write.
#include "plumb/store/tune_result.h"

#include <cmath>

#include "plumb/core/json_number.h"

namespace plumb::store {
namespace {

using json = nlohmann::ordered_json;

double tune_number(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : NAN;
}

template <typename T>
T tune_value(const json& j, const char* key, T fallback) {
  return j.contains(key) && !j.at(key).is_null() ? j.at(key).get<T>() : fallback;
}

std::optional<std::string> tune_note(const json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return j.at(key).get<std::string>();
}

json precision_error_json(const TunePrecisionError& p) {
  json j;
  j["dtype"] = p.dtype;
  j["error"] = json_number(p.error);
  j["measure"] = p.measure;
  j["allowed"] = p.allowed;
  if (!p.note.empty()) j["note"] = p.note;
  if (std::isfinite(p.logits_relative_l2)) j["logits_relative_l2"] = p.logits_relative_l2;
  return j;
}

json space_json(const TuneSpaceSummary& s) {
  json factors = json::array();
  for (const auto& f : s.factors) factors.push_back({{"name", f.name}, {"values", f.values}});
  return {{"factors", factors}, {"points", s.points}, {"not_searched", s.not_searched}};
}

json search_json(const TuneSearchSummary& s) {
  json rungs = json::array();
  for (const auto& r : s.rungs)
    rungs.push_back(
        {{"steps", r.steps}, {"points", r.points}, {"seconds", json_number(r.seconds)}});
  json j = {{"method", s.method},           {"eta", s.eta},
            {"first_steps", s.first_steps}, {"rungs", rungs},
            {"trials", s.trials},           {"seconds", json_number(s.seconds)},
            {"stop_reason", s.stop_reason}, {"not_measured", s.not_measured}};
  if (!s.best.empty()) j["best"] = s.best;
  return j;
}

json contribution_json(const TuneContribution& c) {
  json j;
  j["factor"] = c.factor;
  j["stock"] = c.stock;
  j["best"] = c.best;
  j["alone_from_stock"] = json_number(c.alone_from_stock);
  if (c.alone_note) j["alone_note"] = *c.alone_note;
  j["removed_from_best"] = json_number(c.removed_from_best);
  if (c.removed_note) j["removed_note"] = *c.removed_note;
  j["reverted"] = c.reverted;
  return j;
}

json side_json(const TuneSide& s) {
  const TuneRunOptions& o = s.options;
  json j = {{"setting", s.setting},
            {"options",
             {{"threads", o.threads},
              {"dtype", o.dtype},
              {"memory_format", o.memory_format},
              {"engine", o.engine},
              {"heap", o.heap},
              {"batch", o.batch}}},
            {"command", s.command},
            {"run_ids", s.run_ids},
            {"throughput", json_number(s.throughput)}};
  if (s.interval_of_one_run) {
    const TuneInterval& i = *s.interval_of_one_run;
    json interval = {{"low", json_number(i.low)}, {"high", json_number(i.high)}};
    if (!i.note.empty()) interval["note"] = i.note;
    j["interval_of_one_run"] = std::move(interval);
  }
  return j;
}

json speedup_json(const TuneSpeedup& s) {
  return {{"ratio", json_number(s.ratio)},
          {"ci_low", json_number(s.ci_low)},
          {"ci_high", json_number(s.ci_high)},
          {"verdict", s.verdict},
          {"reason", s.reason},
          {"between_run_sd", json_number(s.between_run_sd)}};
}

json roof_json(const TuneRoof& r) {
  json j;
  j["dtype"] = r.dtype;
  j["achieved_flops"] = json_number(r.achieved_flops);
  j["roof_flops"] = json_number(r.roof_flops);
  if (r.roof_note) {
    j["roof_note"] = *r.roof_note;
  } else {
    j["roof_source"] = r.roof_source;
    j["roof_fraction"] = json_number(r.roof_fraction);
  }
  return j;
}

json headroom_json(const TuneHeadroom& h) {
  if (!h.note.empty()) return {{"note", h.note}};
  return {{"flops_per_unit", json_number(h.flops_per_unit)},
          {"probe_id", h.probe_id},
          {"stock", roof_json(h.stock)},
          {"best", roof_json(h.best)}};
}

TuneSide side_from(const json& j) {
  TuneSide s;
  s.setting = tune_value<std::string>(j, "setting", "");
  if (j.contains("options")) {
    const json& o = j.at("options");
    s.options = {tune_value(o, "threads", 0),
                 tune_value<std::string>(o, "dtype", ""),
                 tune_value<std::string>(o, "memory_format", ""),
                 tune_value<std::string>(o, "engine", ""),
                 tune_value<std::string>(o, "heap", ""),
                 tune_value<int64_t>(o, "batch", 0)};
  }
  s.command = tune_value<std::string>(j, "command", "");
  s.run_ids = tune_value(j, "run_ids", std::vector<int64_t>{});
  s.throughput = tune_number(j, "throughput");
  if (j.contains("interval_of_one_run")) {
    const json& i = j.at("interval_of_one_run");
    s.interval_of_one_run = TuneInterval{tune_number(i, "low"), tune_number(i, "high"),
                                         tune_value<std::string>(i, "note", "")};
  }
  return s;
}

TuneRoof roof_from(const json& j) {
  TuneRoof r;
  r.dtype = tune_value<std::string>(j, "dtype", "");
  r.achieved_flops = tune_number(j, "achieved_flops");
  r.roof_flops = tune_number(j, "roof_flops");
  r.roof_source = tune_value<std::string>(j, "roof_source", "");
  r.roof_fraction = tune_number(j, "roof_fraction");
  r.roof_note = tune_note(j, "roof_note");
  return r;
}

TuneFinal final_from(const json& j) {
  TuneFinal f;
  for (const auto& c : j.value("contributions", json::array()))
    f.contributions.push_back(
        {tune_value<std::string>(c, "factor", ""), tune_value<std::string>(c, "stock", ""),
         tune_value<std::string>(c, "best", ""), tune_number(c, "alone_from_stock"),
         tune_number(c, "removed_from_best"), tune_note(c, "alone_note"),
         tune_note(c, "removed_note"), tune_value(c, "reverted", false)});
  f.most = tune_value<std::string>(j, "most", "");
  f.stock = side_from(j.at("stock"));
  f.best = side_from(j.at("best"));
  const json& s = j.value("speedup", json::object());
  f.speedup = {tune_number(s, "ratio"),
               tune_number(s, "ci_low"),
               tune_number(s, "ci_high"),
               tune_value<std::string>(s, "verdict", ""),
               tune_value<std::string>(s, "reason", ""),
               tune_number(s, "between_run_sd")};
  return f;
}

void search_from(const json& j, TuneSearchSummary& s) {
  s.started = j.contains("rungs");
  s.method = tune_value<std::string>(j, "method", "");
  s.eta = tune_value<size_t>(j, "eta", 0);
  s.first_steps = tune_value<size_t>(j, "first_steps", 0);
  for (const auto& r : j.value("rungs", json::array()))
    s.rungs.push_back({tune_value<size_t>(r, "steps", 0), tune_value<size_t>(r, "points", 0),
                       tune_number(r, "seconds")});
  s.trials = tune_value<size_t>(j, "trials", 0);
  s.seconds = tune_value<double>(j, "seconds", 0);
  s.stop_reason = tune_value<std::string>(j, "stop_reason", "");
  s.not_measured = tune_value<size_t>(j, "not_measured", 0);
  s.best = tune_value<std::string>(j, "best", "");
}

}  // namespace

void to_json(json& j, const TuneResult& r) {
  j = json::object();
  j["workload"] = r.workload;
  j["mode"] = r.mode;
  j["batch"] = r.batch;
  j["threads"] = r.threads;
  j["unit"] = r.unit;
  j["budget_s"] = r.budget_s;
  j["max_error"] = r.max_error;
  j["latency_bound_s"] = r.latency_bound_s > 0 ? json(r.latency_bound_s) : json();
  j["precision_errors"] = json::array();
  for (const auto& p : r.precision_errors) j["precision_errors"].push_back(precision_error_json(p));
  if (!r.search.started) {
    // The precision check stopped the session: the search, then the space, as they were written.
    j["search"] = {{"trials", 0}, {"seconds", 0}, {"stop_reason", r.search.stop_reason}};
    j["space"] = {{"points", 0}};
  } else {
    j["space"] = space_json(r.space);
    j["search"] = search_json(r.search);
  }
  if (r.closest)
    j["closest"] = {{"setting", r.closest->setting},
                    {"step_s", json_number(r.closest->step_s)},
                    {"command", r.closest->command}};
  if (r.final_runs) {
    const TuneFinal& f = *r.final_runs;
    j["contributions"] = json::array();
    for (const auto& c : f.contributions) j["contributions"].push_back(contribution_json(c));
    j["most"] = f.most.empty() ? json() : json(f.most);
    j["stock"] = side_json(f.stock);
    j["best"] = side_json(f.best);
    j["speedup"] = speedup_json(f.speedup);
  }
  if (r.headroom) j["headroom"] = headroom_json(*r.headroom);
  j["found"] = r.found;
  if (!r.message.empty()) j["message"] = r.message;
}

void from_json(const json& j, TuneResult& r) {
  r = TuneResult{};
  r.workload = tune_value<std::string>(j, "workload", "");
  r.mode = tune_value<std::string>(j, "mode", "");
  r.batch = tune_value<int64_t>(j, "batch", 0);
  r.threads = tune_value(j, "threads", 0);
  r.unit = tune_value<std::string>(j, "unit", "");
  r.budget_s = tune_value<double>(j, "budget_s", 0);
  r.max_error = tune_value<double>(j, "max_error", 0);
  r.latency_bound_s = tune_value<double>(j, "latency_bound_s", 0);
  for (const auto& p : j.value("precision_errors", json::array()))
    r.precision_errors.push_back(
        {tune_value<std::string>(p, "dtype", ""), tune_number(p, "error"),
         tune_value<std::string>(p, "measure", ""), tune_value(p, "allowed", false),
         tune_value<std::string>(p, "note", ""), tune_number(p, "logits_relative_l2")});
  if (j.contains("space")) {
    const json& s = j.at("space");
    for (const auto& f : s.value("factors", json::array()))
      r.space.factors.push_back(
          {f.at("name").get<std::string>(), f.at("values").get<std::vector<std::string>>()});
    r.space.points = tune_value<size_t>(s, "points", 0);
    r.space.not_searched = tune_value(s, "not_searched", std::vector<std::string>{});
  }
  if (j.contains("search")) search_from(j.at("search"), r.search);
  if (j.contains("closest")) {
    const json& c = j.at("closest");
    r.closest = TuneClosest{tune_value<std::string>(c, "setting", ""), tune_number(c, "step_s"),
                            tune_value<std::string>(c, "command", "")};
  }
  if (j.contains("stock") && j.contains("best")) r.final_runs = final_from(j);
  if (j.contains("headroom")) {
    const json& h = j.at("headroom");
    TuneHeadroom headroom;
    headroom.note = tune_value<std::string>(h, "note", "");
    headroom.flops_per_unit = tune_number(h, "flops_per_unit");
    headroom.probe_id = tune_value<int64_t>(h, "probe_id", 0);
    if (h.contains("stock")) headroom.stock = roof_from(h.at("stock"));
    if (h.contains("best")) headroom.best = roof_from(h.at("best"));
    r.headroom = headroom;
  }
  r.found = tune_value(j, "found", false);
  r.message = tune_value<std::string>(j, "message", "");
}

}  // namespace plumb::store
