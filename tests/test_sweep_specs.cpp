// The sweep specs shipped in specs/: each parses, names only keys its workload has, and
// expands to the number of points its comment promises (ParaDnn Table 2 and the CPU versions).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

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

}  // namespace
}  // namespace plumb
