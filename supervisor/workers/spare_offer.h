// The spares (WorkerPool::CreateSpares) offered to a job's first workers: a channel that starts
// one takes a spare that fits it (WorkerPool::Adopt) instead of starting a process, and the
// offer's owner is told which pool a spare was taken from. Owns the offer; the pools are not
// owned. Not thread-safe: the dispatcher's thread only.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "supervisor/workers/worker_pool.h"

namespace framemill {

class SpareOffer {
 public:
  // `on_taken` (may be empty) is called with the pool a spare was taken from.
  void Set(std::vector<WorkerPool*> spares, std::function<void(WorkerPool*)> on_taken) {
    spares_ = std::move(spares);
    on_taken_ = std::move(on_taken);
  }
  // Channel `k` of `pool` takes the first spare that fits it on `gpu`: true when one did. A
  // spare that fits but cannot be taken is logged; the caller then starts a worker.
  bool TakeInto(WorkerPool* pool, int k, int gpu);

 private:
  std::vector<WorkerPool*> spares_;
  std::function<void(WorkerPool*)> on_taken_;
};

}  // namespace framemill
