// One observed forward pass summed into MACs and FLOPs (see forward_cost.h).
#include "plumb/profile/forward_cost.h"

#include <c10/core/InferenceMode.h>

#include "plumb/profile/op_observer.h"

namespace plumb::profile {

ForwardCost forward_cost(Model& model) {
  model.module().eval();
  c10::InferenceMode no_autograd;
  const Batch batch = model.make_batch();
  OpObserver observer;
  observer.attach();
  model.infer_step(batch);
  observer.detach();
  ForwardCost cost;
  for (const auto& op : observer.aggregate(1)) {
    cost.macs += op.macs;
    cost.flops += op.flops;
  }
  return cost;
}

}  // namespace plumb::profile
