// Cost rules for masked copies, which sequence models reach through masked reductions (the
// backward of masked_select, e.g. in cross-entropy with label smoothing and ignore_index).
//
//   masked_scatter(self, mask, source)   0 FLOPs: copies source elements, in order, into the
//       positions where mask is true. Reads the mask (broadcast to self) and at most
//       min(numel(self), numel(source)) source elements (upper bound: every position
//       selected); the in-place form writes only the selected positions (upper bound: all of
//       self), the functional form also reads self and writes the whole output.
#include <algorithm>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

OpCost masked_scatter(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* mask = call.input_tensor(1);
  const TensorMeta* source = call.input_tensor(2);
  if (self == nullptr || mask == nullptr || source == nullptr) return {};
  const double elements = numel(broadcast({self, mask}));
  const double copied = std::min(elements, numel(source->shape));
  const double size = element_size(self->dtype);
  double read = numel(mask->shape) * element_size(mask->dtype) + copied * size;
  if (!is_in_place(call)) read += bytes_of(self);
  return make_cost(0, read, written_bytes(call, elements * size));
}

}  // namespace

void add_masked_rules(CostTable& t) {
  add_rule(t, {"masked_scatter", "masked_scatter_"}, masked_scatter);
}

}  // namespace plumb::profile::cost
