// Operator observer on at::RecordFunction (see op_observer.h).
#include "plumb/profile/op_observer.h"

#include <chrono>
#include <functional>
#include <mutex>

#include "plumb/core/errors.h"
#include "plumb/profile/autograd_record.h"
#include "plumb/profile/cost_model.h"
#include "plumb/profile/op_category.h"
#include "plumb/run/step_loop.h"

namespace plumb::profile {
namespace {

// One open RecordFunction on this thread: an operator / autograd node, or a layer scope.
// Kept small and allocation-free: it is pushed and popped for every operator call.
struct Frame {
  bool user_scope = false;
  bool backward = false;       // inside an autograd node
  bool autograd_node = false;  // the node itself (or the engine's wrapper around it)
  double below_flops = 0;      // FLOPs counted by the operators below this one ...
  double below_bytes = 0;      // ... and bytes they moved (by the cost model)
  int layer = 0;               // interned layer in effect inside this frame
  int64_t start_ns = 0;
  int64_t child_ns = 0;                  // inclusive time of direct child operators
  OpObserver::Totals* totals = nullptr;  // this call's group (map nodes never move)
  uint64_t root_hash = 0;
  // The outermost operator's name. Its RecordFunction is still open while any frame below
  // it runs, so the pointer stays valid for as long as this frame needs it.
  const char* root_name = nullptr;
  int record = -1;  // index of this call in the captured graph calls (-1: not capturing)
};

OpObserver* g_attached = nullptr;  // one observer at a time (asserted in attach)
std::mutex g_mutex;                // callbacks may run on threads the autograd engine spawns
thread_local std::vector<Frame> t_stack;
thread_local int t_thread_index = -1;  // for trace events; assigned on the first one
int g_threads_seen = 0;

// The calling thread's trace index (call with g_mutex held).
int thread_index() {
  if (t_thread_index < 0) t_thread_index = g_threads_seen++;
  return t_thread_index;
}
// Set while a callback runs: anything it dispatches itself (metadata queries) must not be
// observed, or the observer would recurse into itself.
thread_local bool t_in_callback = false;

class CallbackGuard {
 public:
  CallbackGuard() { t_in_callback = true; }
  ~CallbackGuard() { t_in_callback = false; }
  CallbackGuard(const CallbackGuard&) = delete;
  CallbackGuard& operator=(const CallbackGuard&) = delete;
};

// Identity of every tensor in an operator's inputs or outputs (lists included), for graph
// capture. Storage, not tensor, identity: a view or an in-place result shares its base's storage,
// so it shares its producer too.
void append_tensor_ids(const c10::IValue& v, std::vector<OpObserver::TensorId>& out) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return;
    const auto* impl = t.unsafeGetTensorImpl();
    // Sparse and oneDNN-opaque tensors have no storage: the tensor itself stands for it.
    const bool has_storage = impl->has_storage() && !t.is_sparse();
    const uintptr_t id = has_storage ? reinterpret_cast<uintptr_t>(impl->storage().data())
                                     : reinterpret_cast<uintptr_t>(impl);
    out.push_back({id == 0 ? reinterpret_cast<uintptr_t>(impl) : id,
                   impl->numel() * static_cast<int64_t>(impl->itemsize())});
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) append_tensor_ids(e, out);
  }
}

Frame* innermost_op_frame() {
  for (auto it = t_stack.rbegin(); it != t_stack.rend(); ++it)
    if (!it->user_scope) return &*it;
  return nullptr;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  OpObserver* obs = g_attached;
  if (obs == nullptr || t_in_callback) return nullptr;
  CallbackGuard guard;
  Frame frame;
  const Frame* parent = t_stack.empty() ? nullptr : &t_stack.back();
  frame.layer = parent != nullptr ? parent->layer : 0;
  frame.backward = parent != nullptr && parent->backward;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    frame.user_scope = true;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      frame.layer = obs->intern_layer(fn.name());
    }
    frame.start_ns = steady_now_ns();
    t_stack.push_back(frame);
    return nullptr;
  }
  if (is_autograd_record(fn)) {
    frame.backward = true;
    frame.autograd_node = true;
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& layers = obs->layer_of_sequence();
    auto found = layers.find(fn.seqNr());
    if (found != layers.end()) frame.layer = found->second;
  } else if (!frame.backward && fn.seqNr() >= 0 && frame.layer != 0) {
    // The forward op that creates an autograd node: its backward belongs to this layer.
    std::lock_guard<std::mutex> lock(g_mutex);
    obs->layer_of_sequence().emplace(fn.seqNr(), frame.layer);
  }
  const uint64_t name_hash = hash_text(fn.name(), 0);
  const Frame* op_parent = innermost_op_frame();
  frame.root_hash = op_parent != nullptr ? op_parent->root_hash : name_hash;
  frame.root_name = op_parent != nullptr ? op_parent->root_name : fn.name();
  uint64_t key = hash_mix(name_hash, static_cast<uint64_t>(frame.layer));
  key = hash_mix(key, frame.root_hash);
  key = hash_mix(key, frame.backward ? 2 : 1);
  key = hash_inputs(fn.inputs(), key);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& totals = obs->table()[key];
    // The inputs are only readable now (the dispatcher frees its boxed copy before the
    // operator ends), so the first call of a group is described here.
    if (totals.call.name.empty()) {
      static const std::vector<c10::IValue> kNoOutputs;
      totals.call = describe_call(fn.name(), fn.inputs(), kNoOutputs);
      totals.key = {totals.call.name, obs->layer_name(frame.layer), signature(totals.call),
                    frame.root_name, frame.backward};
    }
    frame.totals = &totals;
    if (obs->capturing_graph()) {
      OpObserver::CallRecord record;
      record.totals = &totals;
      record.parent = op_parent != nullptr ? op_parent->record : -1;
      record.autograd_node = frame.autograd_node;
      record.backward = frame.backward;
      record.layer = frame.layer;
      for (const auto& v : fn.inputs()) append_tensor_ids(v, record.inputs);
      frame.record = static_cast<int>(obs->graph_calls().size());
      obs->graph_calls().push_back(std::move(record));
    }
  }
  frame.start_ns = steady_now_ns();  // exclude our own bookkeeping from the op's time
  t_stack.push_back(frame);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  OpObserver* obs = g_attached;
  if (obs == nullptr || t_in_callback || t_stack.empty()) return;
  CallbackGuard guard;
  const int64_t end = steady_now_ns();
  const Frame frame = t_stack.back();
  t_stack.pop_back();
  if (frame.user_scope) {
    if (obs->recording_events()) {
      std::lock_guard<std::mutex> lock(g_mutex);
      obs->events().push_back(
          {nullptr, frame.layer, frame.start_ns, end - frame.start_ns, thread_index()});
    }
    return;
  }
  const int64_t inclusive = end - frame.start_ns;
  Frame* parent = innermost_op_frame();
  if (parent != nullptr) parent->child_ns += inclusive;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& totals = *frame.totals;
  if (!totals.cost_known) {
    if (obs->outputs_requested()) {
      // Outputs, unlike inputs, are readable at the end; the cost needs both.
      for (const auto& out : fn.outputs()) {
        ArgMeta meta = describe_value(out);
        for (auto& t : meta.tensors) totals.call.outputs.push_back(std::move(t));
      }
      totals.cost = cost_of(totals.call);
      totals.cost_known = true;
    } else {
      // Met on a step without outputs: costed from its inputs until a call with outputs comes
      // (next step), so that this call's leaf-or-composite verdict below has a cost to go on.
      totals.cost = cost_of(totals.call);
      obs->note_outputs_missed();
    }
  }
  // Kernels call small operators inside themselves (allocations, views, a bag-size
  // subtraction, sometimes a copy), so "has children" does not mean "its work is counted
  // below". An operator is composite when the operators below it account for at least half
  // of its own arithmetic (or, for one without arithmetic, half of its data movement), or when
  // it has no cost function and something below it did work. Otherwise it is a leaf and carries
  // its own cost; the small internal ops are then also counted as what they are (a slight
  // over-count, where treating the kernel as composite would drop nearly all of its work).
  const OpCost& own = totals.cost;
  const double own_bytes = own.bytes_read + own.bytes_written;
  bool composite;
  if (frame.autograd_node) {
    // Autograd nodes are never operators of their own: their work, if any, is in the operators
    // they call, and their self time is autograd bookkeeping.
    composite = true;
  } else if (!own.costed) {
    composite = frame.below_flops > 0 || frame.below_bytes > 0;
  } else if (own.flops > 0) {
    composite = frame.below_flops >= 0.5 * own.flops;
  } else {
    composite =
        frame.below_flops > 0 || (frame.below_bytes > 0 && frame.below_bytes >= 0.5 * own_bytes);
  }
  totals.composite = totals.composite || composite;
  ++totals.calls;
  if (obs->recording_events())
    obs->events().push_back({&totals, frame.layer, frame.start_ns, inclusive, thread_index()});
  totals.inclusive_ns += inclusive;
  totals.self_ns += inclusive - frame.child_ns;
  if (frame.record >= 0 && obs->capturing_graph()) {
    auto& record = obs->graph_calls()[static_cast<size_t>(frame.record)];
    record.composite = composite;
    record.start_ns = frame.start_ns;
    record.inclusive_ns = inclusive;
    for (const auto& v : fn.outputs()) append_tensor_ids(v, record.outputs);
  }
  if (parent != nullptr) {
    parent->below_flops += frame.below_flops + (composite ? 0 : own.flops);
    parent->below_bytes += frame.below_bytes + (composite ? 0 : own_bytes);
  }
}

}  // namespace

int OpObserver::intern_layer(const char* name) {
  auto found = layer_ids_.find(name);
  if (found != layer_ids_.end()) return found->second;
  const int id = static_cast<int>(layer_names_.size());
  layer_names_.emplace_back(name);
  layer_ids_.emplace(name, id);
  return id;
}

void OpObserver::record_events(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (on) events_.clear();
  recording_ = on;
}

void OpObserver::capture_graph(bool on) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (on) graph_calls_.clear();
  capturing_ = on;
}

OpObserver::OpObserver() = default;

OpObserver::~OpObserver() {
  detach();
}

void OpObserver::register_callback(bool outputs) {
  if (handle_ != 0) at::removeCallback(handle_);
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_start, &on_end)
          .needsInputs(true)
          .needsOutputs(outputs)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
  outputs_requested_ = outputs;
}

void OpObserver::attach() {
  PLUMB_ASSERT(g_attached == nullptr, "an OpObserver is already attached");
  g_attached = this;
  t_stack.clear();
  outputs_missed_ = false;
  first_step_ = true;
  register_callback(true);
}

void OpObserver::begin_step() {
  PLUMB_ASSERT(handle_ != 0, "begin_step on a detached OpObserver");
  bool outputs;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    layer_of_sequence_.clear();
    // The first step after attaching meets every group for the first time.
    outputs = first_step_ || capturing_ || outputs_missed_;
    outputs_missed_ = false;
    first_step_ = false;
  }
  if (outputs != outputs_requested_) register_callback(outputs);
}

void OpObserver::detach() {
  if (handle_ == 0) return;
  at::removeCallback(handle_);
  handle_ = 0;
  g_attached = nullptr;
  t_stack.clear();
}

void OpObserver::clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  table_.clear();
  layer_of_sequence_.clear();
}

double OpObserver::total_self_seconds() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t ns = 0;
  for (const auto& kv : table_) ns += kv.second.self_ns;
  return 1e-9 * static_cast<double>(ns);
}

std::vector<OpStat> OpObserver::aggregate(int steps) const {
  PLUMB_ASSERT(steps > 0, "aggregate over zero steps");
  std::lock_guard<std::mutex> lock(g_mutex);
  const double per = 1.0 / steps;
  std::vector<OpStat> out;
  out.reserve(table_.size());
  for (const auto& entry : table_) {
    const Totals& t = entry.second;
    const Key& key = t.key;
    OpStat s;
    s.name = key.name;
    s.scope = key.backward ? "backward" : "forward";
    s.layer = key.layer;
    // Work done inside the optimizer step is an optimizer update whatever the op is.
    const bool in_optimizer = key.layer == "optimizer" || key.layer.rfind("optimizer.", 0) == 0;
    s.category = category_name(in_optimizer ? OpCategory::kOptimizer : categorize(key.root));
    s.signature = key.signature;
    s.calls = static_cast<double>(t.calls) * per;
    s.self_s = 1e-9 * static_cast<double>(t.self_ns) * per;
    s.inclusive_s = 1e-9 * static_cast<double>(t.inclusive_ns) * per;
    if (t.composite) {
      s.kind = kComposite;
    } else {
      const OpCost& cost = t.cost;
      s.kind = cost.costed ? kCosted : kUncosted;
      const double n = static_cast<double>(t.calls) * per;
      s.flops = cost.flops * n;
      s.macs = cost.macs * n;
      s.bytes_read = cost.bytes_read * n;
      s.bytes_written = cost.bytes_written * n;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace plumb::profile
