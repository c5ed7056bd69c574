// A model the job's workers move to while the job runs: the compiled engine built beside the job
// (supervisor/job/engine_beside.h), handed over from the builder's thread and taken by the
// dispatcher's at its next pass. The dispatcher then starts every later worker on it, gives each
// active worker on the old model a standby on the new one, and retires the old worker at its
// chunk boundary once the standby has loaded (its chunks in flight finish on the old model: no
// chunk is lost or done twice; the rules are dispatch_channel's NextToMove and MovesOver). An
// offer whose workers do not scale the frame as the model did (ModelProbe), or one a worker dies
// on (loading it or running it), is dropped, and the job goes on with the model it started with.
//
// Thread safety: Offer from any thread; everything else on the dispatcher's thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "common/checked_file.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

struct ModelOffer {
  UniqueFd model;     // open and checked (a compiled engine from the cache)
  std::string label;  // for logs and the timeline: "the compiled engine <id>"
  // The input its workers probe it with: a compiled engine takes the job's frame and batch alone.
  uint32_t probe_width = 0, probe_height = 0, probe_batch = 1;
};

class ModelSwitch {
 public:
  // Any thread: hands `offer` to the dispatcher (a later offer replaces one not yet taken).
  void Offer(ModelOffer offer);
  // The offer not yet taken, if any, into `pool` (WorkerPool::SwitchModel): workers started from
  // now on run it. False when there was none, it could not be taken (logged), or a model was
  // dropped before.
  bool TakeInto(WorkerPool* pool);
  // The model moved to is dropped (`why`, logged) and never taken again: the pool has its first
  // model again, and workers already on the dropped one move back (NextToMove, as for an offer).
  void Drop(WorkerPool* pool, const std::string& why);

  bool moving() const { return moving_; }
  bool dropped() const { return dropped_; }
  const std::string& label() const { return label_; }

 private:
  std::mutex mu_;
  std::optional<ModelOffer> pending_;  // guarded by mu_
  std::string label_;
  bool moving_ = false;
  bool dropped_ = false;
};

}  // namespace framemill
