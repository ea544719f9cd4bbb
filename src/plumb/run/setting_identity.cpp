// The one printer of a setting's reproducer and canonical key (see setting_identity.h).
#include "plumb/run/setting_identity.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/config.h"
#include "plumb/core/execution_settings.h"
#include "plumb/core/mode.h"
#include "plumb/core/precision.h"
#include "plumb/core/text.h"

namespace plumb::run {
namespace {

// The text of RunOptions' defaults, against which a field is "at its default".
RunIdentity default_run_identity() {
  const RunOptions o;
  RunIdentity d;
  d.device = o.device;
  d.dtype = dtype_name(o.dtype);
  d.memory_format = memory_format_name(o.memory_format);
  d.engine = engine_name(o.engine);
  d.heap = heap_policy_name(o.heap);
  d.embedding_bits = o.embedding_bits;
  return d;
}

SettingField flag_field(const std::string& name, const std::string& value, bool in_reproducer) {
  return {name, value, {"--" + name, value}, true, in_reproducer};
}

// "--memory-format" for the key's "memory_format".
SettingField dashed_field(const std::string& name, const std::string& value, bool in_reproducer) {
  SettingField f = flag_field(name, value, in_reproducer);
  for (char& c : f.flag[0])
    if (c == '_') c = '-';
  return f;
}

}  // namespace

std::string print_setting(const Setting& s, SettingPrint mode) {
  std::vector<std::string> parts;
  if (mode == SettingPrint::kReproducer) parts = {s.command, s.workload};
  for (const auto& f : s.fields) {
    if (mode == SettingPrint::kCanonical && f.in_key) parts.push_back(f.name + "=" + f.value);
    if (mode == SettingPrint::kReproducer && f.in_reproducer)
      parts.insert(parts.end(), f.flag.begin(), f.flag.end());
  }
  return join(parts, " ");
}

RunIdentity run_identity(const Workload& w, const RunOptions& o) {
  RunIdentity id;
  id.mode = mode_name(o.mode);
  id.batch = o.config.get_int("batch");
  id.threads = o.threads;
  id.device = o.device;
  id.dtype = dtype_name(o.dtype);
  id.keep_fp32 = o.keep_fp32;
  id.embedding_bits = o.embedding_bits;
  id.memory_format = memory_format_name(o.memory_format);
  id.engine = engine_name(o.engine);
  id.heap = heap_policy_name(o.heap);
  id.seed = o.seed;
  const Config defaults = w.default_config();
  for (const auto& e : o.config.entries()) {
    if (e.key == "batch") continue;  // --batch says it
    const auto same = std::find_if(defaults.entries().begin(), defaults.entries().end(),
                                   [&](const ConfigEntry& d) { return d.key == e.key; });
    const bool is_default = same != defaults.entries().end() && same->value == e.value;
    id.config.push_back({e.key, Config::value_text(e.value), is_default});
  }
  return id;
}

Setting run_setting(const std::string& command, const std::string& workload, const RunIdentity& id,
                    std::vector<SettingField> own) {
  const RunIdentity d = default_run_identity();
  Setting s{command, workload, {}};
  auto& f = s.fields;
  f.push_back(flag_field("mode", id.mode, true));
  f.push_back(flag_field("batch", std::to_string(id.batch), true));
  f.push_back(flag_field("threads", std::to_string(id.threads), true));
  f.push_back(flag_field("device", id.device, id.device != d.device));
  f.push_back(flag_field("dtype", id.dtype, id.dtype != d.dtype));
  // int8's own options are fields only where they differ from the defaults, so an int8 key at
  // the defaults lines up with the keys of other precisions (compare --ignore dtype).
  if (!id.keep_fp32.empty()) f.push_back(dashed_field("keep_fp32", join(id.keep_fp32, ","), true));
  if (id.dtype == dtype_name(Dtype::kInt8) && id.embedding_bits != d.embedding_bits)
    f.push_back(dashed_field("embedding_bits", std::to_string(id.embedding_bits), true));
  f.push_back(dashed_field("memory_format", id.memory_format, id.memory_format != d.memory_format));
  f.push_back(flag_field("engine", id.engine, id.engine != d.engine));
  f.push_back(flag_field("heap", id.heap, id.heap != d.heap));
  SettingField seed = flag_field("seed", std::to_string(id.seed), true);
  seed.in_key = false;  // another draw of the same setting
  f.push_back(seed);
  for (auto& field : own) f.push_back(std::move(field));
  for (const auto& c : id.config)
    f.push_back({c.key, c.value, {"--set", c.key + "=" + c.value}, true, !c.is_default});
  return s;
}

SettingField own_field(const std::string& name, const std::string& flag, const std::string& value,
                       const std::string& default_value, bool budget) {
  return {name, value, {flag, value}, !budget, default_value.empty() || value != default_value};
}

SettingField budget_flags(std::vector<std::string> flags) {
  return {"", "", std::move(flags), false, true};
}

std::string command_line(const std::string& command, const Workload& w, const RunOptions& o,
                         const std::vector<std::string>& budgets) {
  return print_setting(
      run_setting(command, w.info.name, run_identity(w, o), {budget_flags(budgets)}),
      SettingPrint::kReproducer);
}

Setting run_command_setting(const Workload& w, const RunOptions& o) {
  std::vector<std::string> sampling = {"--target-ci", fmt::format("{}", o.target_ci), "--max-time",
                                       fmt::format("{}", o.max_time_s)};
  // Measurement flags that differ from the defaults change the result; keep them.
  const RunOptions defaults;
  if (o.min_samples != defaults.min_samples)
    sampling.insert(sampling.end(), {"--min-samples", std::to_string(o.min_samples)});
  if (o.max_iterations != defaults.max_iterations)
    sampling.insert(sampling.end(), {"--max-iters", std::to_string(o.max_iterations)});
  sampling.insert(sampling.end(), {"--max-warmup-time", fmt::format("{}", o.max_warmup_s)});
  if (o.steady.window != defaults.steady.window)
    sampling.insert(sampling.end(), {"--warmup-window", std::to_string(o.steady.window)});
  return run_setting("plumb run", w.info.name, run_identity(w, o),
                     {budget_flags(std::move(sampling))});
}

std::string reproducer_command(const Workload& w, const RunOptions& o) {
  return print_setting(run_command_setting(w, o), SettingPrint::kReproducer);
}

std::string canonical_key(const Workload& w, const RunOptions& o) {
  return print_setting(run_command_setting(w, o), SettingPrint::kCanonical);
}

}  // namespace plumb::run
