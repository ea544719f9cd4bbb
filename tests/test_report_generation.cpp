// The report's front page for a generative workload (generation_fixture.h): its card states each
// phase's bound in one sentence whose numbers are the stored phase profile's, worked here from
// the fixture's rows, and its generation's TTFT and TPOT from the stored run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "generation_fixture.h"
#include "plumb/report/page.h"
#include "plumb/report/report.h"
#include "plumb/report/text_table.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

class ReportGeneration : public testing::ScratchDirTest {
 protected:
  report::Card card(bool with_probe) {
    const std::string db = (dir_ / "gen.db").string();
    testing::write_generation_fixture(db, with_probe);
    report::ReportRequest request;
    request.db = db;
    request.generated_at = "2026-01-01 00:00 UTC";
    const auto page = report::build_report(request);
    const auto* grid = std::get_if<report::CardGrid>(&page.sections.front().blocks.front());
    if (grid == nullptr || grid->cards.size() != 1) throw std::runtime_error("no card");
    return grid->cards.front();
  }
};

// The fixture's decode per step: one mm of 2 MFLOP and 4 MB in 4e6 / 15e9 s, a view, and 10 us
// outside operators; 3 calls of batch 2 make 6 tokens. Placed as a whole (its wall time): 4 MB
// over the phase's time is below the DRAM triad (30 GB/s) at 0.5 FLOP/byte, left of the ridge.
TEST_F(ReportGeneration, TheCardStatesEachPhasesBoundFromTheStoredProfile) {
  const auto c = card(true);
  ASSERT_EQ(c.findings.size(), 3u);  // inference, then prefill and decode
  const double decode_s = 4e6 / 15e9 + 1e-6 + 1e-5;
  const double decode_tokens = testing::kGenBatch * (testing::kGenGen - 1);
  const double dram = std::round(100 * 4e6 / decode_s / testing::kGenDramTriad);
  EXPECT_EQ(
      c.findings[2],
      fmt::format("Decode: reads {} and computes 333 kFLOP per token, memory-bound at {:.0f}% "
                  "of the DRAM bandwidth.",
                  report::format_bytes(4e6 / decode_tokens), dram));
  // Prefill: addmm (400 MFLOP, 4 MB) and the int8 linear (5 MFLOP, 1 MB) in 8.2 ms for 16 prompt
  // tokens; 81 FLOP/byte is right of the ridge: compute-bound at FLOP/s over the fp32 peak.
  const double prefill_s = 8e-3 + 1e-4 + 1e-4;
  const double prompt_tokens = testing::kGenBatch * testing::kGenPrompt;
  const double fp32 = std::round(100 * 4.05e8 / prefill_s / testing::kGenFp32Peak);
  EXPECT_EQ(c.findings[1],
            fmt::format("Prefill: reads {} and computes 25.3 MFLOP per prompt token, compute-bound "
                        "at {:.0f}% of the fp32 roof.",
                        report::format_bytes(5e6 / prompt_tokens), fp32));
  EXPECT_EQ(dram, 48);  // the worked figures, as a reader checks them
  EXPECT_EQ(fp32, 49);
}

TEST_F(ReportGeneration, TheCardGivesTheGenerationsTtftAndTpot) {
  const auto c = card(true);
  const report::CardField* field = nullptr;
  for (const auto& f : c.fields)
    if (f.label == "Generation (batch 2, prompt 8, gen 4)") field = &f;
  ASSERT_NE(field, nullptr);
  // TTFT 11 ms mean: 2 x 8 / 0.011 prefill tokens/s; TPOT 3 ms: 2 / 0.003 decode tokens/s.
  EXPECT_EQ(field->text,
            "time to first token 11.00 ms (1455 prefill tokens/s), per output token 3.00 ms "
            "(667 decode tokens/s)");
  EXPECT_FALSE(field->missing);
}

TEST_F(ReportGeneration, WithoutAProbeEachPhaseSaysWhatToRun) {
  const auto c = card(false);
  ASSERT_EQ(c.findings.size(), 3u);
  for (size_t i = 1; i < 3; ++i)
    EXPECT_NE(c.findings[i].find("not placed: no ceilings of this machine stored (plumb probe "
                                 "--quick)"),
              std::string::npos)
        << c.findings[i];
}

}  // namespace
}  // namespace plumb
