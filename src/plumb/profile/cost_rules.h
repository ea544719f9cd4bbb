// Internal to the cost model: the operator table type, the shape/byte helpers every rule
// shares, and one registration function per family of rules (one file each). Not a public
// header: the rest of plumb uses cost_model.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "plumb/profile/cost_model.h"
#include "plumb/profile/op_call.h"

namespace plumb::profile::cost {

using Shape = std::vector<int64_t>;
using CostFn = std::function<OpCost(const OpCall&)>;
using CostTable = std::unordered_map<std::string, CostFn>;

// Families of rules. Each adds "aten::<name>" keys to the table.
void add_gemm_rules(CostTable& table);  // cost_rules_gemm.cpp: conv, matmul, RNN cells
void add_elementwise_rules(
    CostTable& table);                       // cost_rules_elementwise.cpp: arithmetic, activations
void add_reduction_rules(CostTable& table);  // cost_rules_reduce.cpp: reductions, softmax
void add_nn_rules(CostTable& table);         // cost_rules_nn.cpp: normalisation, pooling, losses
void add_data_rules(CostTable& table);       // cost_rules_data.cpp: views, copies,
                                             // factories, random generation
void add_index_rules(CostTable& table);      // cost_rules_index.cpp: gather/scatter,
                                             // embeddings, sparse tensors
void add_huber_rules(CostTable& table);      // cost_rules_huber.cpp: Huber loss (deepq)
void add_masked_rules(CostTable& table);     // cost_rules_masked.cpp: masked_scatter

// Registers the same rule under several operator names ("add" -> "aten::add").
void add_rule(CostTable& table, std::initializer_list<const char*> names, const CostFn& fn);

// ---- Results ----
OpCost make_cost(double flops, double bytes_read, double bytes_written, double macs = 0);

// ---- Shapes and sizes ----
double numel(const Shape& shape);
double element_size(c10::ScalarType dtype);  // real size: fp16/bf16 2, int8/bool 1, int64 8
double bytes_of(const Shape& shape, c10::ScalarType dtype);
double bytes_of(const TensorMeta* t);  // 0 for nullptr; sparse tensors: values + indices
// Elements an op actually touches: a sparse tensor's values (nnz x dense row), else numel.
double work_elements(const TensorMeta& t);
// Broadcast of several shapes (numpy rules).
Shape broadcast(const std::vector<const TensorMeta*>& tensors);
// Negative dims wrap around; out-of-range dims are clamped so a bad call cannot crash.
int64_t wrap_dim(int64_t dim, size_t rank);
// An int-list argument expanded to `rank` entries: one value repeats, an empty list gives
// `fallback` (pooling's empty stride means "equal to the kernel").
Shape expand_param(const std::vector<int64_t>& values, size_t rank, const Shape& fallback);

// ---- Arguments ----
// RecordFunction reports an out= overload under the same name as the functional one, with
// the output tensors appended after the functional arguments ("aten::mul" with (self, other,
// out)). Rules therefore look only at the first `arity` arguments for the tensors they read:
// arity = the position after the last argument that can be an input tensor.
// Every defined tensor among the first `arity` inputs (single tensors and tensor lists).
std::vector<const TensorMeta*> input_tensors(const OpCall& call, size_t arity);
// Defined tensors at positions >= arity: the out= arguments, written rather than read.
std::vector<const TensorMeta*> out_arguments(const OpCall& call, size_t arity);
// The tensors of a tensor-list argument (defined ones only).
std::vector<const TensorMeta*> tensor_list(const OpCall& call, size_t i);
// Sum of bytes of every defined tensor among the first `arity` inputs, each read once.
double all_input_bytes(const OpCall& call, size_t arity);
// Value of a Scalar/int/float argument, nullopt when absent or not numeric.
std::optional<double> scalar_at(const OpCall& call, size_t i);
bool flag_at(const OpCall& call, size_t i, bool fallback);
// at::Reduction, the reduction argument of the loss operators.
enum class LossReduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };
// The reduction argument at position i; Mean (ATen's default) when absent.
LossReduction reduction_at(const OpCall& call, size_t i);
bool is_kind(const OpCall& call, size_t i, ArgMeta::Kind kind);
// An optional ScalarType argument (it arrives as an int), or `fallback` when absent.
c10::ScalarType dtype_at(const OpCall& call, size_t i, c10::ScalarType fallback);
// A bool[3] output_mask. The observer's metadata keeps no bool lists (they arrive as a list
// of undefined tensors), so: an int list of 0/1 when given, else which of the first three
// recorded outputs are defined, else all true.
std::vector<bool> output_mask(const OpCall& call, size_t i);

// ---- Outputs ----
bool has_outputs(const OpCall& call);
double recorded_output_bytes(const OpCall& call);
// Recorded output bytes when the observer captured outputs, else the computed estimate.
double written_bytes(const OpCall& call, double computed);
// As written_bytes, but an out= argument (at positions >= arity) stands in for unrecorded
// outputs before the estimate is used.
double written_bytes(const OpCall& call, double computed, size_t arity);
// The first recorded output when defined (its shape beats any recomputation).
const TensorMeta* recorded_output(const OpCall& call, size_t i = 0);

// ---- Dtypes ----
// ATen's result_type for an elementwise op over the inputs: dimensioned tensors first,
// zero-dim tensors and then Python-like scalars only when of a higher category.
c10::ScalarType result_dtype(const OpCall& call);
bool is_floating(c10::ScalarType dtype);
bool is_in_place(const OpCall& call);  // "aten::add_": trailing underscore

}  // namespace plumb::profile::cost
