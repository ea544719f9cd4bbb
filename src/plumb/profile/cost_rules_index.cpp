// Cost rules for gather/scatter-style operators (indexing, index_select, gather, scatter,
// index_put_), embeddings and embedding bags (forward, dense and sparse backward), and
// sparse-tensor maintenance (coalesce, sparse_mask).
//
// Bytes of a gather read the index tensors plus only the elements actually fetched, not the
// whole source: an embedding lookup of 64 tokens from a 40,000 x 256 table reads 64 rows,
// and counting the table would overstate its traffic ~600x and hide that it is memory-bound.
// Scatters into an existing tensor likewise read and write only the touched elements.
//   embedding, index_select, gather, index, masked_select   0 FLOPs
//   embedding_dense_backward   one add per grad_output element (+1 per element with
//                              scale_grad_by_freq); writes the full [num_weights, D] grad
//   embedding_sparse_backward  0 FLOPs (+1 per element with scale_grad_by_freq); writes the
//                              COO grad: n rows of values + n int64 indices
//   embedding_bag  sum/mean: one add per fetched element (+1 with per_sample_weights) + one
//                  division per output element for mean; max: one comparison per fetched
//                  element. Backward: one add per fetched element (dense), 0 (sparse), + the
//                  mean division and per_sample_weights multiply per fetched element
//   quantized row-wise embedding_bag (int8 inference): 3 per fetched element (dequantize
//                  multiply and add, sum), bytes of the packed rows fetched
//   index_add_, scatter_add_, index_put_(accumulate), scatter with reduce
//                  one add per source element (index_add_ with alpha != 1: 2); plain scatter
//                  and index_put_: 0
//   _coalesce      one add per duplicate value merged ((nnz_in - nnz_out) * row, when the
//                  output is recorded; 0 otherwise); sparse_mask 0
#include <algorithm>

#include "plumb/profile/cost_rules.h"

namespace plumb::profile::cost {

namespace {

bool is_mask(const TensorMeta& t) {
  return t.dtype == c10::ScalarType::Bool || t.dtype == c10::ScalarType::Byte;
}

// Shape of self[indices] under advanced indexing. Undefined entries keep their dim; a boolean
// mask consumes its rank of dims and yields at most numel(mask) elements (an upper bound:
// the true count depends on the data). The broadcast index dims are placed at the first
// indexed position; ATen may move them to the front, which has the same element count.
Shape advanced_index_shape(const TensorMeta& self, const std::vector<TensorMeta>& indices) {
  Shape before, after;
  std::vector<TensorMeta> index_shapes;
  size_t dim = 0;
  for (const TensorMeta& t : indices) {
    if (!t.defined()) {
      if (dim < self.shape.size())
        (index_shapes.empty() ? before : after).push_back(self.shape[dim]);
      ++dim;
      continue;
    }
    TensorMeta s;
    s.shape = is_mask(t) ? Shape{static_cast<int64_t>(numel(t.shape))} : t.shape;
    index_shapes.push_back(s);
    dim += is_mask(t) ? t.shape.size() : 1;
  }
  for (; dim < self.shape.size(); ++dim) after.push_back(self.shape[dim]);
  std::vector<const TensorMeta*> ptrs;
  for (const TensorMeta& s : index_shapes) ptrs.push_back(&s);
  Shape out = before;
  const Shape mid = broadcast(ptrs);
  out.insert(out.end(), mid.begin(), mid.end());
  out.insert(out.end(), after.begin(), after.end());
  return out;
}

const std::vector<TensorMeta>& index_list(const OpCall& call, size_t i) {
  static const std::vector<TensorMeta> kEmpty;
  return is_kind(call, i, ArgMeta::Kind::kTensorList) ? call.inputs[i].tensors : kEmpty;
}

double list_bytes(const std::vector<TensorMeta>& list) {
  double b = 0;
  for (const TensorMeta& t : list) b += bytes_of(&t);
  return b;
}

// A gather producing `out_elems` elements of self's dtype, reading `index_bytes` of indices.
OpCost gather_cost(const OpCall& call, const TensorMeta& self, double out_elems,
                   double index_bytes) {
  const double fetched = out_elems * element_size(self.dtype);
  return make_cost(0, index_bytes + fetched, written_bytes(call, fetched));
}

// index.Tensor(self, indices).
OpCost index_tensor(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const std::vector<TensorMeta>& idx = index_list(call, 1);
  const TensorMeta* out = recorded_output(call);
  const double n = out != nullptr ? numel(out->shape) : numel(advanced_index_shape(*self, idx));
  return gather_cost(call, *self, n, list_bytes(idx));
}

// index_select(self, dim, index): self's shape with dim replaced by numel(index).
OpCost index_select(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(2);
  if (self == nullptr || idx == nullptr) return {};
  Shape out = self->shape;
  if (!out.empty()) {
    const std::vector<int64_t> d = call.input_ints(1);
    out[static_cast<size_t>(wrap_dim(d.empty() ? 0 : d[0], out.size()))] =
        static_cast<int64_t>(numel(idx->shape));
  }
  return gather_cost(call, *self, numel(out), bytes_of(idx));
}

// gather(self, dim, index, sparse_grad): the output has index's shape.
OpCost gather(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(2);
  if (self == nullptr || idx == nullptr) return {};
  return gather_cost(call, *self, numel(idx->shape), bytes_of(idx));
}

// masked_select(self, mask): reads both; the output size depends on the data (upper bound:
// every element selected).
OpCost masked_select(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* mask = call.input_tensor(1);
  if (self == nullptr || mask == nullptr) return {};
  return make_cost(0, bytes_of(self) + bytes_of(mask),
                   written_bytes(call, numel(broadcast({self, mask})) * element_size(self->dtype)));
}

// nonzero(self) -> int64 [nnz, rank] (upper bound without a recorded output).
OpCost nonzero(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  const double computed = numel(self->shape) * static_cast<double>(self->shape.size()) *
                          element_size(c10::ScalarType::Long);
  return make_cost(0, bytes_of(self), written_bytes(call, computed));
}

// A scatter of `touched` elements into self: in place it reads the index/source data and,
// when accumulating, the touched elements of self, and writes those; out of place it also
// copies all of self first. `per_touched` FLOPs per touched element.
OpCost scatter_cost(const OpCall& call, const TensorMeta& self, double touched,
                    double index_and_source_bytes, bool accumulate, double per_touched) {
  const double es = element_size(self.dtype);
  double read = index_and_source_bytes + (accumulate ? touched * es : 0);
  double written = touched * es;
  if (!is_in_place(call)) {
    read += bytes_of(&self);
    written = written_bytes(call, bytes_of(&self));
  }
  return make_cost(per_touched * touched, read, written);
}

// index_add(_)(self, dim, index, source, alpha).
OpCost index_add(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(2);
  const TensorMeta* src = call.input_tensor(3);
  if (self == nullptr || idx == nullptr || src == nullptr) return {};
  const double per = scalar_at(call, 4).value_or(1.0) != 1.0 ? 2 : 1;
  return scatter_cost(call, *self, numel(src->shape), bytes_of(idx) + bytes_of(src), true, per);
}

// scatter(_)(self, dim, index, src | value [, reduce]) and scatter_add(_)(self, dim, index,
// src): one element per index entry; src elements beyond index's extent are not read.
OpCost scatter(const OpCall& call, bool add) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(2);
  if (self == nullptr || idx == nullptr) return {};
  const TensorMeta* src = call.input_tensor(3);
  const double touched = numel(idx->shape);
  const bool reduce =
      add || (call.inputs.size() > 4 && call.inputs[4].kind == ArgMeta::Kind::kOther);
  const double src_bytes = src != nullptr ? touched * element_size(src->dtype) : 0;
  return scatter_cost(call, *self, touched, bytes_of(idx) + src_bytes, reduce, reduce ? 1 : 0);
}

// index_put(_)/_index_put_impl(_)(self, indices, values, accumulate [, unsafe]).
OpCost index_put(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* values = call.input_tensor(2);
  if (self == nullptr || values == nullptr) return {};
  const std::vector<TensorMeta>& idx = index_list(call, 1);
  const double touched = numel(advanced_index_shape(*self, idx));
  const bool acc = flag_at(call, 3, false);
  return scatter_cost(call, *self, touched, list_bytes(idx) + bytes_of(values), acc, acc ? 1 : 0);
}

// select_backward(grad, input_sizes, dim, index) / slice_backward(grad, input_sizes, ...) /
// index_select_backward(grad, self_sizes, dim, index): a zero-filled grad of the input's
// size receives grad (index_select_backward accumulates: one add per grad element).
OpCost view_backward(const OpCall& call, bool accumulate) {
  const TensorMeta* g = call.input_tensor(0);
  if (g == nullptr) return {};
  const double n = numel(call.input_ints(1));
  const size_t arity = accumulate ? 4 : 1;  // index_select_backward reads its index at 3
  return make_cost(accumulate ? numel(g->shape) : 0, all_input_bytes(call, arity),
                   written_bytes(call, n * element_size(g->dtype), arity));
}

// ---- Embeddings ----

// embedding(weight [V, D], indices, padding_idx, scale_grad_by_freq, sparse).
OpCost embedding(const OpCall& call) {
  const TensorMeta* w = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  if (w == nullptr || idx == nullptr || w->shape.size() != 2) return {};
  return gather_cost(call, *w, numel(idx->shape) * static_cast<double>(w->shape[1]), bytes_of(idx));
}

// Dense grad [num_weights, D] accumulated from grad [*, D]: one add per grad element.
OpCost embedding_dense_grad(const OpCall& call, double num_weights, bool scale) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  if (g == nullptr || idx == nullptr || g->shape.empty()) return {};
  const double n = numel(g->shape);
  const double d = static_cast<double>(g->shape.back());
  return make_cost(n * (scale ? 2 : 1), bytes_of(g) + bytes_of(idx),
                   written_bytes(call, num_weights * d * element_size(g->dtype)));
}

// Sparse COO grad: one row of values and one int64 index per looked-up index.
OpCost embedding_sparse_grad(const OpCall& call, bool scale) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  if (g == nullptr || idx == nullptr || g->shape.empty()) return {};
  const double n = numel(idx->shape);
  const double d = static_cast<double>(g->shape.back());
  const double computed = n * d * element_size(g->dtype) + n * element_size(c10::ScalarType::Long);
  return make_cost(scale ? n * d : 0, bytes_of(g) + bytes_of(idx), written_bytes(call, computed));
}

// embedding_renorm_(self, indices, max_norm, norm_type): per looked-up row a norm (2/element),
// a comparison and a rescale (1/element): 3 per element of the rows touched.
OpCost embedding_renorm(const OpCall& call) {
  const TensorMeta* w = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  if (w == nullptr || idx == nullptr || w->shape.size() != 2) return {};
  const double touched = numel(idx->shape) * static_cast<double>(w->shape[1]);
  const double rows_bytes = touched * element_size(w->dtype);
  return make_cost(3 * touched, bytes_of(idx) + rows_bytes, rows_bytes);
}

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights?, include_last_offset, padding_idx) -> (output [B, D], offset2bag [n],
// bag_size [B], max_indices [B, D] for max, else [B]).
OpCost embedding_bag(const OpCall& call) {
  const TensorMeta* w = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  const TensorMeta* offsets = call.input_tensor(2);
  if (w == nullptr || idx == nullptr || w->shape.size() != 2) return {};
  const int64_t mode = static_cast<int64_t>(scalar_at(call, 4).value_or(kSum));
  const TensorMeta* psw = call.input_tensor(6);
  const double n = numel(idx->shape);
  const double d = static_cast<double>(w->shape[1]);
  double bags = 1;
  if (idx->shape.size() == 2) {
    bags = static_cast<double>(idx->shape[0]);
  } else if (offsets != nullptr) {
    bags = numel(offsets->shape) - (flag_at(call, 7, false) ? 1 : 0);
  }
  const double fetched = n * d;
  const double flops = fetched + (psw != nullptr ? fetched : 0) + (mode == kMean ? bags * d : 0);
  const double es = element_size(w->dtype), ls = element_size(c10::ScalarType::Long);
  const double read = bytes_of(idx) + bytes_of(offsets) + bytes_of(psw) + fetched * es;
  const double computed =
      bags * d * es + n * ls + bags * ls + (mode == kMax ? bags * d : bags) * ls;
  return make_cost(flops, read, written_bytes(call, computed));
}

// quantized::embedding_bag_{byte,4bit}_rowwise_offsets(weight [rows, packed row], indices,
// offsets?, scale_grad_by_freq, mode, pruned_weights, per_sample_weights?, mapping?,
// include_last_offset) -> [B, D] fp32. A packed row is D codes and an fp32 scale and bias
// (8-bit), or D/2 bytes and an fp16 scale and bias (4-bit). Each fetched code is dequantized
// (multiply, add) and summed: 3 FLOPs, + 1 with per-sample weights.
OpCost quantized_embedding_bag(const OpCall& call, int bits) {
  const TensorMeta* w = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  const TensorMeta* offsets = call.input_tensor(2);
  if (w == nullptr || idx == nullptr || w->shape.size() != 2) return {};
  const double row_bytes = static_cast<double>(w->shape[1]);
  const double d = bits == 8 ? row_bytes - 8 : (row_bytes - 4) * 2;
  const double n = numel(idx->shape);
  const double bags = offsets != nullptr
                          ? numel(offsets->shape) - (flag_at(call, 8, false) ? 1 : 0)
                          : (idx->shape.size() == 2 ? static_cast<double>(idx->shape[0]) : 1);
  const TensorMeta* psw = call.input_tensor(6);
  const double flops = n * d * (psw != nullptr ? 4 : 3);
  const double read = bytes_of(idx) + bytes_of(offsets) + bytes_of(psw) + n * row_bytes;
  return make_cost(flops, read, written_bytes(call, bags * d * 4));
}

// Positions in an embedding-bag backward schema; sparse -1: fixed by `fixed_sparse`.
struct BagBackward {
  int num_weights, mode, sparse, psw;
  bool fixed_sparse;
};

OpCost embedding_bag_backward(const OpCall& call, const BagBackward& s) {
  const TensorMeta* g = call.input_tensor(0);
  const TensorMeta* idx = call.input_tensor(1);
  if (g == nullptr || idx == nullptr || g->shape.empty()) return {};
  const bool sparse =
      s.sparse >= 0 ? flag_at(call, static_cast<size_t>(s.sparse), false) : s.fixed_sparse;
  const int64_t mode =
      static_cast<int64_t>(scalar_at(call, static_cast<size_t>(s.mode)).value_or(kSum));
  const double n = numel(idx->shape);
  const double d = static_cast<double>(g->shape.back());
  const double fetched = mode == kMax ? numel(g->shape) : n * d;
  double flops = (sparse ? 0 : fetched) + (mode == kMean ? fetched : 0);
  if (call.input_tensor(static_cast<size_t>(s.psw)) != nullptr) flops += fetched;
  const double es = element_size(g->dtype);
  const double computed =
      sparse ? fetched * es + (fetched / std::max(d, 1.0)) * element_size(c10::ScalarType::Long)
             : scalar_at(call, static_cast<size_t>(s.num_weights)).value_or(0) * d * es;
  const auto arity = static_cast<size_t>(s.psw + 1);
  return make_cost(flops, all_input_bytes(call, arity), written_bytes(call, computed, arity));
}

// ---- Sparse tensors ----

// _coalesce(self): sorts indices and merges duplicate rows.
OpCost coalesce(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  if (self == nullptr) return {};
  double flops = 0;
  if (const TensorMeta* out = recorded_output(call)) {
    flops = std::max(0.0, work_elements(*self) - work_elements(*out));
  }
  return make_cost(flops, bytes_of(self), written_bytes(call, bytes_of(self)));
}

// sparse_mask(self dense, mask sparse): the rows of self at mask's indices, as a sparse tensor.
OpCost sparse_mask(const OpCall& call) {
  const TensorMeta* self = call.input_tensor(0);
  const TensorMeta* mask = call.input_tensor(1);
  if (self == nullptr || mask == nullptr) return {};
  const double rows = work_elements(*mask);
  const double values = rows * element_size(self->dtype);
  const double computed =
      values + static_cast<double>(mask->sparse_nnz) * element_size(c10::ScalarType::Long);
  return make_cost(0, bytes_of(mask) + values, written_bytes(call, computed));
}

}  // namespace

void add_index_rules(CostTable& t) {
  add_rule(t, {"index"}, index_tensor);
  add_rule(t, {"index_select"}, index_select);
  add_rule(t, {"gather"}, gather);
  add_rule(t, {"masked_select"}, masked_select);
  add_rule(t, {"nonzero"}, nonzero);
  add_rule(t, {"index_add", "index_add_"}, index_add);
  add_rule(t, {"scatter", "scatter_"}, [](const OpCall& c) { return scatter(c, false); });
  add_rule(t, {"scatter_add", "scatter_add_"}, [](const OpCall& c) { return scatter(c, true); });
  add_rule(t, {"index_put", "index_put_", "_index_put_impl", "_index_put_impl_"}, index_put);
  add_rule(t, {"select_backward", "slice_backward"},
           [](const OpCall& c) { return view_backward(c, false); });
  add_rule(t, {"index_select_backward"}, [](const OpCall& c) { return view_backward(c, true); });

  add_rule(t, {"embedding"}, embedding);
  add_rule(t, {"embedding_backward"}, [](const OpCall& c) {
    // embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse)
    const bool scale = flag_at(c, 4, false);
    if (flag_at(c, 5, false)) return embedding_sparse_grad(c, scale);
    return embedding_dense_grad(c, scalar_at(c, 2).value_or(0), scale);
  });
  add_rule(t, {"embedding_dense_backward"}, [](const OpCall& c) {
    return embedding_dense_grad(c, scalar_at(c, 2).value_or(0), flag_at(c, 4, false));
  });
  add_rule(t, {"embedding_sparse_backward"},
           [](const OpCall& c) { return embedding_sparse_grad(c, flag_at(c, 4, false)); });
  add_rule(t, {"embedding_renorm_"}, embedding_renorm);
  add_rule(t, {"embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"}, embedding_bag);
  t["quantized::embedding_bag_byte_rowwise_offsets"] = [](const OpCall& c) {
    return quantized_embedding_bag(c, 8);
  };
  t["quantized::embedding_bag_4bit_rowwise_offsets"] = [](const OpCall& c) {
    return quantized_embedding_bag(c, 4);
  };
  // num_weights, mode, sparse, per_sample_weights, fixed_sparse
  auto bag_bwd = [](BagBackward s) {
    return [s](const OpCall& c) { return embedding_bag_backward(c, s); };
  };
  add_rule(t, {"_embedding_bag_backward"}, bag_bwd({6, 8, 9, 10, false}));
  add_rule(t, {"_embedding_bag_dense_backward"}, bag_bwd({5, 7, -1, 8, false}));
  add_rule(t, {"_embedding_bag_sparse_backward"}, bag_bwd({5, 7, -1, 8, true}));

  add_rule(t, {"_coalesce"}, coalesce);
  // coalesce calls _coalesce when there is work; as a leaf it returned self (already
  // coalesced). The others wrap or expose existing index/value tensors without copying.
  add_rule(t,
           {"coalesce", "_indices", "_values", "indices", "values",
            "_sparse_coo_tensor_with_dims_and_tensors", "_sparse_coo_tensor_unsafe",
            "sparse_coo_tensor", "_coalesced_"},
           [](const OpCall&) { return make_cost(0, 0, 0); });
  add_rule(t, {"sparse_mask"}, sparse_mask);
}

}  // namespace plumb::profile::cost
