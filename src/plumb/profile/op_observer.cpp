// Operator observer on at::RecordFunction (see op_observer.h).
#include "plumb/profile/op_observer.h"

#include <chrono>
#include <functional>
#include <mutex>

#include "plumb/core/errors.h"
#include "plumb/core/generation.h"
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
  int record = -1;    // index of this call in the captured graph calls (-1: not capturing)
  int position = -1;  // in the step's recorded or replayed calls (-1: neither)
  bool dead = false;  // opened after a replayed step stopped repeating: ignored
  int phase = -1;     // the generation phase in effect (a Phase), -1: none
  // A generation phase's own scope: it sets `phase` for what runs inside it but is no layer
  // (the layer in effect stays the enclosing one).
  bool phase_scope = false;
};

OpObserver* g_attached = nullptr;  // one observer at a time (asserted in attach)
std::mutex g_mutex;                // callbacks may run on threads the autograd engine spawns
thread_local std::vector<Frame> t_stack;
// The observer whose steps this thread runs (set by begin_step): replay follows one thread.
thread_local const OpObserver* t_stepping = nullptr;
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

// Kernels call small operators inside themselves (allocations, views, a bag-size subtraction,
// sometimes a copy), so "has children" does not mean "its work is counted below". An operator
// is composite when the operators below it account for at least half of its own arithmetic (or,
// for one without arithmetic, half of its data movement), or when it has no cost function and
// something below it did work. Otherwise it is a leaf and carries its own cost; the small
// internal ops are then also counted as what they are (a slight over-count, where treating the
// kernel as composite would drop nearly all of its work).
bool is_composite(const Frame& frame, const OpCost& own) {
  // Autograd nodes are never operators of their own: their work, if any, is in the operators
  // they call, and their self time is autograd bookkeeping.
  if (frame.autograd_node) return true;
  if (!own.costed) return frame.below_flops > 0 || frame.below_bytes > 0;
  if (own.flops > 0) return frame.below_flops >= 0.5 * own.flops;
  return frame.below_flops > 0 ||
         (frame.below_bytes > 0 && frame.below_bytes >= 0.5 * (own.bytes_read + own.bytes_written));
}

// What a finished call hands to the operator around it: the work counted below it, and its own
// unless it is composite.
void pass_work_up(const Frame& frame, const OpCost& own, bool composite, Frame* parent) {
  if (parent == nullptr) return;
  parent->below_flops += frame.below_flops + (composite ? 0 : own.flops);
  parent->below_bytes += frame.below_bytes + (composite ? 0 : own.bytes_read + own.bytes_written);
}

Frame* innermost_op_frame() {
  for (auto it = t_stack.rbegin(); it != t_stack.rend(); ++it)
    if (!it->user_scope) return &*it;
  return nullptr;
}

// Position of the innermost open frame in the step's calls: a call's place in the nesting.
int enclosing_position() {
  return t_stack.empty() ? -1 : t_stack.back().position;
}

// A replayed step: the call at this position must be the recorded one (same name, same
// enclosing call, scope or not); it then takes the recorded layer and group. Anything else ends
// the replay: this frame and all later ones are dead, and end_step drops the step.
void replay_start(const at::RecordFunction& fn, const OpObserver& obs, OpObserver::Replay& replay) {
  Frame frame;
  frame.dead = true;
  if (t_stepping != &obs || replay.failed.load(std::memory_order_relaxed)) {
    replay.failed = true;
    t_stack.push_back(frame);
    return;
  }
  const size_t position = replay.next++;
  const OpObserver::RecordedCall* recorded =
      position < replay.calls.size() ? &replay.calls[position] : nullptr;
  const char* name = fn.name();
  if (recorded == nullptr || recorded->parent != enclosing_position() ||
      (recorded->totals == nullptr) != (fn.scope() == at::RecordScope::USER_SCOPE) ||
      (name != recorded->name && hash_text(name, 0) != recorded->name_hash)) {
    replay.failed = true;
    t_stack.push_back(frame);
    return;
  }
  frame.dead = false;
  frame.position = static_cast<int>(position);
  frame.user_scope = recorded->totals == nullptr;
  frame.layer = recorded->layer;
  frame.phase = recorded->phase;
  frame.phase_scope = recorded->phase_scope;
  frame.backward = recorded->backward;
  frame.autograd_node = recorded->autograd_node;
  frame.totals = recorded->totals;
  frame.start_ns = steady_now_ns();
  t_stack.push_back(frame);
}

// Recorded in a boxing step that replay may follow (call with g_mutex held).
void record_call(OpObserver& obs, Frame& frame, const char* name, at::RecordScope fn_scope) {
  auto& replay = obs.replay();
  if (!replay.recording) return;
  if (t_stepping != &obs) {
    replay.refused = true;  // calls on two threads interleave: positions would not repeat
    return;
  }
  OpObserver::RecordedCall call;
  // Only a dispatched operator's name is its schema's own string, alive as long as the operator;
  // an autograd node's or a scope's is rebuilt per call, and its address may come back holding
  // another name.
  call.name = fn_scope == at::RecordScope::FUNCTION ? name : nullptr;
  call.name_hash = hash_text(name, 0);
  call.parent = enclosing_position();
  call.layer = frame.layer;
  call.phase = frame.phase;
  call.phase_scope = frame.phase_scope;
  call.totals = frame.totals;
  call.backward = frame.backward;
  call.autograd_node = frame.autograd_node;
  frame.position = static_cast<int>(replay.calls.size());
  replay.calls.push_back(call);
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  OpObserver* obs = g_attached;
  if (obs == nullptr || t_in_callback) return nullptr;
  CallbackGuard guard;
  if (obs->replay().replaying) {
    replay_start(fn, *obs, obs->replay());
    return nullptr;
  }
  Frame frame;
  const Frame* parent = t_stack.empty() ? nullptr : &t_stack.back();
  frame.layer = parent != nullptr ? parent->layer : 0;
  frame.backward = parent != nullptr && parent->backward;
  frame.phase = parent != nullptr ? parent->phase : -1;
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    frame.user_scope = true;
    const std::optional<Phase> phase = phase_of_scope(fn.name());
    frame.phase_scope = phase.has_value();
    if (phase) frame.phase = static_cast<int>(*phase);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (!phase) frame.layer = obs->intern_layer(fn.name());
      record_call(*obs, frame, fn.name(), fn.scope());
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
  key = hash_mix(key, static_cast<uint64_t>(frame.phase + 2));
  key = hash_inputs(fn.inputs(), key);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& totals = obs->table()[key];
    // The inputs are only readable now (the dispatcher frees its boxed copy before the
    // operator ends), so the first call of a group is described here.
    if (totals.call.name.empty()) {
      static const std::vector<c10::IValue> kNoOutputs;
      totals.call = describe_call(fn.name(), fn.inputs(), kNoOutputs);
      totals.key = {totals.call.name,       obs->layer_name(frame.layer),
                    signature(totals.call), frame.root_name,
                    frame.backward,         frame.phase};
      if (output_shape_depends_on_values(fn.name())) obs->replay().refused = true;
    }
    frame.totals = &totals;
    record_call(*obs, frame, fn.name(), fn.scope());
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
  if (frame.dead) return;
  if (frame.user_scope) {
    if (frame.phase_scope || obs->recording_events()) {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (frame.phase_scope) obs->note_phase_call(frame.phase, end - frame.start_ns);
      if (obs->recording_events()) {
        // A phase scope shows in a trace under its own name, like a layer.
        const int shown =
            frame.phase_scope
                ? obs->intern_layer(plumb::phase_scope(static_cast<Phase>(frame.phase)))
                : frame.layer;
        obs->events().push_back(
            {nullptr, shown, frame.start_ns, end - frame.start_ns, thread_index()});
      }
    }
    return;
  }
  const int64_t inclusive = end - frame.start_ns;
  Frame* parent = innermost_op_frame();
  if (parent != nullptr) parent->child_ns += inclusive;
  auto& replay = obs->replay();
  if (replay.replaying) {
    // The group's cost is known (its first call was in the recorded step): no lock, no
    // arguments; end_step adds the step's times to the groups if the whole step repeated.
    const OpCost& own = frame.totals->cost;
    const bool composite = is_composite(frame, own);
    replay.step[static_cast<size_t>(frame.position)] = {inclusive - frame.child_ns, inclusive,
                                                        composite, true};
    if (obs->recording_events()) {
      std::lock_guard<std::mutex> lock(g_mutex);
      obs->events().push_back(
          {frame.totals, frame.layer, frame.start_ns, inclusive, thread_index()});
    }
    pass_work_up(frame, own, composite, parent);
    return;
  }
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
  const OpCost& own = totals.cost;
  const bool composite = is_composite(frame, own);
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
  pass_work_up(frame, own, composite, parent);
}

}  // namespace

void OpObserver::note_phase_call(int phase, int64_t ns) {
  if (phase < 0) return;
  if (phase_step_.size() <= static_cast<size_t>(phase))
    phase_step_.resize(static_cast<size_t>(phase) + 1);
  ++phase_step_[static_cast<size_t>(phase)].calls;
  phase_step_[static_cast<size_t>(phase)].ns += ns;
}

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

void OpObserver::register_callback(bool inputs, bool outputs) {
  if (handle_ != 0) at::removeCallback(handle_);
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_start, &on_end)
          .needsInputs(inputs)
          .needsOutputs(outputs)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
  inputs_requested_ = inputs;
  outputs_requested_ = outputs;
}

namespace {
// Forgets the recorded calls (they point into the table); a refusal survives unless the table
// itself is cleared, since the groups that caused it are still there.
void reset_replay(OpObserver::Replay& replay, bool keep_refusal) {
  replay.recording = replay.replaying = replay.ready = replay.given_up = false;
  if (!keep_refusal) replay.refused = false;
  replay.calls.clear();
  replay.step.clear();
  replay.next = 0;
  replay.failed = false;
}
}  // namespace

void OpObserver::attach() {
  PLUMB_ASSERT(g_attached == nullptr, "an OpObserver is already attached");
  g_attached = this;
  t_stack.clear();
  outputs_missed_ = false;
  first_step_ = true;
  step_open_ = false;
  reset_replay(replay_, true);
  register_callback(true, true);
}

void OpObserver::begin_step() {
  PLUMB_ASSERT(handle_ != 0, "begin_step on a detached OpObserver");
  if (step_open_) end_step();
  t_stepping = this;
  bool inputs, outputs;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    layer_of_sequence_.clear();
    Replay& r = replay_;
    const bool may_replay = replay_allowed_ && !r.refused && !r.given_up;
    // A step that captures the graph needs every tensor; one after a missed group needs outputs.
    r.replaying = may_replay && r.ready && !capturing_ && !outputs_missed_;
    r.recording = may_replay && !r.ready;
    if (r.recording) r.calls.clear();
    if (r.replaying) {
      r.step.assign(r.calls.size(), ReplayedCall{});
      r.next = 0;
      r.failed = false;
    }
    inputs = !r.replaying;
    // The first step after attaching meets every group for the first time.
    outputs = inputs && (first_step_ || capturing_ || outputs_missed_);
    outputs_missed_ = false;
    first_step_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    phase_step_.clear();
  }
  step_open_ = true;
  if (inputs != inputs_requested_ || outputs != outputs_requested_)
    register_callback(inputs, outputs);
}

bool OpObserver::end_step() {
  if (!step_open_) return true;
  step_open_ = false;
  std::lock_guard<std::mutex> lock(g_mutex);
  Replay& r = replay_;
  // The step's phase times count with its operators, or not at all.
  const auto keep_phases = [this] {
    if (phase_totals_.size() < phase_step_.size()) phase_totals_.resize(phase_step_.size());
    for (size_t i = 0; i < phase_step_.size(); ++i) {
      phase_totals_[i].calls += phase_step_[i].calls;
      phase_totals_[i].ns += phase_step_[i].ns;
    }
    phase_step_.clear();
  };
  if (r.recording) {
    r.recording = false;
    r.ready = !r.refused && !r.calls.empty();
    keep_phases();
    return true;
  }
  if (!r.replaying) return keep_phases(), true;
  r.replaying = false;
  bool repeated = !r.failed && r.next == r.calls.size();
  for (size_t i = 0; repeated && i < r.calls.size(); ++i)
    repeated = r.calls[i].totals == nullptr || r.step[i].seen;
  if (!repeated) {
    // Which calls of this step belong to which group is unknown past the first difference:
    // keep nothing of it, and box from now on.
    r.given_up = true;
    r.ready = false;
    ++dropped_steps_;
    phase_step_.clear();
    return false;
  }
  for (size_t i = 0; i < r.calls.size(); ++i) {
    Totals* totals = r.calls[i].totals;
    if (totals == nullptr) continue;
    const ReplayedCall& call = r.step[i];
    ++totals->calls;
    totals->self_ns += call.self_ns;
    totals->inclusive_ns += call.inclusive_ns;
    totals->composite = totals->composite || call.composite;
  }
  ++replayed_steps_;
  keep_phases();
  return true;
}

void OpObserver::detach() {
  if (handle_ == 0) return;
  end_step();
  at::removeCallback(handle_);
  handle_ = 0;
  g_attached = nullptr;
  t_stack.clear();
  if (t_stepping == this) t_stepping = nullptr;
}

void OpObserver::clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  table_.clear();
  layer_of_sequence_.clear();
  phase_totals_.clear();
  phase_step_.clear();
  reset_replay(replay_, false);
}

void OpObserver::discard_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& entry : table_) {
    Totals& t = entry.second;
    t.calls = 0;
    t.self_ns = t.inclusive_ns = 0;
  }
  phase_totals_.clear();
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
    if (t.calls == 0) continue;  // met only in a step whose counts were discarded
    const Key& key = t.key;
    OpStat s;
    s.name = key.name;
    s.scope = key.backward     ? "backward"
              : key.phase >= 0 ? plumb::phase_name(static_cast<Phase>(key.phase))
                               : "forward";
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

std::vector<OpStat> OpObserver::phase_rows(int steps) const {
  PLUMB_ASSERT(steps > 0, "phase rows over zero steps");
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<int64_t> op_ns(phase_totals_.size(), 0);
  for (const auto& entry : table_) {
    const Totals& t = entry.second;
    if (t.key.phase >= 0 && static_cast<size_t>(t.key.phase) < op_ns.size())
      op_ns[static_cast<size_t>(t.key.phase)] += t.self_ns;
  }
  const double per = 1.0 / steps;
  std::vector<OpStat> out;
  for (size_t i = 0; i < phase_totals_.size(); ++i) {
    if (phase_totals_[i].calls == 0) continue;
    const auto phase = static_cast<Phase>(i);
    OpStat s;
    s.name = plumb::phase_scope(phase);
    s.scope = plumb::phase_name(phase);
    s.kind = kPhaseRow;
    s.calls = static_cast<double>(phase_totals_[i].calls) * per;
    s.inclusive_s = 1e-9 * static_cast<double>(phase_totals_[i].ns) * per;
    s.self_s = 1e-9 * static_cast<double>(phase_totals_[i].ns - op_ns[i]) * per;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace plumb::profile
