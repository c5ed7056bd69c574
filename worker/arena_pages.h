// Page-locking a job's arena for the GPU (cudaHostRegister), on CUDA, when the job asks
// (kArenaPageLock, from its page_lock_arena), once per arena: copies to the GPU then go straight
// from shared memory (no staging through page-locked buffers). It costs 1.3-1.5 s for 4 GB on an
// H200 machine, inside the worker's first chunk of the arena. Not on a thread of its own: tried,
// the chunks meanwhile waited for it all the same (BENCHMARKS.md, "NVIDIA H200,
// `restore-1080p-b4.pt2`, warm workers keeping their arena"). A kept arena that a later job reuses
// stays page-locked; one kept unlocked is page-locked at the first request of a job that asks.
// Not asked, or failing, the copies are staged (worker/batch/batch_runner.h). Without CUDA in
// the build, nothing is ever page-locked.
#pragma once

#include "common/shared_memory.h"

namespace framemill {

class ArenaPages {
 public:
  // `channel`: the worker's, for its log lines.
  explicit ArenaPages(int channel) : channel_(channel) {}

  // Page-locks `shm` (the mapped arena) when the model runs on CUDA (`cuda`) and the job asks
  // (`wanted`), unless it is already, or failed for this arena; else logs once that its copies
  // are staged.
  void Lock(const SharedMemory& shm, bool wanted, bool cuda);
  // Gives the page-locked arena back (before it is unmapped).
  void Unregister();
  // Another arena is mapped: its page-locking (and the note) start afresh.
  void NewArena() { staged_logged_ = page_lock_failed_ = false; }
  // The arena is page-locked for the GPU: copies need no staging.
  bool registered() const { return arena_registered_; }

 private:
  int channel_;
  // Of the mapped arena: said that its copies are staged; failed to page-lock it.
  bool staged_logged_ = false, page_lock_failed_ = false;
  bool arena_registered_ = false;  // the arena is page-locked for the GPU (cudaHostRegister)
  void* registered_ptr_ = nullptr;
};

}  // namespace framemill
