// The in-process meeting point of a job's three supervisor threads: the decoder fills arena
// slots and posts chunks as ready, the dispatcher hands ready chunks to workers and marks them
// processed, the encoder takes processed chunks in order and frees their slots.
//
// Arena slots are owned here: a slot belongs to exactly one chunk from AcquireSlot until
// ReleaseSlot. Decoding ahead is bounded by the number of slots, so memory is bounded by the
// arena's size, not by the video's length.
//
// Thread-safe. Blocking calls (AcquireSlot, WaitProcessed) return early (nullopt / false) once
// Fail() was called: a stop or a cancelled job is a Fail() with kCancelled.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace framemill {

class ChunkBoard {
 public:
  ChunkBoard(int64_t chunk_count, uint32_t slot_count);

  // Decoder: blocks until a slot is free.
  std::optional<uint32_t> AcquireSlot();
  // Decoder: the chunk's input frames are in `slot`.
  void MarkDecoded(int64_t chunk, uint32_t slot);

  // Dispatcher: the oldest ready chunk, if any (non-blocking).
  std::optional<int64_t> TakeReady();
  // Dispatcher: puts a chunk back at the front of the queue (its worker died).
  void Requeue(int64_t chunk);
  // Dispatcher: the chunk's output frames are in its slot.
  void MarkProcessed(int64_t chunk);
  // MonotonicUs() of the latest MarkProcessed (0: none yet).
  uint64_t last_processed_us() const;

  uint32_t SlotOf(int64_t chunk) const;

  // Encoder: blocks until `chunk` is processed.
  bool WaitProcessed(int64_t chunk);
  // Encoder: the chunk is encoded; its slot is free again.
  void ReleaseSlot(int64_t chunk);
  // Encoder: every chunk is encoded.
  void MarkAllEncoded();
  bool AllEncoded() const;

  // Any thread: stops the job; the first failure is kept.
  void Fail(const Status& status);
  // Called once, with the first failure, on the thread that failed (mu_ not held), before any
  // blocked call returns for it. Set before the board is shared with other threads.
  void SetFailureListener(std::function<void(const Status&)> listener) {
    on_failure_ = std::move(listener);
  }
  Status failure() const;
  bool failed() const;

  // Threads blocked now in AcquireSlot or WaitProcessed (waiting for a slot or a chunk). Lets a
  // test wait until a call blocks instead of sleeping and hoping it has.
  int blocked() const;

 private:
  // One wait on `cv` (mu_ let go meanwhile), counted in blocked_ while it waits.
  void WaitOnce(CondVar* cv) REQUIRES(mu_) {
    ++blocked_;
    cv->Wait(&mu_);
    --blocked_;
  }

  mutable Mutex mu_;
  CondVar slot_freed_;
  CondVar processed_;
  std::vector<uint32_t> free_slots_ GUARDED_BY(mu_);
  std::deque<int64_t> ready_ GUARDED_BY(mu_);
  std::vector<uint32_t> slot_of_ GUARDED_BY(mu_);
  std::vector<bool> processed_flags_ GUARDED_BY(mu_);
  bool all_encoded_ GUARDED_BY(mu_) = false;
  uint64_t last_processed_us_ GUARDED_BY(mu_) = 0;
  int blocked_ GUARDED_BY(mu_) = 0;
  Status failure_ GUARDED_BY(mu_);
  std::function<void(const Status&)> on_failure_;  // set before sharing: read-only after
};

}  // namespace framemill
