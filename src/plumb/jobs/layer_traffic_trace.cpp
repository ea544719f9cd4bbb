// In-process tracing of per-layer traffic (see layer_traffic_trace.h).
#include "plumb/jobs/layer_traffic_trace.h"

#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/core/precision.h"
#include "plumb/profile/op_observer.h"

namespace plumb::jobs {
namespace {

// Which layer reads which parameter, by tensor identity: while attached, every operator call's
// tensor inputs are looked up among the parameters' data, and a parameter is given to the
// innermost layer scope of the first call that reads it. Layer labels need not be module paths
// (the detection models label their layers as torchvision does, "backbone.layer1.0.conv1",
// while their modules are registered as "layer1.0.conv1").
class ParameterReaders {
 public:
  explicit ParameterReaders(torch::nn::Module& module) {
    for (const auto& p : module.named_parameters(/*recurse=*/true))
      names_.emplace(p.value().data_ptr(), p.key());
    active_ = this;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&on_start, &on_end)
            .needsInputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  }
  ~ParameterReaders() {
    at::removeCallback(handle_);
    active_ = nullptr;
  }
  ParameterReaders(const ParameterReaders&) = delete;
  ParameterReaders& operator=(const ParameterReaders&) = delete;

  // Parameter name -> the layer label that first read it.
  const std::map<std::string, std::string>& owners() const { return owners_; }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    ParameterReaders* self = active_;
    if (self == nullptr) return nullptr;
    if (fn.scope() == at::RecordScope::USER_SCOPE) {
      self->scopes_.emplace_back(fn.name());
      return nullptr;
    }
    if (self->scopes_.empty()) return nullptr;
    const auto note = [&](const at::Tensor& t) {
      if (!t.defined() || !t.has_storage() || t.is_sparse() || t.is_quantized()) return;
      const auto found = self->names_.find(t.data_ptr());
      if (found != self->names_.end()) self->owners_.emplace(found->second, self->scopes_.back());
    };
    for (const auto& v : fn.inputs()) {
      if (v.isTensor()) note(v.toTensor());
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorList().vec()) note(t);
    }
    return nullptr;
  }
  static void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
    ParameterReaders* self = active_;
    if (self != nullptr && fn.scope() == at::RecordScope::USER_SCOPE && !self->scopes_.empty())
      self->scopes_.pop_back();
  }

  static inline ParameterReaders* active_ = nullptr;
  std::map<const void*, std::string> names_;
  std::map<std::string, std::string> owners_;
  std::vector<std::string> scopes_;
  at::CallbackHandle handle_ = 0;
};

}  // namespace

ModelTraffic trace_layer_traffic(const Workload& workload, const Config& config) {
  torch::manual_seed(0);
  auto model = workload.build(config, torch::Device(torch::kCPU));
  model->module().eval();
  c10::InferenceMode no_autograd;
  const Batch batch = model->make_batch();
  model->infer_step(batch);  // first call: lazy initialisation stays out of the trace
  profile::StepProfile step;
  std::map<std::string, double> layer_calls;
  std::map<std::string, std::string> owners;
  {
    LayerRecorder recorder;
    ParameterReaders readers(model->module());
    profile::OpObserver observer;
    observer.attach();
    model->infer_step(batch);
    observer.detach();
    step.ops = observer.aggregate(1);
    for (const auto& r : recorder.records()) layer_calls[r.name] = static_cast<double>(r.calls);
    owners = readers.owners();
  }
  // A parameter read inside a layer is named under that layer's label ("<label>.weight"), so it
  // is that layer's whatever the module path; one no layer read keeps its module path.
  std::vector<analysis::ParameterSize> parameters;
  for (const auto& p : model->module().named_parameters(/*recurse=*/true)) {
    const auto owner = owners.find(p.key());
    const auto dot = p.key().rfind('.');
    const std::string leaf = dot == std::string::npos ? p.key() : p.key().substr(dot + 1);
    parameters.push_back({owner != owners.end() ? owner->second + "." + leaf : p.key(),
                          static_cast<double>(p.value().numel())});
  }
  ModelTraffic out;
  // The published (fp32) sizes: Table 1's intensities are of the fp32 model.
  out.element_bytes = static_cast<double>(element_bytes(Dtype::kFp32));
  out.traffic = analysis::layer_traffic(step, parameters, layer_calls, out.element_bytes);
  return out;
}

}  // namespace plumb::jobs
