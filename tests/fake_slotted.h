// A slotted generator with declared costs on a virtual clock, for the token-level schedulers'
// tests: a prefill call costs prefill_fixed + prefill_per_token x tokens seconds, a decode
// iteration decode_fixed + decode_per_slot x slots, and the clock advances by exactly that, so a
// schedule can be computed by hand. It checks the scheduler's use of the slots as it goes (a
// decode only over slots whose prompt is done, positions within the allocation, chunks in
// order) and counts each request's decoded tokens, carried along by move_slot.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "plumb/core/slot_generation.h"
#include "plumb/run/serve_clock.h"

namespace plumb::testing {

class VirtualClock : public run::ServeClock {
 public:
  double now_s() override { return now_; }
  void wait_until_s(double at_s) override { now_ = std::max(now_, at_s); }
  void advance(double seconds) { now_ += seconds; }

 private:
  double now_ = 0;
};

struct FakeSlotCosts {
  double prefill_fixed = 0, prefill_per_token = 0.1;
  double decode_fixed = 1.0, decode_per_slot = 0;
};

class FakeSlottedGenerator : public SlottedGenerator {
 public:
  FakeSlottedGenerator(VirtualClock& clock, FakeSlotCosts costs, int64_t bytes_per_position = 1,
                       int64_t context = 4096)
      : clock_(clock), costs_(costs), bytes_(bytes_per_position), context_(context) {}

  int64_t kv_bytes_per_position() const override { return bytes_; }
  int64_t max_positions() const override { return context_; }
  void allocate_slots(int64_t slots, int64_t positions) override {
    slots_.assign(static_cast<size_t>(slots), Slot{});
    positions_ = positions;
  }
  void prefill_slot(int64_t slot, int64_t start, int64_t tokens, bool last) override {
    Slot& s = at(slot);
    if (start == 0) s = Slot{next_id_++, 0, false, 0};
    EXPECT_EQ(s.length, start) << "a chunk starts where the previous one ended";
    EXPECT_FALSE(s.prefilled) << "no chunk after the last";
    s.length += tokens;
    s.prefilled = last;
    EXPECT_LE(s.length, positions_);
    prefill_tokens_ += tokens;
    clock_.advance(costs_.prefill_fixed + costs_.prefill_per_token * static_cast<double>(tokens));
  }
  void decode_slots(int64_t slots) override {
    for (int64_t i = 0; i < slots; ++i) {
      Slot& s = at(i);
      EXPECT_TRUE(s.prefilled) << "slot " << i << " decoded before its prompt is done";
      ++s.length;
      ++s.decoded;
      ++decoded_[s.id];
      EXPECT_LE(s.length, positions_);
    }
    decode_calls_.push_back(slots);
    clock_.advance(costs_.decode_fixed + costs_.decode_per_slot * static_cast<double>(slots));
  }
  void move_slot(int64_t from, int64_t to) override { at(to) = at(from); }
  int64_t slot_length(int64_t slot) const override {
    return slots_.at(static_cast<size_t>(slot)).length;
  }

  // Decode iterations per request (numbered in order of their first prefill call).
  const std::map<int64_t, int64_t>& decoded() const { return decoded_; }
  const std::vector<int64_t>& decode_calls() const { return decode_calls_; }
  int64_t prefill_tokens() const { return prefill_tokens_; }

 private:
  struct Slot {
    int64_t id = -1, length = 0;
    bool prefilled = false;
    int64_t decoded = 0;
  };
  Slot& at(int64_t slot) {
    EXPECT_GE(slot, 0);
    EXPECT_LT(slot, static_cast<int64_t>(slots_.size()));
    return slots_.at(static_cast<size_t>(slot));
  }
  VirtualClock& clock_;
  FakeSlotCosts costs_;
  int64_t bytes_, context_, positions_ = 0, next_id_ = 0, prefill_tokens_ = 0;
  std::vector<Slot> slots_;
  std::map<int64_t, int64_t> decoded_;
  std::vector<int64_t> decode_calls_;
};

}  // namespace plumb::testing
