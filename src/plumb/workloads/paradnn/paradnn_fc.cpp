// paradnn_fc: ParaDnn's parameterised fully-connected model (Wang, Wei & Brooks, MLSys 2020,
// Sec. 2.1 and Table 2a), as its public code builds it (github.com/Emma926/paradnn, fc.py):
//
//   input [B, input] -> layers x (dense `nodes` + ReLU) -> dense `output` (logits)
//
// Softmax cross-entropy against uniform random labels; RMSProp (decay 0.9, momentum 0.9,
// epsilon 1.0, learning rate 0.1) by default. Synthetic inputs as fc.py draws them:
// U(-0.5, 0.5) features and labels uniform over the outputs. Dense layers are tf.layers.dense:
// Glorot-uniform weights, zero biases, named fc_0 .. fc_<layers> as in fc.py.
//
// Parameters (closed form, N = nodes, L = layers):
//   fc_0:        input x N + N
//   fc_1..L-1:   (L - 1) (N x N + N)
//   fc_L:        N x output + output
// Forward MACs per example: input N + (L - 1) N^2 + N output (fc.py's own FLOP formula / 2).
//
// Default: the middle of Table 2a's grid: layers 32 (of 4..128, x2: the geometric middle is
// 22.6), nodes 512 (of 32..8192, x2: the geometric middle), input 4000 (of 2000..8000, +2000),
// output 600 (of 200..1000, +200), batch 1024 (of 64..16384, x2: the geometric middle).
// 10,498,648 parameters, 10,481,664 forward MACs per example.
#include "plumb/workloads/paradnn/paradnn_fc.h"

#include <string>
#include <vector>

#include "plumb/core/layer_scope.h"
#include "plumb/workloads/common/classifier_model.h"
#include "plumb/workloads/common/synthetic_data.h"
#include "plumb/workloads/paradnn/paradnn_common.h"

namespace plumb::workloads {
namespace {

namespace nn = torch::nn;

struct FcNetImpl : nn::Module {
  FcNetImpl(int64_t layers, int64_t nodes, int64_t input, int64_t output) {
    for (int64_t i = 0; i <= layers; ++i) {
      const int64_t in = i == 0 ? input : nodes;
      const int64_t out = i == layers ? output : nodes;
      nn::Linear fc(in, out);
      glorot_uniform_(fc->weight, in, out);
      nn::init::zeros_(fc->bias);
      dense.push_back(register_module("fc_" + std::to_string(i), fc));
    }
  }

  // x: [B, input] -> logits [B, output]
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = x;
    const size_t last = dense.size() - 1;
    for (size_t i = 0; i < last; ++i) {
      const std::string name = "fc_" + std::to_string(i);
      LayerScope scope(name);  // the ReLU is attributed to its dense layer
      h = scope.output(torch::relu(dense[i]->forward(h)));  // [B, N]
    }
    return run_layer("fc_" + std::to_string(last), dense[last], h);  // [B, output]
  }

  std::vector<nn::Linear> dense;
};
TORCH_MODULE(FcNet);

// fc.py's input_fn: features U(-0.5, 0.5) [B, input], labels uniform in [0, output) [B].
std::function<Batch()> fc_batches(const Config& c, const torch::Device& device) {
  const int64_t batch = c.get_int("batch"), input = c.get_int("input");
  const int64_t output = c.get_int("output");
  return [=]() {
    Batch b;
    b.tensors = {torch::rand({batch, input}, torch::TensorOptions().device(device)) - 0.5,
                 class_labels(batch, output, device)};
    b.units = static_cast<double>(batch);
    return b;
  };
}

}  // namespace

int64_t paradnn_fc_parameters(const Config& c) {
  const int64_t L = c.get_int("layers"), N = c.get_int("nodes");
  const int64_t in = c.get_int("input"), out = c.get_int("output");
  return (in * N + N) + (L - 1) * (N * N + N) + (N * out + out);
}

Workload make_paradnn_fc() {
  Workload w;
  w.info = {"paradnn_fc",
            {"paradnn"},
            "parameterised fully-connected model",
            "ParaDnn FC generator: input -> layers x [dense nodes, ReLU] -> dense output, "
            "softmax cross-entropy, RMSProp; default 32 x 512 nodes, 4000 in, 600 out",
            "Wang, Wei & Brooks, Benchmarking TPU, GPU, and CPU Platforms for Deep Learning, "
            "MLSys 2020 (Sec. 2.1, Table 2a ranges); layers, initialisation, data, loss and "
            "optimizer from its public code (Emma926/paradnn fc.py)",
            "samples/s",
            1024,
            {"batch=8", "layers=2", "nodes=16", "input=32", "output=8"}};
  w.default_config = [] {
    Config c;
    c.add_int("batch", 1024, "mini-batch size (Table 2a: 64..16384, x2; middle of the grid)");
    c.add_int("layers", 32, "hidden dense layers (Table 2a: 4..128, x2)");
    c.add_int("nodes", 512, "units per hidden layer (Table 2a: 32..8192, x2)");
    c.add_int("input", 4000, "input features (Table 2a: 2000..8000, +2000)");
    c.add_int("output", 600, "output classes (Table 2a: 200..1000, +200)", 2);
    add_paradnn_optimizer_keys(c);
    return c;
  };
  w.build = [](const Config& c, const torch::Device& device) -> std::unique_ptr<Model> {
    FcNet net(c.get_int("layers"), c.get_int("nodes"), c.get_int("input"), c.get_int("output"));
    return make_classifier_model(net, device, fc_batches(c, device), paradnn_optimizer_factory(c));
  };
  return w;
}

}  // namespace plumb::workloads
