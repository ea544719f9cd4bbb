// What a generative model offers a token-level server (plumb serve on gpt2, llama): a KV cache
// divided into slots, one request per slot, each slot at its own position. A server prefills a
// request into a free slot (whole, or in chunks of its prompt), then decodes the running slots
// together, one token each per iteration, whatever their positions; a request that finishes
// frees its slot and another takes it between iterations (iteration-level scheduling, Orca
// OSDI 2022). Decoding works on the slots 0 .. n - 1, so a server keeps its running requests
// there (move_slot fills a freed slot with the last one): the cache rows a decode reads are
// then one contiguous block, read in place.
//
// Tokens are the model's own greedy choices, as in generate(); a request's prompt is synthetic
// token ids drawn by the model.
#pragma once

#include <cstdint>

#include "plumb/core/workload.h"

namespace plumb {

class SlottedGenerator {
 public:
  virtual ~SlottedGenerator() = default;

  // Bytes one position of one request takes in the KV cache (keys and values of every layer,
  // in the dtype the cache is kept in at the model's current precision).
  virtual int64_t kv_bytes_per_position() const = 0;

  // The longest request (prompt + output tokens) the model takes.
  virtual int64_t max_positions() const = 0;

  // Allocates (or reuses) the cache for `slots` requests of up to `positions` positions each,
  // and empties every slot.
  virtual void allocate_slots(int64_t slots, int64_t positions) = 0;

  // Runs prompt positions start .. start + tokens - 1 of the request in `slot` (fresh synthetic
  // ids; the slot is emptied when start is 0), writing their keys and values in place. When
  // the chunk ends the prompt (`last`), the request's first output token is chosen.
  virtual void prefill_slot(int64_t slot, int64_t start, int64_t tokens, bool last) = 0;

  // One decode iteration over slots 0 .. slots - 1, each feeding its previous token at its own
  // next position; every slot must have finished its prefill.
  virtual void decode_slots(int64_t slots) = 0;

  // Moves the request in slot `from` (its cache rows, position and last token) to slot `to`.
  virtual void move_slot(int64_t from, int64_t to) = 0;

  // Positions written in `slot`.
  virtual int64_t slot_length(int64_t slot) const = 0;
};

// The model's slotted side, or nullptr for a model a token-level server cannot drive.
inline SlottedGenerator* as_slotted(Model& model) {
  return dynamic_cast<SlottedGenerator*>(&model);
}

}  // namespace plumb
