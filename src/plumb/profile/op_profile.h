// An operator profile of a workload step: per (operator, scope, layer, input signature) the
// calls, self and inclusive time, and the cost model's FLOPs and bytes, averaged per step.
// This is what the store keeps and what every breakdown analysis reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plumb::profile {

// Whether a row's FLOPs/bytes are its own.
//   "costed":    a leaf operator (no operator below it) with a cost function;
//   "uncosted":  a leaf operator without one: time counted, work unknown, always listed;
//   "composite": an operator that calls operators doing its work (counted in those), or an
//                autograd node (always: its work, if any, is in the operators it calls);
//                only its own (self) time is its own.
inline constexpr const char* kCosted = "costed";
inline constexpr const char* kUncosted = "uncosted";
inline constexpr const char* kComposite = "composite";
// Not an operator: a generation phase's own row (StepProfile::phases).
inline constexpr const char* kPhaseRow = "phase";

struct OpStat {
  std::string name;  // "aten::mkldnn_convolution", "ConvolutionBackward0"
  // "forward" or "backward"; in a generative model's inference step, the phase whose user
  // scope (core/generation.h) encloses the operator: "prefill" or "decode". The phase rides in
  // this field rather than one of its own so that stored profiles keep their schema.
  std::string scope;
  std::string layer;       // module path of the innermost named layer ("" when none)
  std::string category;    // category_name(...)
  std::string kind;        // kCosted, kUncosted or kComposite
  std::string signature;   // input shapes/dtypes/arguments (see op_call.h)
  double calls = 0;        // per step
  double self_s = 0;       // per step: inclusive minus time in child operators
  double inclusive_s = 0;  // per step
  double flops = 0;        // per step (0 unless costed)
  double macs = 0;         // per step, GEMM-like operators only
  double bytes_read = 0;   // per step
  double bytes_written = 0;
};

// One operator call or layer scope of a traced step (plumb profile --trace): what the
// Chrome trace-event file shows.
struct TraceEvent {
  std::string name;       // "aten::mkldnn_convolution", or the layer of a layer scope
  std::string kind;       // "operator", "autograd" (a backward node) or "layer"
  std::string layer;      // module path in effect ("" when none)
  std::string signature;  // operators: input shapes/dtypes/arguments (op_call.h)
  double start_s = 0;     // from the start of the step
  double duration_s = 0;
  int thread = 0;    // 0 = the thread that ran the step; others in order of appearance
  double flops = 0;  // the call's own work (0 for composite and uncosted calls)
  double bytes = 0;
};

struct StepProfile {
  std::vector<OpStat> ops;
  int steps = 0;          // profiled steps the figures are averaged over
  double step_s = 0;      // mean wall time of a profiled step (observer attached)
  double op_self_s = 0;   // sum of self time of all operators, per step
  double overhead_s = 0;  // step_s - op_self_s: time outside any operator (framework)
  double cpu_utilization = 0;
  // A generative model's inference step: one row per phase that ran (kind kPhaseRow, name its
  // user scope, scope its phase name): calls = calls of the phase per step (1 prefill, gen - 1
  // decodes), inclusive_s = the phase's wall time per step, self_s = the part of it outside
  // any operator. Kept apart from `ops` so that no operator breakdown counts them; the store
  // keeps them among the operator rows (told apart by kind). Empty for any other step.
  std::vector<OpStat> phases;
};

}  // namespace plumb::profile
