// In-process tracing of per-layer traffic (see layer_traffic_source.h).
#include "plumb/cli/layer_traffic_source.h"

#include <c10/core/InferenceMode.h>

#include "plumb/core/layer_scope.h"
#include "plumb/core/precision.h"
#include "plumb/profile/op_observer.h"

namespace plumb::cli {

ModelTraffic trace_layer_traffic(const Workload& workload, const Config& config) {
  torch::manual_seed(0);
  auto model = workload.build(config, torch::Device(torch::kCPU));
  model->module().eval();
  c10::InferenceMode no_autograd;
  const Batch batch = model->make_batch();
  model->infer_step(batch);  // first call: lazy initialisation stays out of the trace
  profile::StepProfile step;
  std::map<std::string, double> layer_calls;
  {
    LayerRecorder recorder;
    profile::OpObserver observer;
    observer.attach();
    model->infer_step(batch);
    observer.detach();
    step.ops = observer.aggregate(1);
    for (const auto& r : recorder.records()) layer_calls[r.name] = static_cast<double>(r.calls);
  }
  std::vector<analysis::ParameterSize> parameters;
  for (const auto& p : model->module().named_parameters(/*recurse=*/true))
    parameters.push_back({p.key(), static_cast<double>(p.value().numel())});
  ModelTraffic out;
  // The published (fp32) sizes: Table 1's intensities are of the fp32 model.
  out.element_bytes = static_cast<double>(element_bytes(Dtype::kFp32));
  out.traffic = analysis::layer_traffic(step, parameters, layer_calls, out.element_bytes);
  return out;
}

}  // namespace plumb::cli
