// The operator observer (Facebook paper Sec. 3.1; PyTorch's at::RecordFunction callbacks):
// while active on the calling thread, it times every operator and autograd node, computes
// self time (inclusive minus children), remembers the named layer it ran in (LayerScope user
// scopes; backward nodes inherit the layer of the forward op that created them through the
// autograd sequence number), and aggregates calls by (name, scope, layer, signature, root
// operator). In a generative model's inference step an operator's scope is the generation phase
// whose user scope (core/generation.h) encloses it; the phase scopes are not layers, and the
// observer times them too (phase_rows). An operator's category is that of the outermost operator it
// runs inside, so the clamp_min_ a relu_ runs is Activation work and the addmm of an lstm_cell is
// Recurrent work.
//
// Profiling passes are separate from timing passes: the runner never attaches an observer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/record_function.h>

#include "plumb/profile/cost_model.h"
#include "plumb/profile/op_call.h"
#include "plumb/profile/op_profile.h"

namespace plumb::profile {

class OpObserver {
 public:
  OpObserver();
  ~OpObserver();
  OpObserver(const OpObserver&) = delete;
  OpObserver& operator=(const OpObserver&) = delete;

  // Attach to / detach from the current thread. Only one observer may be attached at a time.
  void attach();
  void detach();
  // Call before each observed step (a forward, its backward and the update). Empties the
  // sequence map (a step's backward nodes refer to its own forward operators only, and the map
  // gains an entry per forward operator) and asks LibTorch to box operators' outputs only when
  // they are needed: on the first step, on a graph-capture step, and after a step that met an
  // operator group whose cost needs them (a group reads its outputs once, for its cost; boxing
  // them costs every call).
  //
  // With replay allowed (allow_replay), a step that boxes its inputs also records its calls in
  // order (name, enclosing call, layer, group). Once such a step has ended cleanly, later steps
  // ask LibTorch for no arguments at all: each call is matched by position to the recorded one
  // and takes its group. Boxing every call's inputs into IValues is most of what observing a
  // model of many small operators costs; replay drops it. A step that does not repeat the
  // recorded calls (a different name or nesting at some position, more or fewer calls, a call
  // on another thread) is dropped by end_step, and every later step boxes again.
  void begin_step();
  // Ends the step begun by begin_step. Returns false when a replayed step did not repeat the
  // recorded calls: nothing it observed is kept (step it again). begin_step and detach end a
  // step left open.
  bool end_step();
  // Replay is only sound when a step's shapes repeat: the caller allows it when every batch
  // has the same shapes. The observer itself refuses it when a step calls an operator whose
  // output shape depends on values (nonzero, unique, nms ...), or calls operators on a thread
  // other than the stepping one.
  void allow_replay(bool on) { replay_allowed_ = on; }
  bool inputs_requested() const { return inputs_requested_; }
  int replayed_steps() const { return replayed_steps_; }
  int dropped_steps() const { return dropped_steps_; }
  // Zeroes every group's calls and times but keeps the groups, their costs and the recorded
  // calls: a profile pass observes one step to learn the calls, then times the steps it keeps.
  void discard_counts();
  bool outputs_requested() const { return outputs_requested_; }
  // A group was first met on a step without outputs: its cost waits for the next step.
  void note_outputs_missed() { outputs_missed_ = true; }

  // Aggregated statistics of everything observed, divided by `steps`, with costs from the
  // cost model and categories. Does not clear.
  std::vector<OpStat> aggregate(int steps) const;
  // One row per generation phase that ran in the kept steps (StepProfile::phases), divided by
  // `steps`; empty for a model without phases.
  std::vector<OpStat> phase_rows(int steps) const;
  double total_self_seconds() const;  // all operators, whole observation
  void clear();

  // Implementation detail shared with the RecordFunction callbacks.
  //
  // Calls are grouped by a 64-bit hash of (name, layer, root operator, scope, input
  // metadata) computed straight from the RecordFunction inputs, without allocating: the
  // readable key and the call's full metadata are built once, the first time a hash is seen.
  // That keeps the per-call cost low enough for models made of many small operators.
  struct Key {
    std::string name, layer, signature;
    // The outermost operator of the call chain (what the model code called: "aten::relu_"
    // for the aten::clamp_min_ it runs inside): categories follow it.
    std::string root;
    bool backward = false;
    int phase = -1;  // the enclosing generation phase (a Phase), -1: none
  };
  struct Totals {
    Key key;
    OpCall call;  // one representative call (same signature => same cost)
    OpCost cost;  // of `call`, computed once per key
    bool cost_known = false;
    int64_t calls = 0;
    int64_t self_ns = 0;
    int64_t inclusive_ns = 0;
    bool composite = false;  // some call had work of its kind below it (see op_observer.cpp)
  };
  std::unordered_map<uint64_t, Totals>& table() { return table_; }
  // Layer names are interned: frames and the sequence map carry small integers, not strings.
  int intern_layer(const char* name);
  const std::string& layer_name(int id) const { return layer_names_[static_cast<size_t>(id)]; }
  std::unordered_map<int64_t, int>& layer_of_sequence() { return layer_of_sequence_; }

  // One operator call or layer scope seen while events are recorded (a trace of a step).
  struct Event {
    const Totals* totals = nullptr;  // the call's group (name, signature, cost); null: a layer
    int layer = 0;                   // interned layer in effect (a scope: the scope itself)
    int64_t start_ns = 0, duration_ns = 0;
    int thread = 0;  // small index per thread, in order of first event
  };
  // Starts (clearing what was recorded) or stops recording events.
  void record_events(bool on);
  bool recording_events() const { return recording_; }
  std::vector<Event>& events() { return events_; }
  const std::vector<Event>& events() const { return events_; }

  // Graph capture (profile/op_graph.h): every operator call and autograd node of a step, with
  // the identity of each tensor it reads and writes, in the order the calls start. Only while
  // capturing: off, the hot path pays one branch.
  struct TensorId {
    uintptr_t storage = 0;  // the storage's data (or, without a storage, the tensor itself)
    int64_t bytes = 0;      // of this view: numel x element size
  };
  struct CallRecord {
    const Totals* totals = nullptr;  // name, signature, cost of the call's group
    int parent = -1;                 // the enclosing operator call or autograd node (-1: none)
    bool autograd_node = false;
    bool composite = false;  // this call's own verdict (see op_observer.cpp)
    bool backward = false;
    int layer = 0;
    int64_t start_ns = 0, inclusive_ns = 0;
    std::vector<TensorId> inputs, outputs;
  };
  // Starts (clearing what was captured) or stops capturing.
  void capture_graph(bool on);

  // Replay state, shared with the callbacks. A call or layer scope of the recorded step, at its
  // position in the step (user scopes count too, so that layers replay as well).
  struct RecordedCall {
    const char* name = nullptr;  // a dispatched operator's name (its schema's string), or null
    uint64_t name_hash = 0;      // compared when the pointer differs or is null
    int parent = -1;             // position of the enclosing call or scope (-1: none)
    int layer = 0;
    Totals* totals = nullptr;  // null: a layer scope
    bool backward = false, autograd_node = false;
    int phase = -1;            // in effect inside the call or scope (a Phase), -1: none
    bool phase_scope = false;  // the scope is a generation phase's own
  };
  struct ReplayedCall {
    int64_t self_ns = 0, inclusive_ns = 0;
    bool composite = false;
    bool seen = false;
  };
  struct Replay {
    bool recording = false;  // this boxing step records its calls
    bool replaying = false;  // this step matches calls to the recorded ones
    bool ready = false;      // a recorded step ended cleanly: later steps may replay
    bool refused = false;    // a value-dependent shape or a call off the stepping thread
    bool given_up = false;   // a replayed step did not repeat: box from now on
    std::vector<RecordedCall> calls;
    std::vector<ReplayedCall> step;  // this replayed step's times, by position
    size_t next = 0;                 // position of the next call in this step
    std::atomic<bool> failed{false};
  };
  Replay& replay() { return replay_; }
  // A generation phase's scope closed after `ns` (counted when its step is kept).
  void note_phase_call(int phase, int64_t ns);
  bool capturing_graph() const { return capturing_; }
  std::vector<CallRecord>& graph_calls() { return graph_calls_; }
  const std::vector<CallRecord>& graph_calls() const { return graph_calls_; }

 private:
  std::unordered_map<uint64_t, Totals> table_;
  std::vector<std::string> layer_names_{""};  // id 0: outside any layer
  std::unordered_map<std::string, int> layer_ids_{{"", 0}};
  // Forward op sequence number -> layer id, so backward nodes are attributed to layers.
  std::unordered_map<int64_t, int> layer_of_sequence_;
  bool recording_ = false;
  std::vector<Event> events_;
  bool capturing_ = false;
  std::vector<CallRecord> graph_calls_;
  at::CallbackHandle handle_ = 0;
  bool outputs_requested_ = false;
  bool inputs_requested_ = true;
  bool outputs_missed_ = false;
  bool first_step_ = true;
  bool step_open_ = false;
  bool replay_allowed_ = false;
  int replayed_steps_ = 0, dropped_steps_ = 0;
  Replay replay_;
  // Per phase (a Phase): calls and nanoseconds of its scope in the kept steps, and in the open
  // step (kept or dropped with it).
  struct PhaseTotals {
    int64_t calls = 0, ns = 0;
  };
  std::vector<PhaseTotals> phase_totals_, phase_step_;
  void register_callback(bool inputs, bool outputs);
};

}  // namespace plumb::profile
