// Fuzz target: a sweep spec's text (YAML or JSON) through everything `plumb sweep SPEC` does
// before it runs a point: parse, validate against a workload, canonical form and key, expand.
// Anything but a UsageError (plumb's one-line refusal) escaping is a finding: a crash, a raw
// library message or an unbounded expansion.
#include <cstdint>
#include <string>

#include "fuzz_workload.h"
#include "plumb/core/errors.h"
#include "plumb/run/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const plumb::Workload workload = plumb::fuzz::fuzz_workload();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const plumb::run::SweepSpec spec = plumb::run::parse_sweep_spec(text, "fuzz");
    if (spec.workload != "fuzz") return 0;
    plumb::run::validate_sweep_spec(spec, workload);
    (void)plumb::run::sweep_key(spec);
    for (const auto& point : plumb::run::expand(spec))
      (void)plumb::run::point_config(workload, spec, point);
  } catch (const plumb::UsageError&) {
  }
  return 0;
}
