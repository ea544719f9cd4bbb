// The intra-op thread count held for a scope (see thread_count.h).
#include "plumb/run/thread_count.h"

#include <ATen/Parallel.h>

#include "plumb/run/runner.h"

namespace plumb::run {

ScopedThreadCount::ScopedThreadCount(int threads) : saved_(at::get_num_threads()) {
  apply_threads(threads);
}

ScopedThreadCount::~ScopedThreadCount() {
  apply_threads(saved_);
}

}  // namespace plumb::run
