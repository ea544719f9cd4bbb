// Outermost operator calls on the device's clock (see device_op_timer.h).
#include "plumb/profile/device_op_timer.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include <ATen/record_function.h>

#include "plumb/core/errors.h"
#include "plumb/profile/autograd_record.h"
#include "plumb/run/step_loop.h"
#include "plumb/run/step_timeline.h"

namespace plumb::profile {
namespace {

// Operators that may copy between host and device memory: only theirs are looked at.
bool may_copy_between_devices(const char* name) {
  return std::strcmp(name, "aten::to") == 0 || std::strcmp(name, "aten::_to_copy") == 0 ||
         std::strcmp(name, "aten::copy_") == 0;
}

// Notes whether the tensors among `values` live on the host or on another device.
template <typename Values>
void note_devices(const Values& values, bool& cpu, bool& other) {
  for (const c10::IValue& v : values) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    (v.toTensor().device().is_cpu() ? cpu : other) = true;
  }
}

// The autograd engine's wrapper of a node is named after it: keep the node's name.
std::string call_name(const at::RecordFunction& fn) {
  static constexpr char kEngineWrapper[] = "autograd::engine::evaluate_function: ";
  const char* name = fn.name();
  if (std::strncmp(name, kEngineWrapper, sizeof(kEngineWrapper) - 1) == 0)
    return name + sizeof(kEngineWrapper) - 1;
  return name;
}

}  // namespace

struct DeviceOpTimer::State {
  // One outermost call while the step runs.
  struct Call {
    std::string name;
    DeviceWork work = DeviceWork::kCompute;
    int64_t host_start_ns = 0, host_end_ns = 0;
    size_t start_mark = 0, end_mark = 0;
  };
  explicit State(c10::Device device) : timeline(device) {}
  run::StepTimeline timeline;
  std::mutex mutex;
  std::vector<Call> calls;
  int64_t origin_ns = 0;
  size_t end_mark = 0;
  bool in_step = false;
  at::CallbackHandle callback = 0;
};

namespace {

std::atomic<DeviceOpTimer::State*> g_timer{nullptr};

// Per thread: how deep in calls it is, and which call of the step its outermost one is.
struct ThreadCalls {
  int depth = 0;
  size_t open = 0;
  bool counted = false;  // the outermost call is one of the step's
};
thread_local ThreadCalls t_calls;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  ThreadCalls& t = t_calls;
  if (t.depth++ > 0) return nullptr;
  t.counted = false;
  DeviceOpTimer::State* s = g_timer.load(std::memory_order_acquire);
  if (s == nullptr || !s->in_step) return nullptr;
  DeviceOpTimer::State::Call c;
  c.name = call_name(fn);
  c.work = device_work_of(c.name, false);  // a copy between devices is told at its end
  c.host_start_ns = steady_now_ns();
  c.start_mark = s->timeline.mark();
  std::lock_guard<std::mutex> lock(s->mutex);
  t.open = s->calls.size();
  t.counted = true;
  s->calls.push_back(std::move(c));
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  ThreadCalls& t = t_calls;
  if (t.depth == 0) return;  // opened before the callback was installed
  if (--t.depth > 0 || !t.counted) return;
  t.counted = false;
  DeviceOpTimer::State* s = g_timer.load(std::memory_order_acquire);
  if (s == nullptr) return;
  const size_t end_mark = s->timeline.mark();
  const int64_t end_ns = steady_now_ns();
  bool transfer = false;
  if (may_copy_between_devices(fn.name())) {
    // The copy's destination is its output (aten::to, aten::_to_copy) or its first input
    // (aten::copy_): either side on another device makes it a transfer.
    bool cpu = false, other = false;
    note_devices(fn.outputs(), cpu, other);
    note_devices(fn.inputs(), cpu, other);
    transfer = cpu && other;
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  if (t.open >= s->calls.size()) return;  // the step was restarted meanwhile
  DeviceOpTimer::State::Call& c = s->calls[t.open];
  c.end_mark = end_mark;
  c.host_end_ns = end_ns;
  if (transfer) c.work = DeviceWork::kTransfer;
}

}  // namespace

DeviceOpTimer::DeviceOpTimer(c10::Device device) : state_(std::make_shared<State>(device)) {
  State* expected = nullptr;
  PLUMB_ASSERT(g_timer.compare_exchange_strong(expected, state_.get()),
               "a DeviceOpTimer is already installed");
  // Inputs and outputs are boxed for every call: the copy operators need them to tell a
  // transfer from a copy within one device, and a callback cannot ask for them per operator.
  state_->callback = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_start, &on_end)
          .needsInputs(true)
          .needsOutputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

DeviceOpTimer::~DeviceOpTimer() {
  at::removeCallback(state_->callback);
  g_timer.store(nullptr, std::memory_order_release);
}

void DeviceOpTimer::begin_step() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.calls.clear();
    s.in_step = true;
  }
  s.timeline.start();
  s.origin_ns = steady_now_ns();
}

void DeviceOpTimer::end_step() {
  State& s = *state_;
  s.end_mark = s.timeline.mark();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.in_step = false;
}

std::vector<DeviceOpInterval> DeviceOpTimer::intervals() {
  State& s = *state_;
  std::vector<State::Call> calls;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    calls = s.calls;
  }
  std::vector<DeviceOpInterval> out;
  out.reserve(calls.size());
  for (const State::Call& c : calls) {
    if (c.host_end_ns == 0) continue;  // still open when the step ended
    DeviceOpInterval i;
    i.name = c.name;
    i.work = c.work;
    i.host_start_s = static_cast<double>(c.host_start_ns - s.origin_ns) / 1e9;
    i.host_end_s = static_cast<double>(c.host_end_ns - s.origin_ns) / 1e9;
    i.device_start_s = s.timeline.seconds(c.start_mark);
    i.device_end_s = s.timeline.seconds(c.end_mark);
    out.push_back(std::move(i));
  }
  return out;
}

double DeviceOpTimer::step_seconds() {
  return state_->timeline.seconds(state_->end_mark);
}

}  // namespace plumb::profile
