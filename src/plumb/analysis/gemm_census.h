// The GEMM shapes a set of profiled steps really runs (Facebook inference paper, Fig. 5): every
// matrix product and convolution-as-GEMM of the stored operator profiles, read back from the
// operators' signatures by the cost model, merged by shape across workloads and ranked by the
// share of operator time they take.
#pragma once

#include <string>
#include <vector>

#include "plumb/core/gemm_shape.h"
#include "plumb/profile/op_profile.h"

namespace plumb::analysis {

struct GemmSource {
  std::string workload;
  std::string mode;
  const profile::StepProfile* profile = nullptr;
};

struct GemmCensusRow {
  GemmShape shape;
  double calls = 0;   // per step, summed over the sources
  double time_s = 0;  // per step, summed: each operator's self time split over its GEMMs by MACs
  // Mean over the sources of this shape's share of each source's operator time, so a workload
  // with a long step does not outweigh the others.
  double share = 0;
  std::vector<std::string> workloads;  // "resnet50 infer", in first-seen order
  std::vector<std::string> ops;        // "aten::mkldnn_convolution forward", in first-seen order
};

struct GemmCensus {
  std::vector<GemmCensusRow> rows;  // largest share first
  double gemm_share = 0;            // mean over sources of the GEMM share of operator time
  size_t sources = 0;
  // Operators with GEMM work (MACs) whose shape could not be read from the signature; their
  // time is in no row.
  std::vector<std::string> unread;
};

GemmCensus gemm_census(const std::vector<GemmSource>& sources);

}  // namespace plumb::analysis
