// Precision and memory format of a run (see precision_session.h).
#include "plumb/run/precision_session.h"

#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <fmt/format.h>
#include <torch/library.h>

#include "plumb/core/generation.h"
#include "plumb/run/int8_quantizer.h"

namespace plumb::run {
namespace {

// Converts every 4-D parameter and buffer to NHWC in place (set_data keeps the optimizer's
// references valid).
void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters(true))
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  for (auto& b : module.buffers(true))
    if (b.dim() == 4) b.set_data(b.data().contiguous(at::MemoryFormat::ChannelsLast));
}

// group_norm in fp32 under bf16 autocast. LibTorch 1.13's CPU autocast leaves it out, and its
// CPU kernel refuses a bf16 input with fp32 weights ("expected scalar type BFloat16 but found
// Float"); PyTorch 2.0 puts group_norm in CPU autocast's fp32 list, which this mirrors.
torch::Tensor group_norm_in_fp32(const torch::Tensor& input, int64_t groups,
                                 const c10::optional<torch::Tensor>& weight,
                                 const c10::optional<torch::Tensor>& bias, double eps,
                                 bool cudnn_enabled) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const auto x = input.scalar_type() == at::kBFloat16 ? input.to(at::kFloat) : input;
  return at::group_norm(x, groups, weight, bias, eps, cudnn_enabled);
}

torch::Tensor to_bf16(const torch::Tensor& t) {
  return at::autocast::cached_cast(at::kBFloat16, t, c10::DeviceType::CPU);
}

// The bf16 operand autocast makes of a matrix product's second operand. The C++ frontend's
// Linear multiplies by weight.t(), a view, and LibTorch 1.13's autocast caches only the casts of
// leaves that are not views, so it cast the whole weight again at every call (each product read
// the fp32 weight and wrote a bf16 copy first). The transpose of a parameter is cast through the
// cache as the parameter itself, then transposed.
torch::Tensor bf16_second_operand(const torch::Tensor& t) {
  if (t.dim() == 2 && t.is_view() && t.scalar_type() == at::kFloat) {
    const torch::Tensor base(t._base());
    if (base.defined() && base.dim() == 2 && base.is_leaf() && base.requires_grad() &&
        t.data_ptr() == base.data_ptr() && t.sizes() == base.t().sizes() &&
        t.strides() == base.t().strides())
      return to_bf16(base).t();
  }
  return to_bf16(t);
}

// addmm and matmul as CPU autocast runs them (every floating operand in bf16), with the second
// operand cast as above.
torch::Tensor bf16_addmm(const torch::Tensor& self, const torch::Tensor& mat1,
                         const torch::Tensor& mat2, const at::Scalar& beta,
                         const at::Scalar& alpha) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return at::addmm(to_bf16(self), to_bf16(mat1), bf16_second_operand(mat2), beta, alpha);
}

torch::Tensor bf16_matmul(const torch::Tensor& self, const torch::Tensor& other) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  return at::matmul(to_bf16(self), bf16_second_operand(other));
}

}  // namespace

// Registered for the session's lifetime only: a bf16 run adds it, fp32 and int8 runs never see it.
struct Bf16AutocastAdditions {
  torch::Library library{torch::Library::IMPL, "aten", c10::DispatchKey::AutocastCPU, __FILE__,
                         __LINE__};
  Bf16AutocastAdditions() {
    library.impl("group_norm", TORCH_FN(group_norm_in_fp32));
    library.impl("addmm", TORCH_FN(bf16_addmm));
    library.impl("matmul", TORCH_FN(bf16_matmul));
  }
};

bool is_missing_kernel(const std::string& what) {
  return what.find("not implemented for 'Half'") != std::string::npos ||
         what.find("not implemented for 'BFloat16'") != std::string::npos;
}

PrecisionSession::PrecisionSession(Model& model, const RunOptions& o)
    : model_(model), mode_(o.mode), dtype_(o.dtype), format_(o.memory_format) {
  if (dtype_ == Dtype::kInt8 && mode_ == Mode::kTrain)
    throw PrecisionUnsupported{
        "int8 runs inference only: plumb quantizes trained weights after training (static "
        "post-training quantization); quantization-aware training is not built"};
  if (dtype_ == Dtype::kInt8 && o.device != "cpu")
    throw PrecisionUnsupported{"int8 uses LibTorch's CPU quantized engines; use --device cpu"};
  if (dtype_ == Dtype::kBf16 && o.device != "cpu")
    throw PrecisionUnsupported{
        "bf16 here is CPU autocast; on a GPU run fp32 (CUDA autocast is not wired up)"};
  if (format_ == MemoryFormat::kChannelsLast) to_channels_last(model_.module());
  if (dtype_ == Dtype::kFp16) {
    model_.module().to(torch::kHalf);
    notes_.push_back("fp16: weights and floating inputs converted to half");
  }
}

PrecisionSession::~PrecisionSession() {
  additions_.reset();
  kernels_.reset();
  if (autocast_on_) {
    at::autocast::set_cpu_enabled(false);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_autocast_cache_enabled(true);
    at::autocast::clear_cache();
  }
}

Batch PrecisionSession::prepare(Batch batch) const {
  for (auto& t : batch.tensors) {
    if (!t.defined() || !t.is_floating_point()) continue;
    if (dtype_ == Dtype::kFp16) t = t.to(torch::kHalf);
    if (format_ == MemoryFormat::kChannelsLast && t.dim() == 4)
      t = t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return batch;
}

bool int8_linears_per_call(Model& model) {
  return as_generative(model) != nullptr;
}

int int8_calibration_batches(Model& model) {
  return int8_linears_per_call(model) ? 1 : kCalibrationBatches;
}

void PrecisionSession::begin(const std::vector<Batch>& calibration,
                             const std::set<std::string>& keep_fp32, int embedding_bits) {
  if (dtype_ == Dtype::kBf16) {
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    // Training: no cache of weight casts. The weights change every step, and a cast cached in
    // a no-grad forward (wgan_gp's generator in the critic step, a3c's acting) would be reused
    // by a forward that needs gradients and cut the weights out of the graph: each use casts
    // anew. Inference: cached, so weights are converted once.
    at::autocast::set_autocast_cache_enabled(mode_ != Mode::kTrain);
    autocast_on_ = true;
    additions_ = std::make_unique<Bf16AutocastAdditions>();
    kernels_ = std::make_unique<Bf16KernelScope>();
    if (bf16_kernels() == Bf16Kernels::kReference)
      notes_.push_back(fmt::format(
          "bf16 on {}, not oneDNN (LibTorch gives oneDNN bf16 only on CPUs with AVX-512, "
          "with --engine onednn): {}",
          bf16_kernels_name(Bf16Kernels::kReference), bf16_reference_rounding()));
    notes_.push_back(mode_ == Mode::kTrain
                         ? "bf16: mixed precision, CPU autocast to bfloat16 over forward and loss "
                           "(weights cast at each use); fp32 master weights and optimizer"
                         : "bf16: CPU autocast to bfloat16, weights cast once and cached");
    return;
  }
  if (dtype_ != Dtype::kInt8) return;
  try {
    quantizer_ = std::make_unique<Int8Quantizer>(model_.module(), keep_fp32, embedding_bits,
                                                 int8_linears_per_call(model_)
                                                     ? LinearActivations::kPerCall
                                                     : LinearActivations::kCalibrated);
    quantizer_->calibrate([&] {
      for (const auto& batch : calibration) model_.infer_step(batch);
    });
    quantizer_->quantize();
  } catch (const Int8Unsupported& e) {
    throw PrecisionUnsupported{e.reason};
  }
  const auto lines = quantizer_->summary().lines();
  notes_.insert(notes_.end(), lines.begin(), lines.end());
}

std::vector<std::string> PrecisionSession::quantized_layers() const {
  return quantizer_ ? quantizer_->layer_paths() : std::vector<std::string>{};
}

}  // namespace plumb::run
