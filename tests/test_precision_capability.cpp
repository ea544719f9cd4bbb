// Precision capability read from the probe: a dtype the probe found no engine for has no units
// here (with the probe's reason), one it timed has them; the sentence a command prints says
// what the probe found and what LibTorch's emulation costs.
#include <gtest/gtest.h>

#include "plumb/analysis/precision_capability.h"
#include "plumb/core/errors.h"
#include "plumb/platform/cpu_features.h"
#include "plumb/platform/peak_kernels.h"
#include "scoped_env.h"

namespace plumb::analysis {
namespace {

using json = nlohmann::ordered_json;

json probe_with_bf16(bool supported, const std::string& reason) {
  return {{"peaks",
           {{"fp32", {{"supported", true}, {"reason", ""}}},
            {"bf16", {{"supported", supported}, {"reason", reason}}},
            {"int8", {{"supported", true}, {"reason", ""}}}}}};
}

TEST(PrecisionCapability, UnitsAreWhatTheProbeFound) {
  const auto without = precision_units(
      probe_with_bf16(false, "no avx512_bf16 on this CPU; no AMX bf16 on this CPU"), Dtype::kBf16);
  ASSERT_TRUE(without.has_value());
  EXPECT_FALSE(without->ok());
  EXPECT_EQ(without->reason, "no avx512_bf16 on this CPU; no AMX bf16 on this CPU");
  const auto with = precision_units(probe_with_bf16(true, ""), Dtype::kBf16);
  ASSERT_TRUE(with.has_value());
  EXPECT_TRUE(with->ok());
  EXPECT_TRUE(precision_units(probe_with_bf16(false, "x"), Dtype::kInt8)->ok());
  // fp32 is the reference: it always runs on its own units.
  EXPECT_TRUE(precision_units(json::object(), Dtype::kFp32)->ok());
  // A document without the dtype, or no probe document at all, decides nothing.
  EXPECT_FALSE(precision_units(json::object(), Dtype::kBf16).has_value());
  EXPECT_FALSE(precision_units(json{{"peaks", {{"fp32", {{"supported", true}}}}}}, Dtype::kBf16)
                   .has_value());
}

TEST(PrecisionCapability, TheSentenceSaysWhatWasFoundAndWhatTheEmulationCosts) {
  const PrecisionUnits units{OutcomeState::kUnsupported, "no avx512_bf16 on this CPU"};
  const auto text =
      no_units_sentence(Dtype::kBf16, units, {"its reference kernels", 0.081, "a 3x3 convolution"});
  EXPECT_EQ(text,
            "bf16: no bf16 units on this CPU (the probe: no avx512_bf16 on this CPU); LibTorch "
            "emulates it on its reference kernels, 0.081x fp32 measured on a 3x3 convolution");
  // Nothing measured: no figure is made up.
  EXPECT_EQ(no_units_sentence(Dtype::kBf16, PrecisionUnits{OutcomeState::kUnsupported, ""}, {}),
            "bf16: no bf16 units on this CPU; LibTorch emulates it");
}

// PLUMB_CPU_FEATURES_OFF makes the probe take the path of a CPU without the named features on any
// CPU: its bf16 engines then refuse with the probe's reasons, and the verdict above follows.
TEST(PrecisionCapability, HiddenFeaturesSendTheProbeDownTheNoUnitsPath) {
  testing::ScopedEnv env;
  env.set("PLUMB_CPU_FEATURES_OFF", "avx512_bf16, amx_bf16,amx_tile");
  EXPECT_EQ(platform::hidden_cpu_features(),
            (std::vector<std::string>{"avx512_bf16", "amx_bf16", "amx_tile"}));
  const auto cpu = platform::detect_cpu_features();
  EXPECT_FALSE(cpu.avx512_bf16);
  EXPECT_FALSE(cpu.amx_bf16);
  const auto engines = platform::measure_engine_peaks({Dtype::kBf16}, 1, 0.002);
  ASSERT_FALSE(engines.empty());
  for (const auto& engine : engines) {
    EXPECT_FALSE(engine.outcome.ok());
    EXPECT_FALSE(engine.outcome.reason.empty());
  }
  env.set("PLUMB_CPU_FEATURES_OFF", "avx512_bf17");
  EXPECT_THROW(platform::detect_cpu_features(), UsageError);
}

}  // namespace
}  // namespace plumb::analysis
