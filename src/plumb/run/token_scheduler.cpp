// Static and continuous batching of a token-level server (see token_scheduler.h).
#include "plumb/run/token_scheduler.h"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "plumb/core/errors.h"
#include "plumb/core/text.h"

namespace plumb::run {

namespace {

// A request holding a slot.
struct Held {
  size_t id = 0;
  int64_t slot = 0;
  int64_t prefilled = 0;  // prompt positions run
  int64_t generated = 0;  // output tokens emitted
  int64_t reserved = 0;   // KV bytes reserved for it
};

// What both schedulers share: the requests, the queue of those that arrived, the trace.
class Server {
 public:
  Server(const std::vector<TokenRequest>& requests, const SchedulerOptions& options,
         SlottedGenerator& engine, ServeClock& clock)
      : requests_(requests),
        o_(options),
        engine_(engine),
        clock_(clock),
        bytes_per_position_(engine.kv_bytes_per_position()) {
    trace_.requests.resize(requests.size());
    // Every request takes an iteration or more: growing the record mid-run would copy it all,
    // a stall of milliseconds in the schedule.
    trace_.iterations.reserve(2 * requests.size() + 16);
    for (size_t i = 0; i < requests.size(); ++i) {
      auto& r = trace_.requests[i];
      r.arrival_s = requests[i].arrival_s;
      r.prompt = requests[i].prompt;
      r.output = requests[i].output;
      r.token_s.reserve(static_cast<size_t>(r.output));
    }
  }

  TokenServeTrace serve() {
    if (o_.kind == SchedulerKind::kStatic)
      serve_static();
    else
      serve_continuous();
    return std::move(trace_);
  }

 private:
  // Moves every request that has arrived by `now` into the queue.
  void take_arrivals(double now) {
    while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival_s <= now)
      waiting_.push_back(next_arrival_++);
  }

  bool all_arrived() const { return next_arrival_ == requests_.size(); }

  // With nothing to run: waits for the next arrival.
  void wait_for_arrival() {
    PLUMB_ASSERT(!all_arrived(), "a request is still to come when the engine is idle");
    clock_.wait_until_s(requests_[next_arrival_].arrival_s);
  }

  void emit(Held& h, double at) {
    auto& r = trace_.requests[h.id];
    if (h.generated == 0) r.first_token_s = at;
    r.token_s.push_back(at);
    ++h.generated;
  }

  void finish(const Held& h, double at) {
    trace_.requests[h.id].finish_s = at;
    reserved_ -= h.reserved;
    ++finished_;
  }

  // The KV positions a held request has written.
  int64_t written(const Held& h) const {
    return h.generated == 0 ? h.prefilled : h.prefilled + h.generated - 1;
  }

  void record(double start, double end, int32_t decode_batch, int32_t prefill_tokens,
              int32_t waiting, const std::vector<const std::vector<Held>*>& held) {
    IterationRecord it;
    it.start_s = start;
    it.end_s = end;
    it.decode_batch = decode_batch;
    it.prefill_tokens = prefill_tokens;
    it.waiting = waiting;
    it.kv_reserved_bytes = reserved_;
    for (const auto* group : held)
      for (const auto& h : *group) {
        ++it.running;
        it.kv_used_bytes += written(h) * bytes_per_position_;
      }
    trace_.iterations.push_back(it);
  }

  // Static batching: a batch is formed when the engine is idle and runs to its longest request.
  void serve_static() {
    const size_t n = requests_.size();
    while (finished_ < n) {
      double now = clock_.now_s();
      take_arrivals(now);
      if (waiting_.empty()) {
        wait_for_arrival();
        continue;
      }
      // The batcher's wait: not full, more to come, the oldest has waited less than max_wait.
      const size_t limit = static_cast<size_t>(o_.max_batch);
      const double deadline = requests_[waiting_.front()].arrival_s + o_.max_wait_s;
      if (waiting_.size() < limit && !all_arrived() && now < deadline) {
        const size_t fills = waiting_.front() + limit - 1;  // the arrival that fills the batch
        clock_.wait_until_s(std::min(deadline, fills < n ? requests_[fills].arrival_s : deadline));
        continue;
      }
      // Padded rows: each reserves the batch's longest prompt plus its longest output.
      std::vector<Held> batch;
      int64_t longest_prompt = 0, longest_output = 0;
      while (!waiting_.empty() && batch.size() < limit) {
        const auto& r = requests_[waiting_.front()];
        const int64_t p = std::max(longest_prompt, r.prompt),
                      o = std::max(longest_output, r.output);
        const int64_t need = static_cast<int64_t>(batch.size() + 1) * (p + o) * bytes_per_position_;
        if (need > o_.kv_budget_bytes) break;
        longest_prompt = p;
        longest_output = o;
        Held h;
        h.id = waiting_.front();
        h.slot = static_cast<int64_t>(batch.size());
        trace_.requests[h.id].admitted_s = now;
        batch.push_back(h);
        waiting_.pop_front();
      }
      PLUMB_ASSERT(!batch.empty(), "check_admissible() lets every request fit alone");
      reserved_ = static_cast<int64_t>(batch.size()) * (longest_prompt + longest_output) *
                  bytes_per_position_;
      for (auto& h : batch) h.reserved = longest_prompt + longest_output;  // positions, per row
      const std::vector<const std::vector<Held>*> held = {&batch};
      // The prefills, one call per request (their prompts differ), emitting the first tokens.
      double start = clock_.now_s();
      int32_t prompt_tokens = 0;
      for (auto& h : batch) {
        engine_.prefill_slot(h.slot, 0, trace_.requests[h.id].prompt, true);
        h.prefilled = trace_.requests[h.id].prompt;
        prompt_tokens += static_cast<int32_t>(h.prefilled);
      }
      double end = clock_.now_s();
      for (auto& h : batch) emit(h, end);
      record(start, end, 0, prompt_tokens, static_cast<int32_t>(waiting_.size()), held);
      // Every row decodes until the longest request is done.
      for (int64_t step = 1; step < longest_output; ++step) {
        start = clock_.now_s();
        take_arrivals(start);
        engine_.decode_slots(static_cast<int64_t>(batch.size()));
        end = clock_.now_s();
        for (auto& h : batch)
          if (h.generated < trace_.requests[h.id].output) emit(h, end);
        record(start, end, static_cast<int32_t>(batch.size()), 0,
               static_cast<int32_t>(waiting_.size()), held);
      }
      for (auto& h : batch) {
        h.reserved = 0;  // released all at once below
        finish(h, end);
      }
      reserved_ = 0;
    }
  }

  // The highest slot neither a decoding nor a prefilling request holds.
  int64_t free_slot() const {
    const auto held = [&](int64_t slot) {
      return std::any_of(prefilling_.begin(), prefilling_.end(),
                         [&](const Held& h) { return h.slot == slot; });
    };
    for (int64_t s = o_.max_batch - 1; s >= static_cast<int64_t>(decoding_.size()); --s)
      if (!held(s)) return s;
    PLUMB_ASSERT(false, "admission checks that a slot is free");
    return -1;
  }

  // Moves a request whose prefill is done into slot decoding_.size(), the end of the decode
  // block, swapping through the spare slot when another prefilling request holds it.
  void join_decoders(Held h) {
    const int64_t target = static_cast<int64_t>(decoding_.size());
    if (h.slot != target) {
      auto other = std::find_if(prefilling_.begin(), prefilling_.end(),
                                [&](const Held& p) { return p.slot == target; });
      if (other != prefilling_.end()) {
        const int64_t spare = o_.max_batch;
        engine_.move_slot(target, spare);
        engine_.move_slot(h.slot, target);
        engine_.move_slot(spare, h.slot);
        other->slot = h.slot;
      } else {
        engine_.move_slot(h.slot, target);
      }
      h.slot = target;
    }
    decoding_.push_back(h);
  }

  // Admits waiting requests in arrival order while a slot is free and the budget holds them.
  void admit(double now) {
    while (!waiting_.empty() &&
           static_cast<int64_t>(decoding_.size() + prefilling_.size()) < o_.max_batch) {
      const auto& r = requests_[waiting_.front()];
      const int64_t need = r.positions() * bytes_per_position_;
      if (reserved_ + need > o_.kv_budget_bytes) return;  // it waits; so do those behind it
      Held h;
      h.id = waiting_.front();
      h.slot = free_slot();
      h.reserved = need;
      reserved_ += need;
      trace_.requests[h.id].admitted_s = now;
      prefilling_.push_back(h);
      waiting_.pop_front();
    }
  }

  struct Chunk {
    size_t index;  // in prefilling_
    int64_t start, tokens;
    bool last;
  };

  // This iteration's prompt chunks (into `chunks`, reused: no allocation per iteration), and
  // whether it decodes.
  void plan(std::vector<Chunk>& chunks, bool& decode) const {
    chunks.clear();
    const auto chunk_of = [&](size_t i, int64_t most) {
      const auto& h = prefilling_[i];
      const int64_t left = trace_.requests[h.id].prompt - h.prefilled;
      const int64_t tokens = std::min(left, most);
      return Chunk{i, h.prefilled, tokens, tokens == left};
    };
    if (o_.chunk_tokens == 0) {  // prefill-first: new prompts whole, no decode beside them
      for (size_t i = 0; i < prefilling_.size(); ++i)
        chunks.push_back(chunk_of(i, std::numeric_limits<int64_t>::max()));
      decode = chunks.empty() && !decoding_.empty();
      return;
    }
    decode = !decoding_.empty();
    int64_t budget = o_.chunk_tokens - static_cast<int64_t>(decoding_.size());
    for (size_t i = 0; i < prefilling_.size() && budget > 0; ++i) {
      chunks.push_back(chunk_of(i, budget));
      budget -= chunks.back().tokens;
    }
  }

  std::vector<Held>::iterator first_prompt_done() {
    return std::find_if(prefilling_.begin(), prefilling_.end(),
                        [&](const Held& h) { return h.prefilled == trace_.requests[h.id].prompt; });
  }

  void serve_continuous() {
    const size_t n = requests_.size();
    std::vector<Chunk> chunks;
    chunks.reserve(static_cast<size_t>(o_.max_batch));
    while (finished_ < n) {
      const double now = clock_.now_s();
      take_arrivals(now);
      admit(now);
      if (decoding_.empty() && prefilling_.empty()) {
        wait_for_arrival();
        continue;
      }
      bool decode = false;
      plan(chunks, decode);
      const int32_t waiting = static_cast<int32_t>(waiting_.size());
      const int32_t decoders = decode ? static_cast<int32_t>(decoding_.size()) : 0;
      const double start = clock_.now_s();
      int32_t prompt_tokens = 0;
      for (const auto& c : chunks) {
        engine_.prefill_slot(prefilling_[c.index].slot, c.start, c.tokens, c.last);
        prompt_tokens += static_cast<int32_t>(c.tokens);
      }
      if (decode) engine_.decode_slots(static_cast<int64_t>(decoding_.size()));
      const double end = clock_.now_s();
      for (const auto& c : chunks) prefilling_[c.index].prefilled += c.tokens;
      if (decode)
        for (auto& h : decoding_) emit(h, end);
      // The iteration as it ran: its KV use before requests leave.
      record(start, end, decoders, prompt_tokens, waiting, {&decoding_, &prefilling_});
      // Finished decoders leave; the last of the block fills each hole (highest first, so the
      // one moved has not finished).
      for (size_t i = decoding_.size(); i-- > 0;) {
        if (decoding_[i].generated < trace_.requests[decoding_[i].id].output) continue;
        finish(decoding_[i], end);
        const size_t last = decoding_.size() - 1;
        if (i != last) {
          engine_.move_slot(static_cast<int64_t>(last), static_cast<int64_t>(i));
          decoding_[i] = decoding_[last];
          decoding_[i].slot = static_cast<int64_t>(i);
        }
        decoding_.pop_back();
      }
      // Prompts that ended emit their first token and join the decoders (or finish), one at a
      // time in admission order: those not yet joined stay among the prefilling, so a swap
      // finds them in the slot it needs.
      for (auto done = first_prompt_done(); done != prefilling_.end(); done = first_prompt_done()) {
        Held h = *done;
        prefilling_.erase(done);
        emit(h, end);
        if (h.generated == trace_.requests[h.id].output)
          finish(h, end);
        else
          join_decoders(h);
      }
    }
  }

  const std::vector<TokenRequest>& requests_;
  SchedulerOptions o_;
  SlottedGenerator& engine_;
  ServeClock& clock_;
  const int64_t bytes_per_position_;
  TokenServeTrace trace_;
  std::deque<size_t> waiting_;
  size_t next_arrival_ = 0, finished_ = 0;
  int64_t reserved_ = 0;
  std::vector<Held> decoding_;    // decoding_[i] in slot i
  std::vector<Held> prefilling_;  // in admission order
};

}  // namespace

std::string scheduler_name(SchedulerKind kind) {
  return kind == SchedulerKind::kStatic ? "static" : "continuous";
}

SchedulerKind parse_scheduler(const std::string& text) {
  for (SchedulerKind k : {SchedulerKind::kStatic, SchedulerKind::kContinuous})
    if (text == scheduler_name(k)) return k;
  throw UsageError(
      fmt::format("--scheduler: unknown scheduler '{}'; use static or continuous", text));
}

double RequestTrace::tpot_s() const {
  return output > 1 ? (finish_s - first_token_s) / static_cast<double>(output - 1) : kNaN;
}

int64_t slot_positions(const LengthMix& mix) {
  return mix.longest_prompt() + mix.longest_output();
}

void check_admissible(const SchedulerOptions& o, int64_t bytes_per_position, int64_t max_positions,
                      const LengthMix& mix) {
  if (o.max_batch < 1)
    throw UsageError(fmt::format("--max-batch must be at least 1, got {}", o.max_batch));
  const int64_t positions = slot_positions(mix);
  if (positions > max_positions)
    throw UsageError(fmt::format(
        "requests of up to {} prompt + {} output = {} positions exceed the model's context of {}; "
        "give shorter --prompt-tokens/--output-tokens",
        mix.longest_prompt(), mix.longest_output(), positions, max_positions));
  const int64_t need = mix.longest() * bytes_per_position;
  if (need > o.kv_budget_bytes)
    throw UsageError(fmt::format(
        "a request of {} positions needs {} of KV cache ({} per position), more than --kv-budget "
        "{}: it could never be admitted; raise --kv-budget or shorten the requests",
        mix.longest(), format_bytes(need), format_bytes(bytes_per_position),
        format_bytes(o.kv_budget_bytes)));
  if (o.kind == SchedulerKind::kContinuous && o.chunk_tokens > 0 && o.chunk_tokens <= o.max_batch)
    throw UsageError(fmt::format(
        "--chunk {} tokens per iteration leaves no room for prompts beside the decodes of up to "
        "{} requests (--max-batch); give more than {}",
        o.chunk_tokens, o.max_batch, o.max_batch));
}

TokenServeTrace serve_token_requests(const std::vector<TokenRequest>& requests,
                                     const SchedulerOptions& options, int64_t positions,
                                     SlottedGenerator& engine, ServeClock& clock) {
  PLUMB_ASSERT(std::is_sorted(requests.begin(), requests.end(),
                              [](const TokenRequest& a, const TokenRequest& b) {
                                return a.arrival_s < b.arrival_s;
                              }),
               "requests in arrival order");
  PLUMB_ASSERT(options.kv_budget_bytes > 0 && options.max_batch >= 1, "validated options");
  engine.allocate_slots(options.max_batch + 1, positions);
  return Server(requests, options, engine, clock).serve();
}

}  // namespace plumb::run
