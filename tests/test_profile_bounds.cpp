// plumb profile's bound column: each row of a stored profile placed on the stored probe's roofs as
// plumb roofline places it. A synthetic generation (generation_fixture.h) whose rows sit at known
// places: a row left of its dtype's ridge is memory-bound at achieved bytes/s over the roof's
// bandwidth, one right of it compute-bound at achieved FLOP/s over the dtype's peak; the JSON
// carries bound, roof and roof_fraction per row; without a probe the note comes once, naming
// plumb probe --quick.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "generation_fixture.h"
#include "plumb/jobs/profile_job.h"
#include "plumb/jobs/profile_report.h"
#include "scratch_dir.h"

namespace plumb {
namespace {

class ProfileBounds : public testing::ScratchDirTest {
 protected:
  // The stored fixture read back as plumb profile's job reads its passes, then placed.
  jobs::ProfileJobResult stored_job(bool with_probe) {
    const std::string db = (dir_ / "plumb.db").string();
    testing::write_generation_fixture(db, with_probe);
    auto store = store::ResultsStore::open(db);
    jobs::ProfileJobResult job;
    job.workload = "synth_lm";
    job.db_path = db;
    job.passes = store->load_profiles("generation");
    jobs::place_on_stored_roofs(*store, job);
    return job;
  }
};

const nlohmann::ordered_json& row_named(const nlohmann::ordered_json& rows,
                                        const std::string& name) {
  for (const auto& r : rows)
    if (r["name"] == name) return r;
  throw std::runtime_error("no row " + name);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(ProfileBounds, RowsLeftOfTheirRidgeAreMemoryBoundAndRightOfItComputeBound) {
  const auto job = stored_job(true);
  ASSERT_EQ(job.passes.size(), 1u);
  ASSERT_EQ(job.roofs.size(), 1u);
  ASSERT_TRUE(job.roofs[0].has_value()) << job.roofs_note;
  EXPECT_GT(job.probe_id, 0);
  EXPECT_EQ(job.roofs_note, "");
  const jobs::ProfileView by_op{analysis::GroupBy::kOp, "op", 0, std::nullopt};
  const auto doc = jobs::profile_json(job, by_op);
  EXPECT_EQ(doc["probe_id"], job.probe_id);
  const auto& phases = doc["passes"][0]["phases"];
  ASSERT_EQ(phases.size(), 2u);

  // Decode's mm: 0.5 FLOP/byte, left of fp32's DRAM ridge (100 / 30 = 3.3): memory-bound, at its
  // achieved GB/s over the DRAM triad.
  const auto& mm = row_named(phases[1]["rows"], "aten::mm");
  ASSERT_LT(mm["intensity"].get<double>(), testing::kGenFp32Peak / testing::kGenDramTriad);
  EXPECT_EQ(mm["bound"], "memory:dram");
  EXPECT_EQ(mm["roof"], "DRAM bandwidth");
  EXPECT_NEAR(mm["roof_fraction"].get<double>(),
              mm["gbytes_per_s"].get<double>() * 1e9 / testing::kGenDramTriad, 1e-12);
  EXPECT_NEAR(mm["roof_fraction"].get<double>(), 0.5, 1e-9);
  // A row without costed work is on no roof.
  const auto& view = row_named(phases[1]["rows"], "aten::view");
  EXPECT_EQ(view["bound"], "overhead");
  EXPECT_TRUE(view["roof"].is_null());
  EXPECT_TRUE(view["roof_fraction"].is_null());

  // Prefill's addmm: 100 FLOP/byte, right of the ridge: compute-bound at FLOP/s over the peak.
  const auto& addmm = row_named(phases[0]["rows"], "aten::addmm");
  ASSERT_GT(addmm["intensity"].get<double>(), testing::kGenFp32Peak / testing::kGenDramTriad);
  EXPECT_EQ(addmm["bound"], "compute");
  EXPECT_EQ(addmm["roof"], "fp32 roof");
  EXPECT_NEAR(addmm["roof_fraction"].get<double>(),
              addmm["gflops_per_s"].get<double>() * 1e9 / testing::kGenFp32Peak, 1e-12);
  // The int8 linear: 5 FLOP/byte is right of fp32's ridge but left of int8's (400 / 30 = 13.3),
  // and a row is placed by its own dtype's roof.
  const auto& q = row_named(phases[0]["rows"], "quantized::linear");
  ASSERT_GT(q["intensity"].get<double>(), testing::kGenFp32Peak / testing::kGenDramTriad);
  ASSERT_LT(q["intensity"].get<double>(), testing::kGenInt8Peak / testing::kGenDramTriad);
  EXPECT_EQ(q["bound"], "memory:dram");
  EXPECT_NEAR(q["roof_fraction"].get<double>(),
              q["gbytes_per_s"].get<double>() * 1e9 / testing::kGenDramTriad, 1e-12);

  // The text: a bound column, the legend once.
  std::ostringstream text;
  jobs::print_profile(text, job, by_op);
  EXPECT_NE(text.str().find("memory:dram 50% of DRAM bandwidth"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("compute 50% of fp32 roof"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("memory:dram 33% of DRAM bandwidth"), std::string::npos) << text.str();
  EXPECT_EQ(occurrences(text.str(), "bound: each row on the roofs of probe #"), 1u);
}

TEST_F(ProfileBounds, CategoryRowsArePlacedToo) {
  const auto job = stored_job(true);
  auto asked = jobs::ProfileView{};  // by category
  asked.phase = Phase::kDecode;
  auto decode_only = job;
  decode_only.phase = Phase::kDecode;
  const auto doc = jobs::profile_json(decode_only, asked);
  const auto& matmul = row_named(doc["passes"][0]["rows"], "MatMul");
  EXPECT_EQ(matmul["bound"], "memory:dram");
  EXPECT_NEAR(matmul["roof_fraction"].get<double>(),
              matmul["gbytes_per_s"].get<double>() * 1e9 / testing::kGenDramTriad, 1e-12);
}

TEST_F(ProfileBounds, WithoutAStoredProbeTheNoteComesOnceWithTheRemedy) {
  const auto job = stored_job(false);
  ASSERT_EQ(job.roofs.size(), 1u);
  EXPECT_FALSE(job.roofs[0].has_value());
  EXPECT_EQ(job.probe_id, 0);
  EXPECT_NE(job.roofs_note.find("plumb probe --quick"), std::string::npos) << job.roofs_note;
  const jobs::ProfileView by_op{analysis::GroupBy::kOp, "op", 0, std::nullopt};
  const auto doc = jobs::profile_json(job, by_op);
  EXPECT_TRUE(doc["probe_id"].is_null());
  EXPECT_EQ(doc["roofs_note"], job.roofs_note);
  const auto& mm = row_named(doc["passes"][0]["phases"][1]["rows"], "aten::mm");
  EXPECT_TRUE(mm["bound"].is_null());
  EXPECT_TRUE(mm["roof_fraction"].is_null());
  std::ostringstream text;
  jobs::print_profile(text, job, by_op);
  EXPECT_EQ(occurrences(text.str(), "plumb probe --quick"), 1u) << text.str();
  EXPECT_EQ(text.str().find("memory:dram"), std::string::npos) << text.str();
}

TEST_F(ProfileBounds, AProbeOfAnotherMachineGivesNoRoofs) {
  const std::string db = (dir_ / "other.db").string();
  testing::write_generation_fixture(db, false);
  auto store = store::ResultsStore::open(db);
  auto probe = testing::generation_probe();
  probe.machine = "another host | another CPU | 2 logical cores | cpu";
  store->save_probe(probe);
  jobs::ProfileJobResult job;
  job.db_path = db;
  job.passes = store->load_profiles("generation");
  jobs::place_on_stored_roofs(*store, job);
  ASSERT_EQ(job.roofs.size(), 1u);
  EXPECT_FALSE(job.roofs[0].has_value());
  EXPECT_NE(job.roofs_note.find("no probe of this machine"), std::string::npos);
}

}  // namespace
}  // namespace plumb
