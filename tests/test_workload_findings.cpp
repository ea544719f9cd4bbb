// What bounds a workload, in words (analysis/workload_findings.h): shares of a step whose
// operators overlapped on several threads (a3c's Hogwild actors) stay shares.
#include <gtest/gtest.h>

#include <numeric>

#include "plumb/analysis/workload_findings.h"
#include "report_fixture.h"

namespace plumb {
namespace {

// Three actor threads, each 9 ms of optimizer update and 1 ms of matrix products, in a step of
// 10 ms wall time: 30 ms of operator time.
TEST(WorkloadFindings, OverlappingThreadsGiveSharesOfOperatorTime) {
  profile::StepProfile p;
  for (int actor = 0; actor < 3; ++actor) {
    p.ops.push_back(
        testing::report_op("aten::add_", "Optimizer update", "", "forward", 0.009, 1e6, 8e6));
    p.ops.push_back(testing::report_op("aten::addmm", "MatMul", "fc", "forward", 0.001, 2e7, 1e6));
  }
  p.steps = 1;
  p.op_self_s = 0.030;
  p.overhead_s = 0;
  p.step_s = 0.010;
  const auto f = analysis::bound_finding(p, nullptr);
  EXPECT_NEAR(f.concurrency, 3.0, 1e-9);
  EXPECT_EQ(f.category, "Optimizer update");
  EXPECT_NEAR(f.category_share, 0.9, 1e-9);  // 27 of 30 ms of operator time, not 270%
  EXPECT_NE(f.sentence.find("operators ran on several threads at once (3.0x the step's wall "
                            "time)"),
            std::string::npos)
      << f.sentence;
  EXPECT_NE(f.sentence.find("Optimizer update takes 90% of the operator time"), std::string::npos)
      << f.sentence;
  const auto shares = analysis::category_time_shares(p);
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0,
                                       [](double s, const auto& part) { return s + part.second; });
  EXPECT_NEAR(total, 1.0, 1e-9);
}

}  // namespace
}  // namespace plumb
