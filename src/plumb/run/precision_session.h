// Applies a run's precision and memory format (RunOptions::dtype, memory_format) to a built
// model and its batches, for the whole measurement, whatever the workload:
//   bf16  CPU autocast to bfloat16 (LibTorch 1.13's C++ autocast supports bf16 only): in
//         inference the casts of the weights are cached, so weights are bf16 once and
//         activations bf16 in the autocast operators (convolutions, GEMMs); in training the
//         same autocast over forward and loss with fp32 master weights and an fp32 optimizer:
//         mixed precision (bf16 needs no loss scaling).
//   fp16  weights and floating inputs converted to half. LibTorch has no CPU kernels for most
//         fp16 operators; the first one missing makes the run "unsupported" with its name.
//   int8  inference only: static post-training quantization of convolutions and linear layers
//         (int8_quantizer.h), calibrated on the workload's own synthetic batches.
//   channels_last  4-D weights and inputs in NHWC order (oneDNN's preferred layout).
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "plumb/core/workload.h"
#include "plumb/run/engine_paths.h"
#include "plumb/run/run_result.h"

namespace plumb::run {

class Int8Quantizer;
struct Bf16AutocastAdditions;  // operators LibTorch 1.13's CPU autocast leaves out

// A precision this LibTorch, this CPU or this mode cannot run: the run's status becomes
// "unsupported" with this reason, and a list of runs goes on.
struct PrecisionUnsupported {
  std::string reason;
};

// Batches the quantizer calibrates on (made by the workload's own generator, apart from the
// timed batches).
inline constexpr int kCalibrationBatches = 4;

// int8 takes a linear layer's input range at each call (dynamic) in a generative model: its
// prefill and decode tokens differ in range. Elsewhere the range is calibrated once.
bool int8_linears_per_call(Model& model);

// Batches traced before int8 packs `model`: kCalibrationBatches to take the activation ranges;
// one where the linear layers take theirs per call, since the trace then only learns the layers
// and the order they run in (one generation makes every kind of call: prefill and decode).
int int8_calibration_batches(Model& model);

class PrecisionSession {
 public:
  // Converts the model's parameters as the precision and format need. Throws
  // PrecisionUnsupported for a combination that cannot run (int8 training, int8 on a GPU).
  PrecisionSession(Model& model, const RunOptions& options);
  ~PrecisionSession();
  PrecisionSession(const PrecisionSession&) = delete;
  PrecisionSession& operator=(const PrecisionSession&) = delete;

  // The batch as the model must see it in this precision and format.
  Batch prepare(Batch batch) const;

  // Called once before the first step: enables autocast (bf16) or calibrates and quantizes
  // (int8, on `calibration` batches). From here until destruction the model runs in the
  // precision. `keep_fp32`: module paths int8 leaves in fp32 (selective quantization);
  // `embedding_bits`: int8's row-wise embedding-bag codes (8 or 4).
  void begin(const std::vector<Batch>& calibration, const std::set<std::string>& keep_fp32 = {},
             int embedding_bits = 8);

  // What the run executed in this precision (quantized layers, layers left in fp32), stored
  // with the record.
  const std::vector<std::string>& notes() const { return notes_; }
  // Module paths the int8 quantizer saw in calibration (empty for other precisions).
  std::vector<std::string> quantized_layers() const;

 private:
  Model& model_;
  Mode mode_;
  Dtype dtype_;
  MemoryFormat format_;
  std::vector<std::string> notes_;
  std::unique_ptr<Int8Quantizer> quantizer_;
  std::unique_ptr<Bf16AutocastAdditions> additions_;
  std::unique_ptr<Bf16KernelScope> kernels_;  // bf16 runs: the kernels bf16_kernels() names
  bool autocast_on_ = false;
};

// Text of a LibTorch error that means "this dtype has no kernel for this operator" (e.g.
// "\"addmm_impl_cpu_\" not implemented for 'Half'"): the run is unsupported, not broken.
bool is_missing_kernel(const std::string& what);

}  // namespace plumb::run
