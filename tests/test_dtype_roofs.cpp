// Each operator on the roof of the engine its dtype runs on: the dtype read from an operator's
// signature, work items carrying it, placement under that dtype's roof (an int8 layer on the
// int8 matrix-engine roof inside an fp32 step), and ceilings built from a probe document with
// engines and a merged memory level.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plumb/analysis/profile_roofline.h"
#include "plumb/analysis/roofline.h"

namespace plumb::analysis {
namespace {

TEST(DtypeRoofs, OperatorDtypeComesFromItsFirstTensor) {
  EXPECT_EQ(op_compute_dtype("aten::addmm|Float[10]|Float[8,16]|Float[16,10]|i1|i1"), "fp32");
  EXPECT_EQ(op_compute_dtype("aten::mm|BFloat16[8,16]|BFloat16[16,10]"), "bf16");
  EXPECT_EQ(op_compute_dtype("aten::mm|Half[8,16]|Half[16,10]"), "fp16");
  EXPECT_EQ(op_compute_dtype("aten::mm|Double[8,16]|Double[16,10]"), "fp64");
  EXPECT_EQ(op_compute_dtype("quantized::conv2d|QUInt8[1,3,8,8]|?|d0.1|i0"), "int8");
  EXPECT_EQ(op_compute_dtype("quantized::linear|QInt8[4,8]|?"), "int8");
  // The first tensor decides, even after non-tensor arguments.
  EXPECT_EQ(op_compute_dtype("aten::embedding_backward|Float[4,8]|Long[4]|i10"), "fp32");
  EXPECT_EQ(op_compute_dtype("aten::index|Long[4]|Float[4]"), "");
  EXPECT_EQ(op_compute_dtype("aten::zeros|i4,8"), "");
  EXPECT_EQ(op_compute_dtype(""), "");
  EXPECT_EQ(op_compute_dtype("aten::sum|Floatsparse(nnz=3)[4,8]"), "fp32");
}

TEST(DtypeRoofs, WorkItemsTakeTheDtypeOfTheirHeaviestOperator) {
  profile::StepProfile prof;
  auto op = [](const char* layer, const char* signature, double flops) {
    profile::OpStat s;
    s.name = std::string(signature).substr(0, std::string(signature).find('|'));
    s.layer = layer;
    s.category = "GEMM";
    s.kind = profile::kCosted;
    s.signature = signature;
    s.calls = 1;
    s.self_s = 1e-3;
    s.flops = flops;
    s.bytes_read = 1e6;
    return s;
  };
  prof.ops = {op("fc", "aten::quantize_per_tensor|Float[8,16]|d0.1|i0", 128),
              op("fc", "quantized::linear|QUInt8[8,16]|?", 4096),
              op("head", "aten::addmm|Float[10]|Float[8,16]|Float[16,10]", 2560)};
  prof.step_s = 3e-3;
  const auto items = work_items(prof, GroupBy::kLayer);
  ASSERT_EQ(items.size(), 2u);
  for (const WorkItem& w : items) EXPECT_EQ(w.dtype, w.name == "fc" ? "int8" : "fp32") << w.name;
}

TEST(DtypeRoofs, EachItemIsPlacedUnderItsDtypesRoof) {
  Ceilings c;
  c.peak_flops = 200e9;  // the run's dtype: fp32
  c.peak_source = "fp32 instruction peak";
  c.by_dtype = {{"fp32", {200e9, "fp32"}}, {"int8", {4000e9, "int8 matrix engine"}}};
  c.memory = {{"dram", 20e9, 0}};
  // 1 TFLOP in 1 s from 1 GB (1000 FLOP/B): compute-bound under either roof.
  WorkItem w{"layer", 1e12, 1e9, 1e6, 1.0, "int8"};
  Placement p = place(w, c);
  EXPECT_EQ(p.dtype, "int8");
  EXPECT_DOUBLE_EQ(p.peak_flops, 4000e9);
  EXPECT_DOUBLE_EQ(p.utilisation, 0.25);
  EXPECT_EQ(p.bound, "compute");  // ridge 200 FLOP/B at 4 TOP/s; intensity 1000
  // The same work in fp32 (or with no dtype, or one without a roof) sits on the fp32 roof.
  for (const char* dtype : {"fp32", "", "fp16"}) {
    w.dtype = dtype;
    p = place(w, c);
    EXPECT_DOUBLE_EQ(p.peak_flops, 200e9) << dtype;
    EXPECT_DOUBLE_EQ(p.utilisation, 1e12 / 200e9) << dtype;
  }
  // The bound moves with the roof: 100 FLOP/B is below the int8 ridge at DRAM (200), above
  // fp32's (10).
  WorkItem mid{"mid", 100e9, 1e9, 1e6, 0.1, "int8"};
  EXPECT_EQ(place(mid, c).bound, "memory:dram");
  mid.dtype = "fp32";
  EXPECT_EQ(place(mid, c).bound, "compute");
}

// A probe document of version 2 in miniature: fp32 on the vector engine, int8 on a matrix
// engine, l3 merged into dram.
nlohmann::json probe_document() {
  auto rows = [](double one, double two) {
    return nlohmann::json::array(
        {{{"threads", 1}, {"flops", one}}, {{"threads", 2}, {"flops", two}}});
  };
  auto peak = [](bool supported, const char* engine, const char* isa, const char* reason,
                 nlohmann::json by_threads) {
    return nlohmann::json{
        {"supported", supported}, {"engine", engine},         {"isa", isa},
        {"reason", reason},       {"by_threads", by_threads}, {"gemm", nlohmann::json::array()}};
  };
  nlohmann::json peaks;
  peaks["fp32"] = peak(true, "vector", "avx512 vfmadd231ps", "", rows(100e9, 200e9));
  peaks["int8"] = peak(true, "matrix", "amx tdpbusd", "", rows(4e12, 8e12));
  peaks["fp16"] = peak(false, "vector", "", "no avx512_fp16 on this CPU", nlohmann::json::array());
  auto level = [](const char* name, int threads, double triad, int64_t cap, const char* merged) {
    return nlohmann::json{{"level", name},
                          {"threads", threads},
                          {"triad", triad},
                          {"capacity_bytes", cap},
                          {"merged_into", merged}};
  };
  nlohmann::json levels = nlohmann::json::array(
      {level("l1", 1, 280e9, 48 << 10, ""), level("l1", 2, 560e9, 96 << 10, ""),
       level("l3", 1, 20.5e9, 1 << 29, "dram"), level("l3", 2, 35e9, 1 << 29, "dram"),
       level("dram", 1, 20e9, 0, ""), level("dram", 2, 34e9, 0, "")});
  return {{"peaks", peaks}, {"bandwidth", {{"levels", levels}}}};
}

TEST(DtypeRoofs, CeilingsCarryEveryDtypesFastestEngineAndSkipMergedLevels) {
  const Ceilings c = ceilings_from_probe(probe_document(), "fp32", 2, PeakKind::kInstruction);
  EXPECT_DOUBLE_EQ(c.peak_flops, 200e9);
  ASSERT_EQ(c.by_dtype.size(), 2u);  // fp16 is unsupported: no roof
  EXPECT_DOUBLE_EQ(c.by_dtype.at("int8").flops, 8e12);
  EXPECT_NE(c.by_dtype.at("int8").source.find("matrix engine"), std::string::npos)
      << c.by_dtype.at("int8").source;
  ASSERT_EQ(c.memory.size(), 2u);  // l3 measured as DRAM: one roof, not two
  EXPECT_EQ(c.memory[0].level, "l1");
  EXPECT_EQ(c.memory[1].level, "dram");
  EXPECT_DOUBLE_EQ(c.memory[1].bytes_per_s, 34e9);

  const Ceilings one = ceilings_from_probe(probe_document(), "int8", 1, PeakKind::kInstruction);
  EXPECT_DOUBLE_EQ(one.peak_flops, 4e12);
  EXPECT_THROW(ceilings_from_probe(probe_document(), "fp16", 1, PeakKind::kInstruction),
               std::exception);
}

}  // namespace
}  // namespace plumb::analysis
