// Which kernels LibTorch's engines run the reduced precisions on, on this CPU, as LibTorch and
// oneDNN themselves decide it at run time. The same model runs on different instructions on
// different x86 CPUs, and the instructions change the numerics, not only the speed:
// - int8: oneDNN multiplies u8 activations by s8 weights. With VNNI (vpdpbusd) or AMX (tdpbusd)
//   each product is summed straight into 32 bits. Without them (AVX2, AVX-512 before Cascade
//   Lake) its kernels use vpmaddubsw, which adds each pair of neighbouring products into a
//   saturating 16-bit lane: 2 x 255 x 127 = 64,770 does not fit in 32,767, so full-range 8-bit
//   weights clip sums silently. 7-bit weights (|code| <= 63) keep every pair within range.
// - bf16: LibTorch sends bf16 convolutions and matrix products to oneDNN only on CPUs with
//   AVX-512 BW/VL/DQ (its mkldnn_bf16_device_check); oneDNN accumulates in fp32 there, with bf16
//   units or without. Elsewhere they run on LibTorch's own reference kernels, which are 10-50x
//   slower than fp32 and round differently: see bf16_reference_rounding().
// ONEDNN_MAX_CPU_ISA (oneDNN's own variable) caps oneDNN's ISA, so a test can take the path of
// a CPU without VNNI on one that has it.
#pragma once

#include <memory>
#include <string>

namespace plumb::run {

class EngineChoice;  // step_loop.h

// The ISA oneDNN's kernels dispatch on in this process ("avx2", "avx512_core_vnni", ...), or ""
// where plumb cannot ask the oneDNN that LibTorch uses.
std::string onednn_isa();

// True when oneDNN's int8 kernels here sum u8 x s8 products in pairs into 16-bit lanes that
// saturate (no VNNI or AMX on this CPU, or oneDNN capped below them).
bool int8_pairs_saturate();

// The largest |code| of a symmetric int8 weight that oneDNN's kernels here compute exactly:
// 127, or 63 where pairs saturate.
int int8_weight_code_limit();

// How LibTorch runs bf16 convolutions and matrix products in this process.
enum class Bf16Kernels {
  kOneDnn,     // oneDNN, fp32 accumulation (bf16 units where the CPU has them, else emulated)
  kReference,  // LibTorch's reference kernels (no AVX-512, or oneDNN disabled)
};
Bf16Kernels bf16_kernels();
const char* bf16_kernels_name(Bf16Kernels kernels);

// While it lives, bf16 takes the path bf16_kernels() names. LibTorch asks the CPU, not oneDNN,
// whether oneDNN can run bf16: with oneDNN capped below AVX-512 on an AVX-512 CPU its bf16
// calls fail ("could not create a primitive"), so this turns LibTorch's oneDNN switch off for
// the scope, and bf16 runs on the reference kernels, as on a CPU without AVX-512.
class Bf16KernelScope {
 public:
  Bf16KernelScope();
  ~Bf16KernelScope();

 private:
  std::unique_ptr<EngineChoice> native_;  // set only where the reference kernels must be chosen
};

// What LibTorch 1.13's reference kernels round differently from a bf16 unit, for notes and docs.
const char* bf16_reference_rounding();

// LibTorch's bf16 speed as a multiple of fp32 on a ResNet-style 3x3 convolution (64 -> 64
// channels, 56x56, batch 1) on the kernels a bf16 run takes here, measured now at the current
// thread count: a second or so on LibTorch's reference kernels, far less elsewhere. What a
// command says before it spends minutes on an emulated bf16.
double measure_bf16_conv_speed_vs_fp32();

}  // namespace plumb::run
