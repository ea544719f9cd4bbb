// Layer naming and output-shape recording (see layer_scope.h).
#include "plumb/core/layer_scope.h"

#include "plumb/core/errors.h"

namespace plumb {
namespace {
thread_local LayerRecorder* active_recorder = nullptr;
}  // namespace

LayerScope::LayerScope(const std::string& name)
    : name_(name), record_(at::RecordScope::USER_SCOPE) {
  if (record_.isActive()) record_.before(name_);
}

const torch::Tensor& LayerScope::output(const torch::Tensor& tensor) {
  if (active_recorder != nullptr) active_recorder->note(name_, tensor);
  return tensor;
}

LayerRecorder::LayerRecorder() {
  PLUMB_ASSERT(active_recorder == nullptr, "nested LayerRecorder");
  active_recorder = this;
}

LayerRecorder::~LayerRecorder() {
  active_recorder = nullptr;
}

void LayerRecorder::note(const std::string& name, const torch::Tensor& output) {
  for (auto& r : records_) {
    if (r.name == name) {
      ++r.calls;
      return;
    }
  }
  records_.push_back({name, output.sizes().vec(), 1});
}

}  // namespace plumb
