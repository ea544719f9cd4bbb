// The GPU part of `plumb probe`: when LibTorch sees a CUDA device, its matrix-multiply peak
// per dtype (fp32, tf32, fp16, bf16 through torch::mm, i.e. cuBLAS) and its memory bandwidth
// (device-to-device copy of a buffer far larger than the L2 cache); otherwise a clean
// "not available" with the reason. Uses only LibTorch's device-generic API, so it builds
// against the CPU-only Debian LibTorch as well as a CUDA LibTorch 2.x.
#pragma once

#include <nlohmann/json.hpp>

namespace plumb::platform {

// {"available": false, "reason": "..."} or {"available": true, "device": name,
//  "device_count": N, "peaks": {dtype: {"gemm_flops", "size"}}, "bandwidth": {"copy": B/s,
//  "bytes": N}} (bytes moved = 2 x buffer per copy: read + write).
nlohmann::ordered_json probe_gpu(bool thorough);

}  // namespace plumb::platform
