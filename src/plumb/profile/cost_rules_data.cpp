// Cost rules for operators that move or create data without arithmetic: views, copies,
// concatenation, fills and factories, random generation, scalar reads.
//
//   views (view, reshape, t, transpose, expand, select, slice, squeeze, as_strided, detach,
//   split, chunk, narrow, ...) and allocations (empty, empty_strided, resize_)
//                   0 FLOPs, 0 bytes, but costed: we know they do no work. reshape, flatten,
//                   contiguous, to and type_as are here too: when they must copy they call
//                   clone/_to_copy/_unsafe_view, so the observer sees children and treats
//                   them as composite; as leaves they returned an alias.
//   copy_ clone _to_copy cat stack repeat flip roll constant_pad_nd tril triu
//                   0 FLOPs; read the source once, write the result (dtype conversion in a
//                   copy is not counted as arithmetic)
//   int_repr _make_per_tensor_quantized_tensor   the same: a quantized tensor's codes copied
//                   to or from a plain uint8 tensor
//   fill_ zero_ zeros ones full *_like new_* arange linspace scalar_tensor
//                   0 FLOPs; write the result
//   random (normal_, uniform_, bernoulli_, randn, rand, randint, randperm, randn_like,
//   rand_like, bernoulli, multinomial ...)
//                   0 FLOPs (generating random bits is not floating-point arithmetic);
//                   bytes = the output written + any tensor argument read (probabilities)
//   item / _local_scalar_dense / is_nonzero   reads one element
//   metadata queries (_nnz, sparse_dim, is_coalesced, result_type ...)   0, 0
#include <algorithm>
#include <cmath>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

OpCost free_op(const OpCall&) {
  return make_cost(0, 0, 0);
}

// Reads the first input once and writes a result of the same shape (at `dtype`).
OpCost copy_of_self(const OpCall& call, c10::ScalarType dtype) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  if (dtype == c10::ScalarType::Undefined) dtype = self->dtype;
  return make_cost(0, bytes_of(self),
                   written_bytes(call, numel(self->shape) * element_size(dtype)));
}

// copy_(self, src, non_blocking): reads src, writes all of self.
OpCost copy_(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* src = call.input_tensor(1);
  if (self == nullptr || src == nullptr) return {};
  return make_cost(0, bytes_of(src), bytes_of(self));
}

// cat / stack (tensors, dim): every piece read, their sum written.
OpCost concat(const OpCall& call) {
  const std::vector<const TensorMeta*> parts = tensor_list(call, 0);
  if (parts.empty()) return {};
  double read = 0, elems = 0;
  for (const TensorMeta* p : parts) {
    read += bytes_of(p);
    elems += numel(p->shape);
  }
  return make_cost(0, read, written_bytes(call, elems * element_size(result_dtype(call))));
}

// repeat(self, repeats).
OpCost repeat(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const double n = numel(self->shape) * numel(call.input_ints(1));
  return make_cost(0, bytes_of(self), written_bytes(call, n * element_size(self->dtype)));
}

// constant_pad_nd(self, pad [left, right] pairs from the last dim backwards, value).
OpCost constant_pad(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  Shape out = self->shape;
  const std::vector<int64_t> pad = call.input_ints(1);
  for (size_t i = 0; i + 1 < pad.size() && i / 2 < out.size(); i += 2)
    out[out.size() - 1 - i / 2] += pad[i] + pad[i + 1];
  return make_cost(0, bytes_of(self), written_bytes(call, numel(out) * element_size(self->dtype)));
}

// In-place fills and in-place random generation: write self; read the other tensor
// argument if any (fill_.Tensor's value, bernoulli_.Tensor's probabilities at 1).
OpCost fill_self(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  return make_cost(0, all_input_bytes(call, 2) - bytes_of(self), bytes_of(self));
}

// The first int-list argument (a factory's size).
std::vector<int64_t> first_int_list(const OpCall& call) {
  for (const ArgMeta& a : call.inputs)
    if (a.kind == ArgMeta::Kind::kIntList) return a.ints;
  return {};
}

// Factories from a size: zeros/ones/empty(size, dtype?, ...), full(size, value, dtype?, ...),
// randn/rand(size, [generator,] dtype?, ...), randint([low,] high, size, ...).
// `dtype_index` -1: use `fallback`.
OpCost factory(const OpCall& call, int dtype_index, c10::ScalarType fallback) {
  const c10::ScalarType dt =
      dtype_index >= 0 ? dtype_at(call, static_cast<size_t>(dtype_index), fallback) : fallback;
  const double n = numel(first_int_list(call));
  return make_cost(0, 0, written_bytes(call, n * element_size(dt)));
}

// *_like(self, [value,] dtype?, ...) and new_*(self, size, [value,] dtype?, ...): reads
// nothing of self (only its metadata), writes the result.
OpCost like_factory(const OpCall& call, bool sized, int dtype_index) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const c10::ScalarType dt = dtype_at(call, static_cast<size_t>(dtype_index), self->dtype);
  const double n = sized ? numel(call.input_ints(1)) : numel(self->shape);
  return make_cost(0, 0, written_bytes(call, n * element_size(dt)));
}

// full(size, fill_value, dtype?): an integer fill value makes int64, a float one float.
OpCost full(const OpCall& call) {
  const c10::ScalarType natural = is_kind(call, 1, ArgMeta::Kind::kInt)    ? c10::ScalarType::Long
                                  : is_kind(call, 1, ArgMeta::Kind::kBool) ? c10::ScalarType::Bool
                                                                           : c10::ScalarType::Float;
  return factory(call, 2, natural);
}

// Random tensors from a size. randn/rand(size, dtype, layout, device, pin_memory) has its
// dtype at 1; the .generator overload (one argument more) at 2.
OpCost random_sized(const OpCall& call) {
  const int dtype_index = call.inputs.size() >= 6 ? 2 : 1;
  return factory(call, dtype_index, c10::ScalarType::Float);
}

// Out-of-place random ops reading tensors (bernoulli(p), normal(mean, std), poisson(rates)),
// which sit in the first `arity` arguments: the output has their broadcast shape, or a size
// list's.
OpCost random_from_tensors(const OpCall& call, size_t arity) {
  const std::vector<const TensorMeta*> tensors = input_tensors(call, arity);
  Shape out = tensors.empty() ? first_int_list(call) : broadcast(tensors);
  const c10::ScalarType dtype = tensors.empty() ? c10::ScalarType::Float : tensors[0]->dtype;
  return make_cost(0, all_input_bytes(call, arity),
                   written_bytes(call, numel(out) * element_size(dtype), arity));
}

// multinomial(self [.., C], num_samples, replacement) -> int64 [.., num_samples].
OpCost multinomial(const OpCall& call) {
  const TensorMeta* p = call.input_tensor(0);
  const auto k = scalar_at(call, 1);
  if (p == nullptr || !k || p->shape.empty()) return {};
  const double rows = numel(p->shape) / static_cast<double>(std::max<int64_t>(p->shape.back(), 1));
  return make_cost(0, bytes_of(p),
                   written_bytes(call, rows * *k * element_size(c10::ScalarType::Long)));
}

// arange(end | start, end | start, end, step; dtype, layout, device, pin_memory): the
// argument count tells the overload apart.
OpCost arange(const OpCall& call) {
  const size_t scalars = call.inputs.size() >= 7 ? 3 : call.inputs.size() == 6 ? 2 : 1;
  const double start = scalars >= 2 ? scalar_at(call, 0).value_or(0) : 0;
  const double end = scalar_at(call, scalars >= 2 ? 1 : 0).value_or(0);
  const double step = scalars == 3 ? scalar_at(call, 2).value_or(1) : 1;
  const double n = step != 0 ? std::max(0.0, std::ceil((end - start) / step)) : 0;
  const bool integral =
      !is_kind(call, 0, ArgMeta::Kind::kDouble) && !is_kind(call, 1, ArgMeta::Kind::kDouble);
  const c10::ScalarType dt =
      dtype_at(call, scalars, integral ? c10::ScalarType::Long : c10::ScalarType::Float);
  return make_cost(0, 0, written_bytes(call, n * element_size(dt)));
}

// item / _local_scalar_dense / is_nonzero: one element crosses to the caller.
OpCost scalar_read(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  return make_cost(0, element_size(self->dtype), 0);
}

}  // namespace

void add_data_rules(CostTable& t) {
  // Views: new sizes/strides over the same storage.
  add_rule(t,
           {"view", "_unsafe_view", "_reshape_alias", "reshape", "reshape_as", "view_as", "flatten",
            "unflatten", "expand", "expand_as", "broadcast_to", "as_strided", "as_strided_",
            "unfold", "view_as_real", "view_as_complex", "real", "imag"},
           free_op);
  add_rule(t,
           {"t", "t_", "transpose", "transpose_", "numpy_T", "mT", "permute", "movedim", "moveaxis",
            "swapaxes", "swapdims", "diagonal", "select", "slice", "narrow", "unsqueeze",
            "unsqueeze_", "squeeze", "squeeze_"},
           free_op);
  add_rule(t,
           {"unbind", "chunk", "unsafe_chunk", "split", "unsafe_split", "split_with_sizes",
            "unsafe_split_with_sizes", "tensor_split"},
           free_op);
  // Aliases and flag changes; contiguous/to/type_as as leaves returned self (see above).
  // Dropout as a leaf is the eval-mode identity (it returns its input); in training it calls
  // the operators that do its work and is composite.
  add_rule(t, {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}, free_op);
  add_rule(t,
           {"detach", "detach_", "alias", "conj", "_conj", "resolve_conj", "resolve_neg",
            "_neg_view", "lift", "lift_fresh", "contiguous", "to", "type_as", "requires_grad_"},
           free_op);
  // Allocations without initialisation, and storage resizes.
  add_rule(t,
           {"empty", "_empty_affine_quantized", "_empty_per_channel_affine_quantized", "empty_like",
            "empty_strided", "new_empty", "new_empty_strided", "resize_", "resize_as_", "set_",
            "resize_as_sparse_", "sparse_resize_", "sparse_resize_and_clear_"},
           free_op);
  // Metadata queries that some kernels dispatch (the sparse ones call _nnz, sparse_dim ...).
  add_rule(t, {"_nnz",         "dense_dim",   "sparse_dim",   "q_scale",
               "q_zero_point", "qscheme",     "_dimI",        "_dimV",
               "is_coalesced", "result_type", "size",         "stride",
               "numel",        "dim",         "is_same_size", "is_floating_point",
               "is_complex",   "is_conj",     "is_neg",       "_is_zerotensor",
               "is_set_to"},
           free_op);
  // aten::detach and aten::detach_ record an inner "detach" / "detach_" range (no namespace)
  // for their autograd-view bookkeeping: no data is touched. (detach_ runs in an optimizer's
  // zero_grad; uncosted, it took 1.3% of a tiny dlrm training step in one CI run.)
  t["detach"] = free_op;
  t["detach_"] = free_op;
  add_rule(t, {"copy_"}, copy_);
  add_rule(t,
           {"clone", "flip", "roll", "tril", "triu", "tril_", "triu_", "int_repr",
            "_make_per_tensor_quantized_tensor"},
           [](const OpCall& c) { return copy_of_self(c, c10::ScalarType::Undefined); });
  add_rule(t, {"_to_copy"}, [](const OpCall& c) {
    const TensorMeta* self = c.input_tensor(0);
    return copy_of_self(c,
                        self != nullptr ? dtype_at(c, 1, self->dtype) : c10::ScalarType::Undefined);
  });
  add_rule(t, {"cat", "_cat", "concat", "concatenate", "stack", "_stack", "hstack", "vstack"},
           concat);
  add_rule(t, {"repeat"}, repeat);
  add_rule(t, {"constant_pad_nd"}, constant_pad);

  add_rule(t,
           {"fill_", "zero_", "normal_", "uniform_", "bernoulli_", "random_", "exponential_",
            "geometric_", "log_normal_", "cauchy_"},
           fill_self);
  add_rule(t, {"zeros", "ones", "scalar_tensor"},
           [](const OpCall& c) { return factory(c, 1, c10::ScalarType::Float); });
  add_rule(t, {"full"}, full);
  add_rule(t, {"zeros_like", "ones_like"},
           [](const OpCall& c) { return like_factory(c, false, 1); });
  add_rule(t, {"full_like"}, [](const OpCall& c) { return like_factory(c, false, 2); });
  add_rule(t, {"new_zeros", "new_ones"}, [](const OpCall& c) { return like_factory(c, true, 2); });
  add_rule(t, {"new_full"}, [](const OpCall& c) { return like_factory(c, true, 3); });
  add_rule(t, {"arange"}, arange);
  add_rule(t, {"linspace"}, [](const OpCall& c) {
    const double n = scalar_at(c, 2).value_or(0);
    return make_cost(0, 0,
                     written_bytes(c, n * element_size(dtype_at(c, 3, c10::ScalarType::Float))));
  });

  add_rule(t, {"randn", "rand"}, random_sized);
  add_rule(t, {"randint"}, [](const OpCall& c) { return factory(c, -1, c10::ScalarType::Long); });
  add_rule(t, {"randperm"}, [](const OpCall& c) {
    const double n = scalar_at(c, 0).value_or(0);
    return make_cost(0, 0, written_bytes(c, n * element_size(c10::ScalarType::Long)));
  });
  // *_like random ops use self for its shape only; randint_like's dtype position varies with
  // the overload, so its fallback is self's dtype.
  add_rule(t, {"randn_like", "rand_like"},
           [](const OpCall& c) { return like_factory(c, false, 1); });
  add_rule(t, {"randint_like"}, [](const OpCall& c) {
    return like_factory(c, false, static_cast<int>(c.inputs.size()));
  });
  add_rule(t, {"bernoulli", "normal"}, [](const OpCall& c) { return random_from_tensors(c, 2); });
  add_rule(t, {"poisson"}, [](const OpCall& c) { return random_from_tensors(c, 1); });
  add_rule(t, {"multinomial"}, multinomial);

  add_rule(t, {"item", "_local_scalar_dense", "is_nonzero"}, scalar_read);
}

}  // namespace plumb::profile::cost
