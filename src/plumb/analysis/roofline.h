// Roofline placement (ParaDnn, Facebook DL inference; TBD eq. 2 for utilisation): puts an
// operator, a layer or a whole model step on the machine's measured ceilings and says what
// bounds it — compute, one memory level, or neither (overhead). Pure functions, no LibTorch;
// the profiler supplies the work items and platform/ the ceilings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace plumb::analysis {

struct MemoryRoof {
  std::string level;           // "l1", "l2", "l3", "dram"
  double bytes_per_s = 0;      // measured bandwidth of this level
  int64_t capacity_bytes = 0;  // 0 = unlimited (dram)
};

struct ComputeRoof {
  double flops = 0;    // FLOP/s (int8: integer ops/s)
  std::string source;  // "bf16 instruction peak (amx tdpbf16ps, 2 threads)"
};

struct Ceilings {
  double peak_flops = 0;    // FLOP/s of the run's own dtype
  std::string peak_source;  // where the peak came from: "fp32 gemm", "fp32 instruction"
  // The compute roof of every dtype the machine has one for (its fastest engine: vector units
  // or a matrix engine), so that an operator is placed on the roof of the dtype it computes
  // in: an int8 convolution on the int8 roof inside an fp32 step. May be empty.
  std::map<std::string, ComputeRoof> by_dtype;
  std::vector<MemoryRoof> memory;  // fastest first
};

struct WorkItem {
  std::string name;
  double flops = 0;            // per step (a MAC is 2 FLOPs)
  double bytes = 0;            // read + written per step
  double footprint_bytes = 0;  // distinct bytes touched; predicts the level when unmeasured
  double seconds = 0;          // per step
  // The dtype its compute runs in ("fp32", "bf16", "int8", ...); "" or one without a roof in
  // Ceilings::by_dtype: the ceilings' own peak_flops.
  std::string dtype;
};

struct RoofAt {
  std::string level;
  double attainable_flops = 0;  // min(peak, intensity * bandwidth of `level`)
};

struct Placement {
  std::string name;
  double flops = 0, bytes = 0, seconds = 0;
  double intensity = 0;             // flops / byte; see the rules below for bytes == 0
  double achieved_flops = 0;        // flops / seconds
  double achieved_bytes_per_s = 0;  // bytes / seconds
  std::string level;                // memory level the data came from (rules below)
  // Memory level the footprint would fit in: shown for reference, not used for the bound of a
  // measured item.
  std::string footprint_level;
  std::string dtype;          // the item's dtype
  double peak_flops = 0;      // the compute roof it was placed under (see WorkItem::dtype)
  std::vector<RoofAt> roofs;  // one per memory level, in Ceilings order
  double roof = 0;            // attainable FLOP/s at `level`
  std::string bound;          // "compute", "memory:<level>" or "overhead"
  // The bound the intensity predicts at `level` ("compute" or "memory:<level>"): the roof
  // roof_fraction is of. Equals `bound` unless "overhead" replaced it.
  std::string predicted_bound;
  double roof_fraction = 0;  // achieved / roof at `level`
  double utilisation = 0;    // achieved_flops / peak (TBD eq. 2)
  // achieved_bytes_per_s / the DRAM roof (the unlimited level, level_for_footprint's choice
  // for any size): how near a memory-bound item (a decode's GEMV) runs to main memory's
  // bandwidth, whatever level its rate places it at. 0 without work, NaN unmeasured.
  double dram_fraction = 0;
};

// Rules of `place` (peak = the compute roof of the item's dtype, see WorkItem::dtype):
// - Level of a measured item (seconds > 0 with work): the slowest memory level (lowest
//   bytes_per_s) whose bandwidth is at least the achieved bytes/s, i.e. the slowest level fast
//   enough to explain the measured rate. A footprint that fits a cache does not say the data is
//   there: in a steady-state inference step ResNet-50's 8 MB FC weights fit a 32 MB L3, but
//   ~100 MB of other weights evicted them since they were last touched, so they come from DRAM;
//   placed by footprint, that layer was compute-bound at L3 while it reached 9% of peak. When
//   even the fastest level is slower than the achieved rate, the fastest level (roof_fraction
//   may then exceed 1). bytes == 0 < flops (0 bytes/s) lands on the slowest level. Levels are
//   compared by bandwidth, not list position; equal bandwidths keep Ceilings order.
// - Level of an unmeasured item (seconds == 0 with work) and of the no-work item: no rate says
//   where the data came from, so the footprint level predicts it.
// - Footprint level: the memory level with the smallest capacity that holds footprint_bytes;
//   when none does, the unlimited level (capacity 0, DRAM), or the largest level if none is
//   unlimited. Always reported as footprint_level.
// - Intensity = flops / bytes; +inf when bytes == 0 < flops (nothing to move: compute can be
//   the only limit); 0 when flops == 0, including the no-work item (flops == bytes == 0), so
//   the value is never NaN.
// - Predicted bound at the level: "compute" when intensity >= its ridge (peak / bandwidth), else
//   "memory:<level>".
// - roof_fraction: compute-bound, achieved_flops / peak; memory-bound, achieved_bytes_per_s /
//   bandwidth of the level. Both equal achieved_flops / roof when flops > 0, and the bandwidth
//   form stays meaningful for pure data movement (flops == 0, roof 0 FLOP/s). Not clamped: above
//   1 means a ceiling is too low (e.g. a GEMM peak beaten, or bytes moved faster than the
//   fastest level's measured bandwidth).
// - "overhead" replaces the predicted bound when roof_fraction < overhead_fraction: the item
//   reached so little of its roof that neither compute nor memory explains its time (latency,
//   dispatch, too little work). A no-work item is always "overhead" (achieved and fractions 0).
// - seconds == 0 with work: nothing was measured, so achieved rates, roof_fraction and
//   utilisation are NaN (JSON null via json_number), and the bound is the one predicted at the
//   footprint level —
//   calling it "overhead" would claim it ran slowly, which no measurement says.
// Throws UsageError for invalid ceilings (no memory roofs, non-positive peak or bandwidth,
// negative capacity, duplicate or empty level names), a negative or non-finite work item
// value, or overhead_fraction outside [0, 1].
Placement place(const WorkItem& item, const Ceilings& ceilings, double overhead_fraction = 0.1);
std::vector<Placement> place_all(const std::vector<WorkItem>& items, const Ceilings& ceilings,
                                 double overhead_fraction = 0.1);

// The memory level a footprint fits in: the smallest capacity that holds it; otherwise the
// unlimited level (first one if several), otherwise the largest level. Ties in capacity keep
// Ceilings order (fastest first). `ceilings.memory` must not be empty.
const MemoryRoof& level_for_footprint(double footprint_bytes, const Ceilings& ceilings);

// Intensity (FLOP/byte) where `level`'s bandwidth roof meets the compute roof: peak / bandwidth.
// Throws UsageError for an unknown level (naming the known ones) or invalid ceilings.
double ridge_intensity(const Ceilings& ceilings, const std::string& level);

// The roof a placement's roof_fraction is of, in words: "DRAM bandwidth", "L2 bandwidth" for
// a memory roof; "fp32 roof" for a compute roof (the item's dtype when the ceilings have a roof
// for it, else the ceilings' own, the first word of peak_source).
std::string roof_words(const Placement& p, const Ceilings& ceilings);

// A placement in one cell: "memory:dram 46% of DRAM bandwidth", "compute 31% of fp32 roof",
// "overhead 3% of L2 bandwidth"; "overhead (no costed work)" without work, and
// "memory:dram (not timed)" for an unmeasured item.
std::string bound_text(const Placement& p, const Ceilings& ceilings);

// One item for a whole model step (or any group): flops, bytes and seconds summed; footprint =
// the largest item footprint, because items run one after another and reuse the same memory,
// so the group's working set at any moment is one item's, not their sum.
WorkItem sum_items(const std::vector<WorkItem>& items, std::string name);

}  // namespace plumb::analysis
