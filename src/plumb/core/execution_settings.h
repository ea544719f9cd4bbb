// Run settings besides precision that change how fast a workload runs without changing what it
// computes: which kernels LibTorch calls for convolutions and matrix products, and what glibc's
// malloc does with freed memory. Set in the run descriptor (RunOptions) like the precision, so
// `plumb run` reproduces whatever `plumb tune` found.
#pragma once

#include <string>

namespace plumb {

// kOnednn: LibTorch's default CPU path (oneDNN convolutions; oneDNN matmul for bf16).
// kNative: at::globalContext().setUserEnabledMkldnn(false): LibTorch's own convolution
// kernels (im2col + BLAS) and OpenBLAS for every product.
enum class Engine { kOnednn, kNative };

// kKeep: freed memory stays in the process (timing's default, run/heap_policy.h).
// kReturn: glibc's initial fixed thresholds: large blocks are mapped per allocation and the
// heap's free top goes back to the kernel, as a program that never tuned malloc behaves once
// its thresholds are fixed.
enum class HeapPolicy { kKeep, kReturn };

const char* engine_name(Engine engine);         // "onednn", "native"
const char* heap_policy_name(HeapPolicy heap);  // "keep", "return"
// Parse user text; throw UsageError naming the valid values.
Engine parse_engine(const std::string& text);
HeapPolicy parse_heap_policy(const std::string& text);

}  // namespace plumb
