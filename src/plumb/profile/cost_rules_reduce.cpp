// Cost rules for reductions, scans, sorting and softmax.
//
// FLOPs (n = input elements; a sparse input counts its stored values; o = output elements):
//   sum nansum prod max min amax amin argmax argmin any all    n (one accumulate or
//                                                              compare per input element)
//   mean                                                       n + o (the division)
//   norm / linalg_vector_norm  p in {0,1,2,inf}: 2n (abs or square, accumulate), other p: 3n
//                              (abs, pow, accumulate); + o roots for p not in {0, 1, inf}
//   var / std (var_mean, std_mean)   4n (mean pass 1; (x-m)^2 accumulate 3) + 2o divisions
//                                    (+ o square roots for std)
//   logsumexp      4n (max, sub, exp, add) + 2o (log, add back the max)
//   cumsum cumprod n
//   topk           n (one comparison pass; the heap/sort of k survivors is ignored)
//   sort           n * ceil(log2(length of the sorted dim)) comparisons
//   softmax / log_softmax           5 per element (max, sub, exp, sum, div or sub); the
//                                   per-row log of log_softmax is ignored
//   _softmax_backward_data          4 per element (g*y, sum, sub, mul)
//   _log_softmax_backward_data      4 per element (sum g, exp y, mul, sub)
// Bytes: the input read once, outputs (values, and int64 indices where returned) written.
#include <algorithm>
#include <cmath>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<bool> reduce(in.size(), dims.empty());
  for (int64_t d : dims)
    if (!in.empty()) reduce[static_cast<size_t>(wrap_dim(d, in.size()))] = true;
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduce[i]) {
      out.push_back(in[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

struct Reduce {
  std::vector<int64_t> dims;  // empty: all dims
  bool keepdim = false;
  double per_input = 1;
  double per_output = 0;
  c10::ScalarType value_dtype = c10::ScalarType::Undefined;  // Undefined: self's dtype
  int value_outputs = 1;                                     // values tensors written (var_mean: 2)
  bool indices = false;  // also writes int64 indices (max.dim, argmax writes only those)
  bool only_indices = false;
};

OpCost reduce(const OpCall& call, const Reduce& r) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const double n = work_elements(*self);
  const double o = numel(reduced_shape(self->shape, r.dims, r.keepdim));
  const c10::ScalarType vt =
      r.value_dtype == c10::ScalarType::Undefined ? self->dtype : r.value_dtype;
  double computed = r.only_indices ? 0 : r.value_outputs * o * element_size(vt);
  if (r.indices || r.only_indices) computed += o * element_size(c10::ScalarType::Long);
  return make_cost(r.per_input * n + r.per_output * o, bytes_of(self),
                   written_bytes(call, computed));
}

// sum / mean / nansum: (self, dtype?) or (self, dim[]?, keepdim, dtype?).
OpCost sum_like(const OpCall& call, bool mean) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  Reduce r;
  size_t dtype_index = 1;
  if (call.inputs.size() >= 3 && is_kind(call, 2, ArgMeta::Kind::kBool)) {
    r.dims = call.input_ints(1);
    r.keepdim = flag_at(call, 2, false);
    dtype_index = 3;
  }
  // Integer sums accumulate (and return) int64 unless a dtype is asked for.
  const c10::ScalarType natural =
      !mean && !is_floating(self->dtype) ? c10::ScalarType::Long : self->dtype;
  r.value_dtype = dtype_at(call, dtype_index, natural);
  r.per_output = mean ? 1 : 0;
  return reduce(call, r);
}

// max / min: (self) full; (self, other) elementwise; (self, dim, keepdim) values + indices.
OpCost max_like(const OpCall& call) {
  Reduce r;
  if (is_kind(call, 1, ArgMeta::Kind::kTensor)) {
    const TensorMeta* a = call.input_tensor(0);
    const TensorMeta* b = call.input_tensor(1);
    if (a == nullptr || b == nullptr) return {};
    const double n = numel(broadcast({a, b}));
    return make_cost(n, bytes_of(a) + bytes_of(b),
                     written_bytes(call, n * element_size(result_dtype(call))));
  }
  if (is_kind(call, 1, ArgMeta::Kind::kInt)) {
    r.dims = call.input_ints(1);
    r.keepdim = flag_at(call, 2, false);
    r.indices = true;
  }
  return reduce(call, r);
}

// (self, dim-or-dims, keepdim, ...) with dims at 1 and keepdim at 2.
Reduce dims_at_1(const OpCall& call) {
  Reduce r;
  r.dims = call.input_ints(1);
  r.keepdim = flag_at(call, 2, false);
  return r;
}

// norm(self, p?, ...) / linalg_vector_norm(self, ord, dim?, keepdim, dtype?).
OpCost norm(const OpCall& call) {
  Reduce r;
  if (is_kind(call, 2, ArgMeta::Kind::kIntList) || is_kind(call, 3, ArgMeta::Kind::kBool)) {
    r.dims = call.input_ints(2);
    r.keepdim = flag_at(call, 3, false);
  }
  const double p = scalar_at(call, 1).value_or(2.0);
  const bool simple = p == 0 || p == 1 || p == 2 || std::isinf(p);
  r.per_input = simple ? 2 : 3;
  r.per_output = (p == 0 || p == 1 || std::isinf(p)) ? 0 : 1;
  return reduce(call, r);
}

// var / std (var_mean / std_mean): (self, unbiased) or (self, dim?, unbiased|correction,
// keepdim).
OpCost var_like(const OpCall& call, bool is_std, bool with_mean) {
  Reduce r;
  if (call.inputs.size() >= 4) {
    r.dims = call.input_ints(1);
    r.keepdim = flag_at(call, 3, false);
  }
  r.per_input = 4;
  r.per_output = 2 + (is_std ? 1 : 0);
  r.value_outputs = with_mean ? 2 : 1;
  return reduce(call, r);
}

// topk(self, k, dim, largest, sorted) -> (values, indices) with dim reduced to k.
OpCost topk(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const auto k = scalar_at(call, 1);
  if (self == nullptr || !k) return {};
  Shape out = self->shape;
  if (!out.empty()) {
    const auto d = static_cast<size_t>(
        wrap_dim(call.input_ints(2).empty() ? -1 : call.input_ints(2)[0], out.size()));
    out[d] = static_cast<int64_t>(*k);
  }
  const double o = numel(out);
  const double computed = o * (element_size(self->dtype) + element_size(c10::ScalarType::Long));
  return make_cost(work_elements(*self), bytes_of(self), written_bytes(call, computed));
}

// sort(self, dim, descending) / sort.stable(self, stable?, dim, descending).
OpCost sort(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const size_t dim_index = call.inputs.size() >= 4 ? 2 : 1;
  const std::vector<int64_t> dim = call.input_ints(dim_index);
  double len = 1;
  if (!self->shape.empty())
    len = static_cast<double>(
        self->shape[static_cast<size_t>(wrap_dim(dim.empty() ? -1 : dim[0], self->shape.size()))]);
  const double n = numel(self->shape);
  const double computed = n * (element_size(self->dtype) + element_size(c10::ScalarType::Long));
  return make_cost(n * std::ceil(std::log2(std::max(len, 1.0))), bytes_of(self),
                   written_bytes(call, computed));
}

// Scans keep the shape: cumsum(self, dim, dtype?).
OpCost scan(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const double n = numel(self->shape);
  const c10::ScalarType natural = is_floating(self->dtype) ? self->dtype : c10::ScalarType::Long;
  return make_cost(n, bytes_of(self),
                   written_bytes(call, n * element_size(dtype_at(call, 2, natural))));
}

// _softmax(self, dim, half_to_float) / softmax.int(self, dim, dtype?).
OpCost softmax(const OpCall& call, bool underscore) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const double n = numel(self->shape);
  c10::ScalarType out = self->dtype;
  if (underscore) {
    if (flag_at(call, 2, false)) out = c10::ScalarType::Float;
  } else {
    out = dtype_at(call, 2, self->dtype);
  }
  return make_cost(5 * n, bytes_of(self), written_bytes(call, n * element_size(out)));
}

// _softmax_backward_data(grad_output, output, dim, input_dtype).
OpCost softmax_backward(const OpCall& call) {
  const TensorMeta* grad = call.input_tensor(0);
  const TensorMeta* out = call.input_tensor(1);
  if (grad == nullptr || out == nullptr) return {};
  const double n = numel(grad->shape);
  const c10::ScalarType dt = dtype_at(call, 3, grad->dtype);
  return make_cost(4 * n, bytes_of(grad) + bytes_of(out),
                   written_bytes(call, n * element_size(dt)));
}

}  // namespace

void add_reduction_rules(CostTable& t) {
  add_rule(t, {"sum", "nansum"}, [](const OpCall& c) { return sum_like(c, false); });
  add_rule(t, {"mean"}, [](const OpCall& c) { return sum_like(c, true); });
  add_rule(t, {"max", "min"}, max_like);
  add_rule(t, {"amax", "amin"}, [](const OpCall& c) { return reduce(c, dims_at_1(c)); });
  add_rule(t, {"argmax", "argmin"}, [](const OpCall& c) {
    Reduce r = dims_at_1(c);
    r.only_indices = true;
    return reduce(c, r);
  });
  add_rule(t, {"any", "all"}, [](const OpCall& c) {
    Reduce r = dims_at_1(c);
    r.value_dtype = c10::ScalarType::Bool;
    return reduce(c, r);
  });
  add_rule(t, {"prod"}, [](const OpCall& c) {
    const TensorMeta* self = c.input_tensor(0);
    if (self == nullptr) return OpCost{};
    Reduce r;
    size_t dtype_index = 1;
    if (is_kind(c, 1, ArgMeta::Kind::kInt) && is_kind(c, 2, ArgMeta::Kind::kBool)) {
      r = dims_at_1(c);
      dtype_index = 3;
    }
    const c10::ScalarType natural = is_floating(self->dtype) ? self->dtype : c10::ScalarType::Long;
    r.value_dtype = dtype_at(c, dtype_index, natural);
    return reduce(c, r);
  });
  add_rule(t, {"norm", "native_norm", "linalg_vector_norm"}, norm);
  add_rule(t, {"var"}, [](const OpCall& c) { return var_like(c, false, false); });
  add_rule(t, {"std"}, [](const OpCall& c) { return var_like(c, true, false); });
  add_rule(t, {"var_mean"}, [](const OpCall& c) { return var_like(c, false, true); });
  add_rule(t, {"std_mean"}, [](const OpCall& c) { return var_like(c, true, true); });
  add_rule(t, {"logsumexp"}, [](const OpCall& c) {
    Reduce r = dims_at_1(c);
    r.per_input = 4;
    r.per_output = 2;
    return reduce(c, r);
  });
  add_rule(t, {"cumsum", "cumsum_", "cumprod", "cumprod_"}, scan);
  add_rule(t, {"topk"}, topk);
  add_rule(t, {"sort"}, sort);
  add_rule(t, {"softmax", "log_softmax"}, [](const OpCall& c) { return softmax(c, false); });
  add_rule(t, {"_softmax", "_log_softmax"}, [](const OpCall& c) { return softmax(c, true); });
  add_rule(t, {"_softmax_backward_data", "_log_softmax_backward_data"}, softmax_backward);
}

}  // namespace plumb::profile::cost
