// Calibration trace and the int8 data-flow plan (see int8_dataflow.h).
#include "plumb/run/int8_dataflow.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "plumb/core/errors.h"

namespace plumb::run {

FlowOp classify_flow_op(const std::string& name) {
  static const std::map<std::string, FlowOp> known = {
      {"aten::conv2d", FlowOp::kConv},
      {"aten::batch_norm", FlowOp::kBatchNorm},
      {"aten::relu", FlowOp::kRelu},
      {"aten::relu_", FlowOp::kRelu},
      {"aten::max_pool2d", FlowOp::kPassThrough},
      {"aten::avg_pool2d", FlowOp::kPassThrough},
      {"aten::adaptive_avg_pool2d", FlowOp::kPassThrough},
      {"aten::flatten", FlowOp::kPassThrough},
      {"aten::view", FlowOp::kPassThrough},
      {"aten::reshape", FlowOp::kPassThrough},
      {"aten::dropout", FlowOp::kPassThrough},  // in inference only (see on_start)
      {"aten::add", FlowOp::kAdd},
      {"aten::add_", FlowOp::kAdd},
      {"aten::linear", FlowOp::kLinear},
      {"aten::matmul", FlowOp::kLinear},
      {"aten::addmm", FlowOp::kLinear},
  };
  const auto it = known.find(name);
  return it == known.end() ? FlowOp::kOther : it->second;
}

namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

}  // namespace

struct FlowTracer::State {
  std::vector<TracedCall> calls;
  // Producer call of every tensor a traced call returned. The weak reference keeps the
  // TensorImpl's memory (not its storage) from being reused, so an address never names two
  // tensors while the trace lives.
  std::unordered_map<const c10::TensorImpl*, std::pair<WeakImpl, int>> producer;
  int depth = 0;       // nesting of operator calls: only the outermost are traced
  bool busy = false;   // measuring a range: those operators are ours, not the model's
  int open_call = -1;  // the outermost call in progress
};

namespace {

thread_local FlowTracer::State* t_state = nullptr;

void for_each_tensor(const c10::IValue& value, const std::function<void(const at::Tensor&)>& f) {
  if (value.isTensor()) {
    f(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) f(t);
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) for_each_tensor(item, f);
  }
}

const void* weight_data(const c10::IValue& value) {
  return value.isTensor() && value.toTensor().defined() ? value.toTensor().data_ptr() : nullptr;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  FlowTracer::State* s = t_state;
  if (s == nullptr || s->busy || s->depth++ > 0) return nullptr;
  TracedCall call;
  call.name = fn.name();
  call.op = classify_flow_op(call.name);
  const auto inputs = fn.inputs();
  for (const c10::IValue& v : inputs) {
    if (!v.isTensor() && !v.isTensorList() && !v.isList()) continue;
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      const auto it = s->producer.find(t.unsafeGetTensorImpl());
      call.producers.push_back(it == s->producer.end() ? -1 : it->second.second);
    });
  }
  switch (call.op) {
    case FlowOp::kConv:
    case FlowOp::kLinear:
      // conv2d(input, weight, ...), linear(input, weight, ...), matmul(input, weight.t()),
      // addmm(bias, input, weight.t())
      call.data_arg = call.name == "aten::addmm" ? 1 : 0;
      if (inputs.size() > static_cast<size_t>(call.data_arg + 1))
        call.weight = weight_data(inputs[call.data_arg + 1]);
      break;
    case FlowOp::kBatchNorm:
      // batch_norm(input, weight?, bias?, mean?, var?, training, momentum, eps, cudnn)
      if (inputs.size() >= 9) {
        call.weight = weight_data(inputs[1]);
        call.plain = !inputs[5].toBool() && inputs[3].isTensor() && inputs[4].isTensor();
        for (int i = 1; i <= 4; ++i)
          call.norm.push_back(inputs[i].isTensor() ? inputs[i].toTensor() : at::Tensor());
        call.eps = inputs[7].toDouble();
      } else {
        call.plain = false;
      }
      break;
    case FlowOp::kPassThrough:
      // dropout(input, p, train): returns its input unchanged in inference; in training it
      // has no int8 kernel.
      if (call.name == "aten::dropout" && (inputs.size() < 3 || inputs[2].toBool()))
        call.op = FlowOp::kOther;
      break;
    case FlowOp::kAdd:
      // add(self, other, alpha): both tensors, alpha 1
      call.plain = inputs.size() == 3 && inputs[0].isTensor() && inputs[1].isTensor() &&
                   inputs[2].isScalar() && inputs[2].toScalar().toDouble() == 1.0;
      // An in-place int8 add rewrites all of self's codes: self must be one dense block.
      if (call.plain && call.name == "aten::add_")
        call.plain = inputs[0].toTensor().is_non_overlapping_and_dense();
      break;
    default:
      break;
  }
  s->open_call = static_cast<int>(s->calls.size());
  s->calls.push_back(std::move(call));
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  FlowTracer::State* s = t_state;
  if (s == nullptr || s->busy || --s->depth > 0 || s->open_call < 0) return;
  const int index = s->open_call;
  s->open_call = -1;
  TracedCall& call = s->calls[index];
  bool first = true;
  for (const c10::IValue& v : fn.outputs()) {
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      s->producer.insert_or_assign(t.unsafeGetTensorImpl(),
                                   std::make_pair(WeakImpl(t.getIntrusivePtr()), index));
      const bool ranged = call.op == FlowOp::kConv || call.op == FlowOp::kBatchNorm ||
                          call.op == FlowOp::kRelu || call.op == FlowOp::kAdd;
      if (first && ranged && t.is_floating_point() && t.numel() > 0) {
        s->busy = true;
        const auto [lo, hi] = at::aminmax(t);
        call.lo = lo.item<float>();
        call.hi = hi.item<float>();
        s->busy = false;
      }
      first = false;
    });
  }
}

}  // namespace

FlowTracer::FlowTracer() : state_(std::make_unique<State>()) {
  PLUMB_ASSERT(t_state == nullptr, "only one FlowTracer per thread");
  t_state = state_.get();
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                           .needsInputs(true)
                                           .needsOutputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

FlowTracer::~FlowTracer() {
  at::removeCallback(handle_);
  t_state = nullptr;
}

const std::vector<TracedCall>& FlowTracer::calls() const {
  return state_->calls;
}

namespace {

struct Use {
  int call;
  int arg;  // position among the call's tensor arguments
};

// The planner's working state over one trace.
class FlowPlanner {
 public:
  FlowPlanner(const std::vector<TracedCall>& calls,
              const std::function<bool(const void*, FlowOp)>& quantizable)
      : calls_(calls),
        quantizable_(quantizable),
        uses_(calls.size()),
        owner_(calls.size(), -1),
        last_(calls.size()),
        int8_(calls.size(), false) {
    for (size_t k = 0; k < calls_.size(); ++k)
      for (size_t a = 0; a < calls_[k].producers.size(); ++a)
        if (calls_[k].producers[a] >= 0)
          uses_[calls_[k].producers[a]].push_back({static_cast<int>(k), static_cast<int>(a)});
    for (size_t i = 0; i < calls_.size(); ++i) last_[i] = static_cast<int>(i);
  }

  Int8FlowPlan plan() {
    absorb();
    key_adds();
    assume_int8();
    for (;;) {
      propagate();
      if (!agree_per_layer()) break;
    }
    return result();
  }

 private:
  bool is_conv(int i) const {
    return calls_[i].op == FlowOp::kConv && quantizable_(calls_[i].weight, FlowOp::kConv);
  }
  // The one use of call i's output, if it has exactly one and it is `op` reading argument 0.
  int sole_use(int i, FlowOp op) const {
    if (uses_[i].size() != 1) return -1;
    const Use u = uses_[i][0];
    return calls_[u.call].op == op && u.arg == 0 && calls_[u.call].plain ? u.call : -1;
  }

  // A convolution absorbs the batch norm it alone feeds and the ReLU after either; an add the
  // ReLU it alone feeds. Per layer, every call must absorb the same, or none does.
  void absorb() {
    std::map<const void*, std::set<std::pair<const void*, bool>>> shapes;
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (!is_conv(static_cast<int>(c))) continue;
      int at = static_cast<int>(c);
      const void* norm = nullptr;
      if (int b = sole_use(at, FlowOp::kBatchNorm); b >= 0) {
        owner_[b] = static_cast<int>(c);
        norm = calls_[b].weight;
        at = b;
      }
      const int r = sole_use(at, FlowOp::kRelu);
      if (r >= 0) {
        owner_[r] = static_cast<int>(c);
        at = r;
      }
      last_[c] = at;
      shapes[calls_[c].weight].insert({norm, r >= 0});
    }
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (!is_conv(static_cast<int>(c)) || shapes[calls_[c].weight].size() == 1) continue;
      for (size_t i = 0; i < owner_.size(); ++i)
        if (owner_[i] == static_cast<int>(c)) owner_[i] = -1;
      last_[c] = static_cast<int>(c);
    }
  }

  // The convolution call whose output call i's output is (i itself, or what it absorbed); -1
  // for anything else, an add's fused ReLU included.
  int conv_of(int i) const {
    const int c = is_conv(i) ? i : owner_[i];
    return c >= 0 && is_conv(c) && last_[c] == i ? c : -1;
  }

  // An add is keyed by its first operand's convolution layer: at run time that tensor is the
  // one the convolution returned, which is how the add finds its output range.
  void key_adds() {
    std::map<const void*, std::set<bool>> relu_per_key;
    for (size_t a = 0; a < calls_.size(); ++a) {
      const TracedCall& add = calls_[a];
      if (add.op != FlowOp::kAdd || !add.plain || add.producers.size() != 2) continue;
      const int c = add.producers[0] >= 0 ? conv_of(add.producers[0]) : -1;
      if (c < 0) continue;
      key_[a] = calls_[c].weight;
      if (const int r = sole_use(static_cast<int>(a), FlowOp::kRelu); r >= 0) {
        owner_[r] = static_cast<int>(a);
        last_[a] = r;
      }
      relu_per_key[key_[a]].insert(last_[a] != static_cast<int>(a));
    }
    for (auto it = key_.begin(); it != key_.end();) {
      if (relu_per_key[it->second].size() == 1) {
        ++it;
        continue;
      }
      for (size_t i = 0; i < owner_.size(); ++i)
        if (owner_[i] == it->first) owner_[i] = -1;
      last_[it->first] = it->first;
      it = key_.erase(it);
    }
  }

  // Groups: a convolution or keyed add with what it absorbed; every other call is a group of
  // one. A call is visible when no group absorbed it; the group's last call makes its output.
  bool visible(int i) const { return owner_[i] < 0; }
  int head_of_last(int i) const {  // the group whose last call is i, or -1
    if (owner_[i] >= 0) return last_[owner_[i]] == i ? owner_[i] : -1;
    return last_[i] == i ? i : -1;
  }

  bool accepts(const Use& u) const {
    const TracedCall& k = calls_[u.call];
    switch (k.op) {
      case FlowOp::kConv:
        return u.arg == 0 && is_conv(u.call);
      case FlowOp::kLinear:
        return u.arg == k.data_arg && quantizable_(k.weight, FlowOp::kLinear);
      case FlowOp::kRelu:
      case FlowOp::kPassThrough:
        return u.arg == 0 && visible(u.call) && int8_[u.call];
      case FlowOp::kAdd:
        return (u.arg == 0 || u.arg == 1) && key_.count(u.call) > 0 && int8_[last_[u.call]];
      default:
        return false;
    }
  }

  // The start: every output that could be int8 is (a quantized convolution's, a keyed add's,
  // a ReLU's or pass-through's that no group absorbed).
  void assume_int8() {
    for (size_t i = 0; i < calls_.size(); ++i) {
      const int h = head_of_last(static_cast<int>(i));
      if (h < 0) continue;
      const FlowOp op = calls_[h].op;
      int8_[i] = (op == FlowOp::kConv && is_conv(h)) || (op == FlowOp::kAdd && key_.count(h)) ||
                 (h == static_cast<int>(i) && (op == FlowOp::kRelu || op == FlowOp::kPassThrough));
    }
  }

  // Clears what cannot be int8, until nothing changes: an output read by an operator without
  // an int8 path, an output nothing reads (it leaves the traced calls), a pass-through or add
  // whose inputs are not all int8.
  void propagate() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < calls_.size(); ++i) {
        if (!int8_[i]) continue;
        const int h = head_of_last(static_cast<int>(i));
        bool ok = !uses_[i].empty();
        const TracedCall& head = calls_[h];
        if (head.op == FlowOp::kRelu || head.op == FlowOp::kPassThrough) {
          const int p = head.producers.empty() ? -1 : head.producers[0];
          ok = ok && p >= 0 && int8_[p];
        } else if (head.op == FlowOp::kAdd) {
          ok = ok && head.producers[0] >= 0 && head.producers[1] >= 0 && int8_[head.producers[0]] &&
               int8_[head.producers[1]];
        }
        for (const Use& u : uses_[i]) ok = ok && accepts(u);
        if (!ok) {
          int8_[i] = false;
          changed = true;
        }
      }
    }
  }

  // Every call of one convolution layer (and every add keyed to it) must agree, since the
  // kernels decide per layer at run time. Returns true when it cleared any, to propagate again.
  bool agree_per_layer() {
    std::map<const void*, std::set<bool>> conv_out, add_out;
    for (size_t c = 0; c < calls_.size(); ++c)
      if (is_conv(static_cast<int>(c))) conv_out[calls_[c].weight].insert(int8_[last_[c]]);
    for (const auto& [a, key] : key_) add_out[key].insert(int8_[last_[a]]);
    bool cleared = false;
    for (size_t c = 0; c < calls_.size(); ++c)
      if (is_conv(static_cast<int>(c)) && conv_out[calls_[c].weight].size() > 1 &&
          int8_[last_[c]]) {
        int8_[last_[c]] = false;
        cleared = true;
      }
    for (const auto& [a, key] : key_)
      if (add_out[key].size() > 1 && int8_[last_[a]]) {
        int8_[last_[a]] = false;
        cleared = true;
      }
    return cleared;
  }

  static void widen(float& lo, float& hi, const TracedCall& call, bool first) {
    lo = first ? call.lo : std::min(lo, call.lo);
    hi = first ? call.hi : std::max(hi, call.hi);
  }

  // Per layer (its calls agree by now): what it absorbed, whether its output is int8, and the
  // union of its calls' output ranges; per add key likewise, for the int8 adds only.
  Int8FlowPlan result() const {
    Int8FlowPlan plan;
    for (size_t c = 0; c < calls_.size(); ++c) {
      if (!is_conv(static_cast<int>(c))) continue;
      const bool first = plan.convs.count(calls_[c].weight) == 0;
      ConvFlow& flow = plan.convs[calls_[c].weight];
      flow.int8_out = int8_[last_[c]];
      widen(flow.lo, flow.hi, calls_[last_[c]], first);
    }
    for (size_t i = 0; i < calls_.size(); ++i) {  // what each convolution absorbed
      const int c = owner_[i];
      if (c < 0 || !is_conv(c)) continue;
      ConvFlow& flow = plan.convs.at(calls_[c].weight);
      if (calls_[i].op == FlowOp::kBatchNorm) {
        flow.batch_norm = calls_[i].weight;
        flow.batch_norm_call = static_cast<int>(i);
      } else {
        flow.relu = true;
      }
    }
    for (const auto& [a, key] : key_) {
      if (!int8_[last_[a]]) continue;
      const bool first = plan.adds.count(key) == 0;
      AddFlow& flow = plan.adds[key];
      flow.relu = last_[a] != a;
      widen(flow.lo, flow.hi, calls_[last_[a]], first);
    }
    return plan;
  }

  const std::vector<TracedCall>& calls_;
  const std::function<bool(const void*, FlowOp)>& quantizable_;
  std::vector<std::vector<Use>> uses_;
  std::vector<int> owner_;  // the group head (convolution or add) that absorbed a call, or -1
  std::vector<int> last_;   // per group head: the call whose output the group returns
  std::map<int, const void*> key_;  // keyed adds: add call -> its convolution's weight data
  std::vector<bool> int8_;          // per call: its output may be an int8 tensor
};

}  // namespace

Int8FlowPlan plan_int8_flow(const std::vector<TracedCall>& calls,
                            const std::function<bool(const void*, FlowOp)>& quantizable) {
  return FlowPlanner(calls, quantizable).plan();
}

}  // namespace plumb::run
