// A measured setting's identity, printed one way everywhere (benchdnn's problem printer): the
// reproducer (`plumb run W --mode infer --batch 8 ...`, the options that are not at their
// defaults) and the canonical key (every option that defines what was measured, in one fixed
// order). Every command's stored command line, serve's session key, plumb compare's match key
// and the report's de-duplication are printed from a Setting, so two settings that differ in any
// option (engine and heap included) never share a key, and a reproducer, run, lands on the key
// of the run it reproduces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

// One option of a setting.
struct SettingField {
  std::string name;   // the key's name: "threads", "engine", a config key
  std::string value;  // the key's value text: "4", "native"
  // The command line's spelling, {"--threads", "4"} or {"--set", "lr=0.1"}; empty when the
  // command implies it (serve is always inference: no --mode).
  std::vector<std::string> flag;
  // False for what shapes how a setting was measured but not what was measured (the seed, the
  // sampling and warm-up budgets, the profiled steps): reproducer only.
  bool in_key = true;
  // False when the value is the default every machine gives it: left out of the reproducer.
  bool in_reproducer = true;
};

struct Setting {
  std::string command;  // "plumb run"
  std::string workload;
  std::vector<SettingField> fields;  // in the one fixed order
};

// kReproducer: "<command> <workload>" and the flags of every field in the reproducer.
// kCanonical: "name=value" of every field in the key, space-separated, in the fixed order (the
// workload is the record's own column, not part of it).
enum class SettingPrint { kReproducer, kCanonical };
std::string print_setting(const Setting& setting, SettingPrint mode);

// A run setting's options as text, from live options (run_identity) or from a stored record.
// Options a stored record does not keep (keep_fp32, embedding_bits, seed) stay at their
// defaults there.
struct ConfigSetting {
  std::string key, value;
  bool is_default = false;  // the workload's default value
};
struct RunIdentity {
  std::string mode, device, dtype, memory_format, engine, heap;
  int64_t batch = 0;
  int threads = 0;
  std::vector<std::string> keep_fp32;
  int embedding_bits = 8;
  uint64_t seed = 0;
  std::vector<ConfigSetting> config;  // every entry but batch, in declaration order
};
RunIdentity run_identity(const Workload& workload, const RunOptions& options);

// The fields of a run setting in the fixed order: --mode, --batch and --threads (always in the
// reproducer: their defaults are the workload's and the machine's), the device, precision (with
// int8's --keep-fp32 and --embedding-bits), memory format, engine and heap where they differ from
// the defaults, --seed, then the command's own fields (`own`), then --set for every config key
// that differs from the workload's defaults.
Setting run_setting(const std::string& command, const std::string& workload,
                    const RunIdentity& identity, std::vector<SettingField> own = {});

// A field of the command's own (`own` above): in the key unless `budget`; in the reproducer
// unless `value` equals `default_value` (an empty default_value: always).
SettingField own_field(const std::string& name, const std::string& flag, const std::string& value,
                       const std::string& default_value = "", bool budget = false);

// A field of flags that shape how a setting was measured, not what (a command's budgets:
// --max-warmup-time, --steps ...): printed in the reproducer as given, never in the key.
SettingField budget_flags(std::vector<std::string> flags);

// The reproducer of run_setting(command, workload, run_identity(...)) with `budgets`
// (budget_flags) as the command's own: the stored command line of every command's records.
std::string command_line(const std::string& command, const Workload& workload,
                         const RunOptions& options, const std::vector<std::string>& budgets);
// plumb run's setting: run_setting() with the sampling budgets that shaped the measurement.
Setting run_command_setting(const Workload& workload, const RunOptions& options);
// plumb run's reproducer line (print_setting of run_command_setting).
std::string reproducer_command(const Workload& workload, const RunOptions& options);
// The canonical key of plumb run's setting (print_setting of run_command_setting).
std::string canonical_key(const Workload& workload, const RunOptions& options);

}  // namespace plumb::run
