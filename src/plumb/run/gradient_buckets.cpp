// Bucketed, overlapped gradient all-reduce (see gradient_buckets.h).
#include "plumb/run/gradient_buckets.h"

#include <torch/csrc/autograd/engine.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/run/process_group.h"
#include "plumb/run/step_loop.h"

namespace plumb::run {
namespace {

// A module whose embedding lookups produce sparse gradients (sparse=true): its rows cannot be
// averaged in dense buckets.
std::string sparse_gradient_module(torch::nn::Module& module) {
  for (const auto& item : module.named_modules()) {
    if (const auto* bag = item.value()->as<torch::nn::EmbeddingBag>())
      if (bag->options.sparse()) return item.key();
    if (const auto* embedding = item.value()->as<torch::nn::Embedding>())
      if (embedding->options.sparse()) return item.key();
  }
  return "";
}

// Seconds during which at least one bucket was in flight: the union of the intervals.
double busy_seconds(std::vector<BucketTiming> buckets) {
  std::sort(buckets.begin(), buckets.end(), [](const BucketTiming& a, const BucketTiming& b) {
    return a.launched_s < b.launched_s;
  });
  double busy = 0, open = 0, close = -1;
  for (const auto& b : buckets) {
    if (b.launched_s > close) {
      busy += std::max(0.0, close - open);
      open = b.launched_s;
    }
    close = std::max(close, b.done_s);
  }
  return busy + std::max(0.0, close - open);
}

}  // namespace

GradientReducer::GradientReducer(torch::nn::Module& module,
                                 c10::intrusive_ptr<c10d::ProcessGroup> group, int64_t bucket_bytes,
                                 bool overlap)
    : module_(module), group_(std::move(group)), overlap_(overlap) {
  if (const std::string sparse = sparse_gradient_module(module); !sparse.empty())
    throw UsageError(fmt::format(
        "'{}' produces sparse gradients (an embedding with sparse=true); data-parallel training "
        "here averages dense gradients only",
        sparse));
  if (bucket_bytes <= 0) throw UsageError("the bucket size must be positive");
  // Reverse registration order: the last layers' gradients are computed first.
  auto parameters = module.parameters(/*recurse=*/true);
  std::reverse(parameters.begin(), parameters.end());
  int64_t bucket_fill = 0;
  std::vector<int64_t> elements;  // per bucket
  c10::ScalarType bucket_type = c10::ScalarType::Undefined;
  for (const auto& p : parameters) {
    if (!p.requires_grad()) continue;
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    if (elements.empty() || p.scalar_type() != bucket_type ||
        (bucket_fill > 0 && bucket_fill + bytes > bucket_bytes)) {
      elements.push_back(0);
      bucket_fill = 0;
      bucket_type = p.scalar_type();
      buckets_.push_back(Bucket{});
      buckets_.back().flat = torch::empty({0}, p.options().requires_grad(false));
    }
    slots_.push_back(Slot{p, buckets_.size() - 1, elements.back(), false});
    elements.back() += p.numel();
    bucket_fill += bytes;
    gradient_bytes_ += bytes;
    ++buckets_.back().pending;
  }
  for (size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b].flat = torch::zeros({elements[b]}, buckets_[b].flat.options());
  for (size_t i = 0; i < slots_.size(); ++i)
    hooks_.push_back(slots_[i].parameter.register_hook(
        [this, i](const torch::Tensor& g) { on_gradient(i, g); }));
}

GradientReducer::~GradientReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) slots_[i].parameter.remove_hook(hooks_[i]);
}

void GradientReducer::broadcast_state() {
  torch::NoGradGuard no_grad;
  auto tensors = module_.parameters(/*recurse=*/true);
  for (const auto& b : module_.buffers(/*recurse=*/true)) tensors.push_back(b);
  for (auto& t : tensors) {
    std::vector<at::Tensor> one{t};
    group_->broadcast(one)->wait();
  }
}

double GradientReducer::now_s() const {
  return static_cast<double>(steady_now_ns() - step_start_ns_) / 1e9;
}

void GradientReducer::on_gradient(size_t index, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_step_) {
    in_step_ = true;
    step_start_ns_ = steady_now_ns();
    // Runs when this backward pass has computed every gradient, before control returns to
    // the training step (and so before its optimizer step).
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finish_step(); });
  }
  Slot& slot = slots_[index];
  if (slot.ready) return;  // a second gradient in one backward pass: the first one counts
  if (grad.is_sparse())
    throw UsageError("a sparse gradient reached the data-parallel reducer; dense only");
  Bucket& bucket = buckets_[slot.bucket];
  bucket.flat.narrow(0, slot.offset, slot.parameter.numel()).copy_(grad.reshape({-1}));
  slot.ready = true;
  if (--bucket.pending == 0 && overlap_) launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0)
    launch(next_launch_++);
}

void GradientReducer::launch(size_t index) {
  Bucket& bucket = buckets_[index];
  bucket.timing = BucketTiming{
      bucket.flat.numel() * static_cast<int64_t>(bucket.flat.element_size()), now_s(), 0};
  std::vector<at::Tensor> tensors{bucket.flat};
  bucket.work = group_->allreduce(tensors);
  // Stamp the completion on the communication thread, so the bucket's own duration is known
  // even when the step only waits for it later.
  bucket.work->getFuture()->addCallback(
      [this, index](c10::ivalue::Future&) { buckets_[index].timing.done_s = now_s(); });
}

void GradientReducer::finish_step() {
  std::unique_lock<std::mutex> lock(mutex_);
  StepCommunication step;
  step.backward_s = now_s();
  // Parameters this backward pass did not reach contribute zeros, so every worker still
  // issues every bucket's all-reduce in the same order.
  for (Slot& slot : slots_) {
    if (slot.ready) continue;
    Bucket& bucket = buckets_[slot.bucket];
    bucket.flat.narrow(0, slot.offset, slot.parameter.numel()).zero_();
    slot.ready = true;
    --bucket.pending;
  }
  launch_ready_buckets();
  lock.unlock();
  const double world = static_cast<double>(group_->getSize());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    try {
      buckets_[b].work->wait();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw DistError(fmt::format(
          "rank {}: a gradient all-reduce failed (a worker stopped or the link broke): {}",
          group_->getRank(), what.substr(0, what.find('\n'))));
    }
    if (buckets_[b].timing.done_s <= 0) buckets_[b].timing.done_s = now_s();
  }
  step.exposed_s = now_s() - step.backward_s;
  lock.lock();
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) bucket.flat.div_(world);
  for (Slot& slot : slots_) {
    const auto average = buckets_[slot.bucket]
                             .flat.narrow(0, slot.offset, slot.parameter.numel())
                             .view_as(slot.parameter);
    auto& grad = slot.parameter.mutable_grad();
    if (grad.defined())
      grad.copy_(average);
    else
      grad = average.clone();
    slot.ready = false;
  }
  for (auto& bucket : buckets_) {
    step.buckets.push_back(bucket.timing);
    bucket.work.reset();
  }
  for (const Slot& slot : slots_) ++buckets_[slot.bucket].pending;
  step.busy_s = busy_seconds(step.buckets);
  next_launch_ = 0;
  in_step_ = false;
  last_ = std::move(step);
}

}  // namespace plumb::run
