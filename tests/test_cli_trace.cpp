// plumb profile --trace: the Chrome trace-event file of a profiled step has the fields the
// format requires (so Perfetto and chrome://tracing open it), its operator events cover the
// step, carry layer, shapes and costs, and a path that cannot be written is refused up front.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace plumb::testing {
namespace {

TEST_F(Cli, ProfileTraceIsAValidChromeTraceOfTheStep) {
  const std::string trace = (dir_ / "t.json").string();
  // 128-pixel images: operators long enough that the observer's own work between them, which
  // no operator event covers, stays a small share of the step on a slow shared machine.
  const auto r = plumb(
      "profile resnet50 --mode infer --batch 1 --set image_size=128 --steps 2 "
      "--max-warmup-time 2 --trace " +
      trace + " --db " + db());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(trace));
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  double step_us = 0;
  std::map<int, std::vector<std::pair<double, double>>> ops;  // tid -> (ts, dur)
  bool costed_conv = false;
  for (const auto& e : doc.at("traceEvents")) {
    ASSERT_TRUE(e.at("name").is_string()) << e;
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.at("pid").is_number_integer()) << e;
    if (ph == "M") {  // metadata: process and thread names
      EXPECT_TRUE(e.at("args").at("name").is_string()) << e;
      continue;
    }
    ASSERT_EQ(ph, "X") << e;  // complete events: start and duration, in microseconds
    ASSERT_TRUE(e.at("ts").is_number()) << e;
    ASSERT_TRUE(e.at("dur").is_number()) << e;
    ASSERT_TRUE(e.at("tid").is_number_integer()) << e;
    EXPECT_GE(e.at("dur").get<double>(), 0) << e;
    const std::string cat = e.at("cat");
    if (cat == "step") step_us = e.at("dur");
    if (cat == "operator" || cat == "autograd")
      ops[e.at("tid").get<int>()].emplace_back(e.at("ts"), e.at("dur"));
    // The convolution kernel LibTorch picks (oneDNN's, or its own slow path) carries the cost.
    const std::string name = e.at("name");
    if (cat == "operator" && name.find("conv") != std::string::npos &&
        e.at("args").at("flops").get<double>() > 0) {
      costed_conv = true;
      EXPECT_FALSE(e.at("args").at("layer").get<std::string>().empty()) << e;
      EXPECT_NE(e.at("args").at("inputs").get<std::string>().find("Float[1,"), std::string::npos)
          << e;
    }
  }
  EXPECT_TRUE(costed_conv);
  ASSERT_GT(step_us, 0);
  // The outermost operator calls add up to the step: what is left is time between operators.
  double covered = 0;
  for (auto& [tid, spans] : ops) {
    std::sort(spans.begin(), spans.end());
    double end = -1;
    for (const auto& [ts, dur] : spans) {
      if (ts < end) continue;  // nested inside the previous outermost call
      covered += dur;
      end = ts + dur;
    }
  }
  EXPECT_NEAR(covered / step_us, 1.0, 0.05);

  // A trace path that cannot be written: refused before anything runs.
  expect_usage_error("profile autoenc --mode infer --trace /nonexistent-dir/t.json --db " + db(),
                     "--trace: cannot write into '/nonexistent-dir'");
}

}  // namespace
}  // namespace plumb::testing
