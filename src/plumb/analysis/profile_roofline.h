// Bridges a stored operator profile and a stored probe to the roofline, intensity and
// projection analyses: work items per operator / layer / whole step, the ceilings a probe
// measured for one dtype and thread count, and Table-1 layer traffic (weights from the
// model's parameters, activations from the layer's operator bytes). Pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plumb/analysis/breakdown.h"
#include "plumb/analysis/intensity.h"
#include "plumb/analysis/roofline.h"
#include "plumb/profile/op_profile.h"

namespace plumb::analysis {

// The dtype an operator computes in, from its signature (profile/op_call.h): the first input
// tensor's type, as plumb's peaks name them ("fp32", "fp64", "bf16", "fp16", "int8" for
// quantized and 8-bit integer tensors); "" when its first tensor is another type (indices,
// masks) or it has none.
std::string op_compute_dtype(const std::string& signature);

// One item per breakdown group (op, category or layer: the breakdown's rows). Its dtype is that
// of its costed operator with the most FLOPs. Time = self time of every operator in the group
// (as the breakdown counts it); FLOPs and bytes = its costed operators'; footprint = the largest
// bytes one costed call touches (bytes per call); reported as footprint_level, while a measured
// item's level comes from its achieved data rate (see roofline.h). plumb roofline itself places
// ops or layers only: a category mixes unrelated operators, so its one footprint level would say
// little, but its measured rate still places it.
std::vector<WorkItem> work_items(const profile::StepProfile& profile, GroupBy by);

// Every breakdown row of `profile` grouped `by`, placed on `ceilings` as plumb roofline places
// it (work_items, then place), by row name: the bound column of plumb profile.
std::map<std::string, Placement> place_rows(const profile::StepProfile& profile, GroupBy by,
                                            const Ceilings& ceilings);
// The whole step: every operator's work, the step's wall time (framework overhead included,
// so utilisation is the honest TBD eq. 2 figure).
WorkItem step_item(const profile::StepProfile& profile, const std::string& name);

enum class PeakKind { kInstruction, kGemm };
PeakKind parse_peak_kind(const std::string& text);  // "instruction" | "gemm"

// The roofs a probe document (platform/probe.h) measured for `dtype` at `threads`: the
// instruction peak (of the dtype's fastest engine) or GEMM peak, the same for every other
// supported dtype (Ceilings::by_dtype), and the triad bandwidth of each memory level, at the
// largest measured thread count not above `threads` (the probe measures 1..N). Levels the
// probe merged into a slower one (indistinct on this machine) are left out. Throws UsageError when
// the dtype is unsupported on the machine (with the probe's reason) or the probe has no
// bandwidth levels.
Ceilings ceilings_from_probe(const nlohmann::json& probe, const std::string& dtype, int threads,
                             PeakKind kind);

// The roofs of the GPU the probe measured (its "gpu" part, platform/gpu_probe.h): the cuBLAS
// GEMM peak of `dtype` (and of every other dtype the GPU ran, Ceilings::by_dtype; "tf32" is
// fp32 on tensor cores, a roof of its own because LibTorch uses it only when allowed) and one
// memory roof, "device memory", at the bandwidth of a device-to-device copy far larger than
// the L2 cache (read + written bytes, as the roofline counts them). A GPU has no probed cache
// levels. Throws UsageError when the probe saw no GPU (with its reason) or the GPU did not run
// `dtype`.
Ceilings gpu_ceilings_from_probe(const nlohmann::json& probe, const std::string& dtype);

// The roofs of the device a run used: gpu_ceilings_from_probe for "cuda[:N]", else
// ceilings_from_probe.
Ceilings device_ceilings_from_probe(const nlohmann::json& probe, const std::string& device,
                                    const std::string& dtype, int threads, PeakKind kind);

// One memory level's bandwidths (bytes/s) as the probe measured them at the largest thread
// count not above `threads` (as ceilings_from_probe chooses): its read-only kernel and its
// triad (the roof ceilings_from_probe uses).
struct LevelBandwidths {
  double read = 0;
  double triad = 0;
  int threads = 0;
};
// Throws UsageError when the probe measured no such level.
LevelBandwidths level_bandwidths(const nlohmann::json& probe, const std::string& level,
                                 int threads);

// A model parameter: its full name ("layer1.0.conv1.weight") and element count.
struct ParameterSize {
  std::string name;
  double elements = 0;
};

// Facebook Table 1 traffic per compute layer: the layers of `profile` that do GEMM-like work
// (MACs: convolution, linear, recurrent cells) or embedding lookups. Batch norm, activations
// and pooling are left out as separate layers: inference engines fuse them into the
// convolution before them, and the paper's minima (e.g. 25 ops per element for ResNet-50)
// are those of the fused layers. Per layer:
//   ops         = its costed FLOPs per step;
//   parameters  = the parameters whose name extends the layer's module path (each parameter
//                 goes to the longest matching layer);
//   weight traffic = parameters x evaluations (`layer_calls`: a recurrent layer runs once per
//                 time step and reads its weights each time; 1 when not given); for an
//                 embedding layer, at most the bytes its lookups read / element_bytes (the rows
//                 it gathers, their indices included: a lookup does not read the whole table);
//   activations = the layer's operator bytes / element_bytes minus the weight traffic.
// Layers with compute but no matching parameter are returned in `unmatched`.
struct LayerTrafficResult {
  std::vector<LayerTraffic> layers;        // in parameter registration (= execution) order
  std::vector<double> parameter_elements;  // per layer, distinct weights (capacity, not traffic)
  std::vector<std::string> unmatched;
};
LayerTrafficResult layer_traffic(const profile::StepProfile& profile,
                                 const std::vector<ParameterSize>& parameters,
                                 const std::map<std::string, double>& layer_calls,
                                 double element_bytes);

}  // namespace plumb::analysis
