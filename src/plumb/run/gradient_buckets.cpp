// Bucketed, overlapped gradient all-reduce (see gradient_buckets.h).
#include "plumb/run/gradient_buckets.h"

#include <torch/csrc/autograd/engine.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"
#include "plumb/run/process_group.h"

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

// The device the module's parameters live on (CPU for a module without any).
c10::Device parameter_device(torch::nn::Module& module) {
  const auto parameters = module.parameters(/*recurse=*/true);
  return parameters.empty() ? c10::Device(c10::kCPU) : parameters.front().device();
}

}  // namespace

GradientReducer::GradientReducer(torch::nn::Module& module,
                                 c10::intrusive_ptr<c10d::ProcessGroup> group, int64_t bucket_bytes,
                                 bool overlap)
    : module_(module),
      group_(std::move(group)),
      overlap_(overlap),
      timeline_(parameter_device(module)) {
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

void GradientReducer::on_gradient(size_t index, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_step_) {
    in_step_ = true;
    ++step_number_;
    timeline_.start();
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
  bucket.launched = timeline_.mark();
  {
    std::lock_guard<std::mutex> lock(done_mutex_);
    bucket.done.reset();
  }
  std::vector<at::Tensor> tensors{bucket.flat};
  bucket.work = group_->allreduce(tensors);
  // Stamp the completion when the future completes, so the bucket's own duration is known
  // even when the step only waits for it later. Gloo runs the callback on its thread when the
  // all-reduce is done; NCCL runs it at once, on a stream that waits for the all-reduce, so
  // the point marked there is reached when the all-reduce ends.
  bucket.work->getFuture()->addCallback(
      [this, index, step = step_number_.load()](c10::ivalue::Future&) { mark_done(index, step); });
}

void GradientReducer::mark_done(size_t index, uint64_t step) {
  std::lock_guard<std::mutex> lock(done_mutex_);
  if (step != step_number_ || buckets_[index].done) return;
  buckets_[index].done = timeline_.mark();
}

void GradientReducer::finish_step() {
  std::unique_lock<std::mutex> lock(mutex_);
  backward_end_ = timeline_.mark();
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
      // Gloo: the host waits. NCCL: the current stream waits for the all-reduce's stream.
      buckets_[b].work->wait();
    } catch (const std::exception& e) {
      throw DistError(fmt::format(
          "rank {}: a gradient all-reduce failed (a worker stopped or the link broke): {}",
          group_->getRank(), first_line(e.what())));
    }
    // A completion callback may still be on its way (Gloo completes the future before it
    // runs the callbacks): the bucket was done by now.
    mark_done(b, step_number_);
  }
  averaged_ = timeline_.mark();
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
  for (auto& bucket : buckets_) bucket.work.reset();
  for (const Slot& slot : slots_) ++buckets_[slot.bucket].pending;
  next_launch_ = 0;
  in_step_ = false;
  unread_ = true;
}

const StepCommunication& GradientReducer::last_step() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!unread_) return last_;
  StepCommunication step;
  step.backward_s = timeline_.seconds(backward_end_);
  step.exposed_s = timeline_.seconds(averaged_) - step.backward_s;
  std::lock_guard<std::mutex> done_lock(done_mutex_);
  for (const auto& bucket : buckets_) {
    BucketTiming t;
    t.bytes = bucket.flat.numel() * static_cast<int64_t>(bucket.flat.element_size());
    t.launched_s = timeline_.seconds(bucket.launched);
    t.done_s = bucket.done ? timeline_.seconds(*bucket.done) : t.launched_s;
    step.buckets.push_back(t);
  }
  step.busy_s = busy_seconds(step.buckets);
  last_ = std::move(step);
  unread_ = false;
  return last_;
}

}  // namespace plumb::run
