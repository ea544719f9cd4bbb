// Fused vs unfused kernels on recorded shapes (see fused_kernels.h).
#include "plumb/profile/fused_kernels.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/torch.h>

#include "plumb/profile/op_call.h"
#include "plumb/profile/op_observer.h"
#include "plumb/run/step_loop.h"
#include "plumb/run/thread_count.h"

namespace plumb::profile {
namespace {

bool has_edge(const std::vector<std::string>& labels, const std::vector<std::pair<int, int>>& edges,
              const std::string& from, const std::string& to) {
  for (const auto& [a, b] : edges)
    if (labels[static_cast<size_t>(a)] == from && labels[static_cast<size_t>(b)] == to) return true;
  return false;
}

// The signature of the first node labelled `label`, parsed; throws when there is none.
OpCall call_labelled(const std::vector<std::string>& labels,
                     const std::vector<std::string>& signatures, const std::string& label) {
  for (size_t i = 0; i < labels.size() && i < signatures.size(); ++i)
    if (labels[i] == label) return parse_signature(signatures[i]);
  throw std::invalid_argument("the pattern has no " + label + " call to rebuild");
}

const TensorMeta& tensor_at(const OpCall& call, size_t i) {
  const TensorMeta* t = call.input_tensor(i);
  if (t == nullptr)
    throw std::invalid_argument(fmt::format("{}: input {} is not a tensor", call.name, i));
  return *t;
}

std::vector<int64_t> ints_at(const OpCall& call, size_t i, size_t dims) {
  auto v = call.input_ints(i);
  if (v.size() == 1 && dims > 1) v.assign(dims, v[0]);
  if (v.size() != dims)
    throw std::invalid_argument(
        fmt::format("{}: argument {} is not {} integers", call.name, i, dims));
  return v;
}

at::Tensor random_like_meta(const TensorMeta& meta) {
  return torch::randn(meta.shape, torch::TensorOptions().dtype(meta.dtype));
}

struct Forms {
  std::string unfused, fused_op;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::function<at::Tensor()> unfused_fn, fused_fn;
};

// The convolutions whose batch norm folds into their weights: conv1d, conv2d and conv3d.
const char* const kConvolutions[] = {"conv1d", "conv2d", "conv3d"};

bool convolution_feeds_batch_norm(const std::vector<std::string>& labels,
                                  const std::vector<std::pair<int, int>>& edges) {
  return std::any_of(std::begin(kConvolutions), std::end(kConvolutions),
                     [&](const char* conv) { return has_edge(labels, edges, conv, "batch_norm"); });
}

// conv{1,2,3}d(x [N, C_in, *spatial], w [C, C_in/g, *kernel], b [C]) then batch_norm over C.
Forms conv_bn(const std::vector<std::string>& labels, const std::vector<std::string>& sigs) {
  const auto conv_label = std::find_first_of(labels.begin(), labels.end(),
                                             std::begin(kConvolutions), std::end(kConvolutions));
  if (conv_label == labels.end())
    throw std::invalid_argument("the pattern has no convolution call to rebuild");
  const OpCall conv = call_labelled(labels, sigs, *conv_label);
  const OpCall bn = call_labelled(labels, sigs, "batch_norm");
  const TensorMeta& x_meta = tensor_at(conv, 0);
  const TensorMeta& w_meta = tensor_at(conv, 1);
  if (w_meta.shape.size() < 3 || w_meta.shape.size() > 5)
    throw std::invalid_argument(
        fmt::format("{}: weight of {} dimensions", conv.name, w_meta.shape.size()));
  const size_t spatial = w_meta.shape.size() - 2;
  const auto stride = ints_at(conv, 3, spatial), padding = ints_at(conv, 4, spatial),
             dilation = ints_at(conv, 5, spatial);
  const int64_t groups = conv.input_ints(6).empty() ? 1 : conv.input_ints(6)[0];
  const double eps = bn.inputs.size() > 7 ? bn.inputs[7].real : 1e-5;
  const auto x = random_like_meta(x_meta);
  const auto w = random_like_meta(w_meta);
  const at::Tensor b =
      conv.input_tensor(2) != nullptr ? random_like_meta(*conv.input_tensor(2)) : at::Tensor();
  const int64_t channels = w_meta.shape.at(0);
  const auto opts = torch::TensorOptions().dtype(x_meta.dtype);
  const auto gamma = torch::rand({channels}, opts) + 0.5, beta = torch::randn({channels}, opts);
  const auto mean = torch::randn({channels}, opts), var = torch::rand({channels}, opts) + 0.5;
  // Folding: y = gamma (conv(x) + b - mean) / sqrt(var + eps) + beta
  //            = conv(x; w * s) + (b - mean) * s + beta,  s = gamma / sqrt(var + eps)   [C]
  const auto scale = gamma / torch::sqrt(var + eps);
  std::vector<int64_t> per_channel(w_meta.shape.size(), 1);  // [C, 1, 1 ...]
  per_channel[0] = channels;
  const auto w_folded = w * scale.reshape(per_channel);  // [C, C_in/g, *kernel]
  const auto b_folded = ((b.defined() ? b : torch::zeros({channels}, opts)) - mean) * scale + beta;
  // The model's own operator, so the unfused form is what the profile timed.
  const auto convolve = [=](const at::Tensor& weight, const at::Tensor& bias) {
    if (spatial == 1) return at::conv1d(x, weight, bias, stride, padding, dilation, groups);
    if (spatial == 2) return at::conv2d(x, weight, bias, stride, padding, dilation, groups);
    return at::conv3d(x, weight, bias, stride, padding, dilation, groups);
  };
  Forms f;
  f.unfused = fmt::format("{}, batch_norm", *conv_label);
  f.fused_op = fmt::format("{} (batch norm folded into its weights and bias)", *conv_label);
  f.dtype = x_meta.dtype;
  f.unfused_fn = [=] {
    return at::batch_norm(convolve(w, b), gamma, beta, mean, var, false, 0.1, eps, false);
  };
  f.fused_fn = [=] { return convolve(w_folded, b_folded); };
  return f;
}

// linear(x [M, K], w [N, K], b [N]) or addmm(b [N], x [M, K], w_t [K, N]), then relu.
Forms linear_relu(const std::vector<std::string>& labels, const std::vector<std::string>& sigs) {
  const bool is_linear = std::find(labels.begin(), labels.end(), "linear") != labels.end();
  const OpCall call = call_labelled(labels, sigs, is_linear ? "linear" : "addmm");
  const TensorMeta& x_meta = tensor_at(call, is_linear ? 0 : 1);
  if (x_meta.shape.size() != 2)
    throw std::invalid_argument("linear -> relu is checked on 2-D inputs only");
  const auto x = random_like_meta(x_meta);
  const at::Tensor w_t = is_linear ? random_like_meta(tensor_at(call, 1)).t()  // [K, N]
                                   : random_like_meta(tensor_at(call, 2));
  const auto b = random_like_meta(tensor_at(call, is_linear ? 2 : 0));  // [N]
  Forms f;
  f.unfused = is_linear ? "linear, relu" : "addmm, relu";
  f.fused_op = "_addmm_activation (addmm with a ReLU epilogue)";
  f.dtype = x_meta.dtype;
  f.unfused_fn = [=] { return at::addmm(b, x, w_t).relu_(); };
  f.fused_fn = [=] { return at::_addmm_activation(b, x, w_t, 1, 1, false); };
  return f;
}

Forms add_relu(const std::vector<std::string>& labels, const std::vector<std::string>& sigs) {
  const OpCall add = call_labelled(labels, sigs, "add");
  const TensorMeta& a_meta = tensor_at(add, 0);
  const auto a = random_like_meta(a_meta);
  const auto b = random_like_meta(tensor_at(add, 1));
  Forms f;
  f.unfused = "add, relu";
  f.fused_op = "_add_relu";
  f.dtype = a_meta.dtype;
  f.unfused_fn = [=] { return at::add(a, b).relu_(); };
  f.fused_fn = [=] { return at::_add_relu(a, b); };
  return f;
}

Forms softmax(const std::vector<std::string>& labels, const std::vector<std::string>& sigs) {
  const bool internal = std::find(labels.begin(), labels.end(), "softmax") == labels.end();
  const OpCall call = call_labelled(labels, sigs, internal ? "_softmax" : "softmax");
  const TensorMeta& x_meta = tensor_at(call, 0);
  const auto dims = call.input_ints(1);
  if (dims.size() != 1) throw std::invalid_argument("softmax without one dim argument");
  const int64_t dim = dims[0];
  const auto x = random_like_meta(x_meta);
  Forms f;
  f.unfused = "amax, sub, exp, sum, div";
  f.fused_op = "softmax";
  f.dtype = x_meta.dtype;
  f.unfused_fn = [=] {
    const auto shifted = x - at::amax(x, {dim}, true);  // subtract the row maximum for range
    const auto e = at::exp(shifted);
    return e / at::sum(e, {dim}, true);
  };
  f.fused_fn = [=] { return at::softmax(x, dim); };
  return f;
}

Forms forms_for(const std::string& kind, const std::vector<std::string>& labels,
                const std::vector<std::string>& sigs) {
  if (kind == "conv_bn") return conv_bn(labels, sigs);
  if (kind == "linear_relu") return linear_relu(labels, sigs);
  if (kind == "add_relu") return add_relu(labels, sigs);
  if (kind == "softmax") return softmax(labels, sigs);
  throw std::invalid_argument("no fused kernel check named '" + kind + "'");
}

double seconds_of(const std::function<at::Tensor()>& fn) {
  const int64_t start = steady_now_ns();
  const auto out = fn();
  return static_cast<double>(steady_now_ns() - start) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string fused_kernel_kind(const std::vector<std::string>& labels,
                              const std::vector<std::pair<int, int>>& edges) {
  const auto has = [&](const char* l) {
    return std::find(labels.begin(), labels.end(), l) != labels.end();
  };
  if (convolution_feeds_batch_norm(labels, edges)) return "conv_bn";
  if (has_edge(labels, edges, "linear", "relu") || has_edge(labels, edges, "addmm", "relu"))
    return "linear_relu";
  if (has_edge(labels, edges, "add", "relu")) return "add_relu";
  if (has("softmax") || has("_softmax")) return "softmax";
  return "";
}

FusedKernelCheck run_fused_kernel_check(const std::string& kind,
                                        const std::vector<std::string>& labels,
                                        const std::vector<std::string>& signatures, int threads,
                                        double seconds) {
  if (threads < 1) throw std::invalid_argument("a fused kernel check needs at least 1 thread");
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  Forms forms = forms_for(kind, labels, signatures);
  run::ScopedThreadCount threads_for(threads);
  FusedKernelCheck c;
  c.kind = kind;
  c.unfused = forms.unfused;
  c.fused_op = forms.fused_op;
  c.dtype = c10::toString(forms.dtype);
  c.threads = threads;
  std::string shapes;
  for (const auto& s : signatures) shapes += (shapes.empty() ? "" : "; ") + s;
  c.shapes = shapes;
  // Warm up both forms (first-call allocation, oneDNN primitive creation), and compare outputs.
  at::Tensor unfused_out, fused_out;
  for (int i = 0; i < 3; ++i) {
    unfused_out = forms.unfused_fn();
    fused_out = forms.fused_fn();
  }
  c.max_abs_diff =
      (unfused_out.to(torch::kFloat) - fused_out.to(torch::kFloat)).abs().max().item<double>();
  // The unfused form's graph, from one observed call.
  {
    OpObserver observer;
    observer.attach();
    observer.capture_graph(true);
    const int64_t start = steady_now_ns();
    forms.unfused_fn();
    const int64_t end = steady_now_ns();
    observer.capture_graph(false);
    observer.detach();
    c.unfused_graph = build_step_graph(observer, start, static_cast<double>(end - start) * 1e-9);
  }
  // Interleaved, so drift (frequency, a neighbour's load) reaches both forms alike.
  const double probe = seconds_of(forms.unfused_fn) + seconds_of(forms.fused_fn);
  const int reps = std::clamp(static_cast<int>(seconds / std::max(probe, 1e-7)), 10, 2000);
  std::vector<double> unfused, fused;
  for (int i = 0; i < reps; ++i) {
    unfused.push_back(seconds_of(forms.unfused_fn));
    fused.push_back(seconds_of(forms.fused_fn));
  }
  c.repetitions = reps;
  c.unfused_s = median(unfused);
  c.fused_s = median(fused);
  return c;
}

}  // namespace plumb::profile
