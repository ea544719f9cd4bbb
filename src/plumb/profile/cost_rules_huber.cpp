// Cost rules for the Huber (smooth-L1-like) loss, used by deepq's clipped-error
// Q-learning update): the Huber loss and its backward.
//
// FLOPs per element (n = input elements), following the loss conventions of cost_rules_nn.cpp:
//   huber_loss            5: d = x - t, |d|, compare with delta, then 0.5*d*d (2) or
//                         delta*(|d| - 0.5*delta) (2: the 0.5*delta is a constant); + 1 per
//                         element to reduce (sum or mean) and 1 division for mean
//   huber_loss_backward   4: d = x - t, compare, select d or delta*sign(d), * grad; + 1 for
//                         mean (the division by n)
// Bytes: every input tensor read once (the scalar upstream gradient of a reduced loss is a
// 0-dim tensor), the output written once (a scalar for a reduced forward, [n] for backward).
#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

// huber_loss(self, target, reduction, delta)
OpCost huber_loss(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(0);
  if (x == nullptr) return {};
  const LossReduction reduction = reduction_at(call, 2);
  const double n = numel(x->shape), es = element_size(x->dtype);
  double flops = 5 * n;
  if (reduction != LossReduction::kNone) flops += n + (reduction == LossReduction::kMean ? 1 : 0);
  const double computed = reduction == LossReduction::kNone ? n * es : es;
  return make_cost(flops, all_input_bytes(call, 2), written_bytes(call, computed, 4));
}

// huber_loss_backward(grad_output, self, target, reduction, delta)
OpCost huber_loss_backward(const OpCall& call) {
  const TensorMeta* x = call.input_tensor(1);
  if (x == nullptr) return {};
  const LossReduction reduction = reduction_at(call, 3);
  const double n = numel(x->shape), es = element_size(x->dtype);
  const double flops = 4 * n + (reduction == LossReduction::kMean ? n : 0);
  return make_cost(flops, all_input_bytes(call, 3), written_bytes(call, n * es, 5));
}

}  // namespace

void add_huber_rules(CostTable& table) {
  add_rule(table, {"huber_loss"}, huber_loss);
  add_rule(table, {"huber_loss_backward"}, huber_loss_backward);
}

}  // namespace plumb::profile::cost
