// The one place that knows which LibTorch plumb is compiled against: Debian's CPU build of
// 1.13 (the reference) or a CUDA LibTorch 2.x (a PyTorch wheel's, on GPU machines). Where
// their C++ interfaces differ, the code tests PLUMB_TORCH_2 instead of a version number of
// its own, so every difference can be found from here.
#pragma once

#include <torch/version.h>

// 2.0 split c10d's process groups into a ProcessGroup front and per-device Backends, made
// c10::Allocator::allocate non-const (and copy_data pure virtual), and moved the warning
// handler guard to c10::WarningUtils.
#define PLUMB_TORCH_2 (TORCH_VERSION_MAJOR >= 2)

namespace plumb {

// The type of the running totals an allocator reports to a profiler
// (c10::MemoryReportingInfoBase::reportMemoryUsage's third and fourth parameters): int64_t in
// 1.13, size_t in later releases. Read off the declaration so that an override compiles
// against either.
template <typename Method>
struct ReportedTotalOf;
template <typename Class, typename Ptr, typename Size, typename Total, typename Device>
struct ReportedTotalOf<void (Class::*)(Ptr, Size, Total, Total, Device)> {
  using type = Total;
};

}  // namespace plumb
