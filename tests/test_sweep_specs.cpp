// The sweep specs shipped in specs/: each parses, names only keys its workload has, and
// expands to the number of points its comment promises (ParaDnn Table 2 and the CPU versions).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "plumb/core/errors.h"
#include "plumb/run/sweep_spec.h"
#include "plumb/workloads/all_workloads.h"

namespace plumb {
namespace {

TEST(ShippedSweepSpecs, ParseValidateAndExpandToTheirDocumentedSizes) {
  const std::filesystem::path specs =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "specs";
  const std::map<std::string, size_t> expected = {
      {"paradnn-fc.yaml", 9720},    {"paradnn-fc-cpu.yaml", 108}, {"paradnn-cnn.yaml", 2160},
      {"paradnn-cnn-cpu.yaml", 64}, {"paradnn-rnn.yaml", 2160},   {"paradnn-rnn-cpu.yaml", 48}};
  size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(specs)) {
    const std::string file = entry.path().filename().string();
    SCOPED_TRACE(file);
    const auto spec = run::load_sweep_spec(entry.path().string());
    EXPECT_NO_THROW(
        run::validate_sweep_spec(spec, workloads::default_registry().get(spec.workload)));
    ASSERT_TRUE(expected.count(file)) << "a new spec: add its size here";
    EXPECT_EQ(run::expand(spec).size(), expected.at(file));
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

// Precision as an axis: expanded inside each mode, named in the point keys, and absent from the
// canonical key when only fp32 is listed, so sweeps stored before it keep their identity.
TEST(SweepSpecs, DtypesAreAnAxisThatLeavesFp32SweepsUnchanged) {
  const auto fp32 = run::parse_sweep_spec(
      "workload: paradnn_fc\nmodes: [train, infer]\ngrid: {batch: [8, 16]}\n", "s");
  EXPECT_FALSE(run::sweeps_precision(fp32));
  EXPECT_EQ(run::sweep_key(fp32).find("dtypes"), std::string::npos);
  EXPECT_EQ(run::expand(fp32).front().key, "mode=train batch=8");
  const auto both = run::parse_sweep_spec(
      "workload: paradnn_fc\nmodes: [train, infer]\ndtypes: [fp32, bf16]\n"
      "grid: {batch: [8, 16]}\n",
      "s");
  EXPECT_TRUE(run::sweeps_precision(both));
  EXPECT_NE(run::sweep_key(both), run::sweep_key(fp32));
  const auto points = run::expand(both);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[0].key, "mode=train dtype=fp32 batch=8");
  EXPECT_EQ(points[2].key, "mode=train dtype=bf16 batch=8");
  EXPECT_EQ(points[2].dtype, Dtype::kBf16);
  EXPECT_EQ(points[7].key, "mode=infer dtype=bf16 batch=16");
  EXPECT_THROW(
      run::parse_sweep_spec("workload: paradnn_fc\ndtypes: [int4]\ngrid: {batch: [8]}\n", "s"),
      UsageError);
}

// What fuzzing the spec parser found (tests/fuzz/corpus/sweep_spec/regression-*): numbers too
// large for the integer they configure, ranges that never end, and grids too big to expand
// are refused with the reason, never cast, truncated or expanded.
TEST(SweepSpecs, OutOfRangeNumbersAndHugeGridsAreRefusedWithTheReason) {
  const auto refusal = [](const std::string& text) {
    try {
      const auto spec = run::parse_sweep_spec(text, "s");
      run::validate_sweep_spec(spec, workloads::default_registry().get(spec.workload));
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string grid = "\ngrid: {batch: [8]}\n";
  EXPECT_NE(refusal("workload: paradnn_fc\nseed: 4e122" + grid).find("seed must be a whole number"),
            std::string::npos);
  EXPECT_NE(refusal("workload: paradnn_fc\nseed: 18446744073709551616" + grid).find("seed"),
            std::string::npos);
  EXPECT_NE(refusal("workload: paradnn_fc\nthreads: 1e10" + grid).find("threads must be"),
            std::string::npos);
  EXPECT_NE(refusal("workload: paradnn_fc\nthreads: 2.5" + grid).find("threads must be"),
            std::string::npos);
  EXPECT_NE(refusal("workload: paradnn_fc\nbudget: {min_samples: -3}" + grid).find("min_samples"),
            std::string::npos);
  EXPECT_EQ(refusal("workload: paradnn_fc\nseed: 18446744073709551615" + grid), "accepted");
  // A step that cannot advance past the values' precision, and a range longer than the cap.
  EXPECT_NE(refusal("workload: paradnn_fc\ngrid: {batch: {from: 1e15, to: 2e15, step: 1e-3}}\n")
                .find("too small to tell"),
            std::string::npos);
  EXPECT_NE(refusal("workload: paradnn_fc\ngrid: {batch: {from: 1, to: 1e9, step: 1}}\n")
                .find("more than 100000 values"),
            std::string::npos);
  // Lists whose product is beyond the cap (here 1000^3 points) are refused before expanding.
  std::string big = "[";
  for (int i = 1; i <= 1000; ++i) big += (i > 1 ? "," : "") + std::to_string(i);
  big += "]";
  EXPECT_NE(refusal("workload: paradnn_fc\ngrid: {batch: " + big + ", nodes: " + big +
                    ", layers: " + big + "}\n")
                .find("more than 100000 points"),
            std::string::npos);
}

}  // namespace
}  // namespace plumb
