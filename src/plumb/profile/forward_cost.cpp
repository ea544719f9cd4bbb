// One observed forward pass summed into MACs and FLOPs (see forward_cost.h).
#include "plumb/profile/forward_cost.h"

#include <optional>

#include <c10/core/InferenceMode.h>

#include "plumb/profile/op_observer.h"

namespace plumb::profile {

ForwardCost forward_cost(Model& model, std::vector<LayerRecord>* layers) {
  model.module().eval();
  c10::InferenceMode no_autograd;
  const Batch batch = model.make_batch();
  OpObserver observer;
  {
    std::optional<LayerRecorder> recorder;
    if (layers != nullptr) recorder.emplace();
    observer.attach();
    model.infer_step(batch);
    observer.detach();
    if (recorder) *layers = recorder->records();
  }
  ForwardCost cost;
  for (const auto& op : observer.aggregate(1)) {
    cost.macs += op.macs;
    cost.flops += op.flops;
  }
  return cost;
}

}  // namespace plumb::profile
