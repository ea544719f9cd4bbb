// Names regions of model code as layers ("layer3.2.conv2", "encoder.lstm.0").
//
// A LayerScope opens an at::RecordFunction user scope, so operator observers (profile/)
// can attribute time, FLOPs and bytes to model structure, and, while a LayerRecorder is
// alive on the same thread, records each layer's output shape for `plumb info`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <torch/torch.h>

namespace plumb {

struct LayerRecord {
  std::string name;                   // module path, as in named_modules()
  std::vector<int64_t> output_shape;  // of the first call
  int64_t calls = 0;                  // recurrent layers run once per time step
};

class LayerScope {
 public:
  explicit LayerScope(const std::string& name);
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

  // Notes the layer's output (shape only) and returns it unchanged.
  const torch::Tensor& output(const torch::Tensor& tensor);

 private:
  std::string name_;
  at::RecordFunction record_;
};

// Collects LayerRecords for the current thread while alive (not re-entrant).
class LayerRecorder {
 public:
  LayerRecorder();
  ~LayerRecorder();
  LayerRecorder(const LayerRecorder&) = delete;
  LayerRecorder& operator=(const LayerRecorder&) = delete;
  const std::vector<LayerRecord>& records() const { return records_; }
  void note(const std::string& name, const torch::Tensor& output);

 private:
  std::vector<LayerRecord> records_;
};

// Runs a module as the named layer: `x = run_layer("layer1.0.conv1", conv1, x);`
template <typename ModuleHolder>
torch::Tensor run_layer(const std::string& name, ModuleHolder& module, const torch::Tensor& x) {
  LayerScope scope(name);
  return scope.output(module->forward(x));
}

}  // namespace plumb
