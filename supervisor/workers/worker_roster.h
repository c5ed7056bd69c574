// The workers' side of a job: the pool's processes and one record per channel
// (dispatch_channel.h), kept together so that a channel's record always describes the process
// on it. Starting a worker opens its record; what a worker reports is read and checked here,
// and a worker that breaks the protocol is killed here; each event is put on the timeline and
// into the job's peaks. Which worker does what (the chunks, the limits, the model's probe and
// moves) is the dispatcher's (dispatcher.h), which owns a roster.
// Not thread-safe: the dispatcher's thread only.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/workers/dispatch_channel.h"
#include "supervisor/workers/dispatch_stats.h"
#include "supervisor/workers/recycle_policy.h"
#include "supervisor/workers/spare_offer.h"
#include "supervisor/workers/timeline.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

class WorkerRoster {
 public:
  // `timeline` may be null; `stats` (the job's figures: starts, peaks, protocol kills) outlives
  // the roster.
  WorkerRoster(const JobSettings& settings, std::unique_ptr<WorkerPool> pool, Timeline* timeline,
               DispatchStats* stats);

  WorkerPool& pool() { return *pool_; }
  const WorkerPool& pool() const { return *pool_; }
  std::vector<DispatchChannel>& channels() { return channels_; }
  DispatchChannel& operator[](int k) { return channels_[static_cast<size_t>(k)]; }
  int size() const { return static_cast<int>(channels_.size()); }

  // See Dispatcher::OfferSpares.
  void OfferSpares(std::vector<WorkerPool*> spares, std::function<void(WorkerPool*)> on_taken) {
    spares_.Set(std::move(spares), std::move(on_taken));
  }

  // Starts a worker on channel k (a standby for `replaces` when >= 0: on its GPU; else where
  // workers are fewest), its record opened as loading; `may_adopt`: a fitting spare takes the
  // channel instead, when there is one.
  Status Spawn(int k, int replaces, bool may_adopt = false);
  // A new record on channel k for the worker now there (started, or left by the previous job
  // and taken over as it is), in `role`: its limits drawn, its peaks begun.
  void OpenChannel(int k, WorkerRole role);
  // A channel with no live worker and no role, or -1.
  int FreeChannel() const;

  WorkerFigures Figures(int k) const;
  // `pid`: the worker's, where the pool no longer knows it (an exit already reaped).
  void Record(int k, TimelineEventKind event, const std::string& reason = "", int pid = 0);

  // Reads and checks the worker's state and telemetry; false (and the worker killed) on a
  // violation. *state gets the checked state.
  bool CheckWorker(int k, WorkerState* state);
  // Kills worker k for writing something invalid into its shared memory, counted, logged and
  // on the timeline; its standby, if any, takes over.
  void Violation(int k, const std::string& what);
  // Worker k stops taking chunks (its retire_reason says why); its standby takes over.
  void Retire(int k);

  // Waits (up to a grace period) until no live worker is `leaving`, reaping the exits (their
  // channels cleared; a retiring worker's exit recorded).
  void AwaitExits(const std::function<bool(const DispatchChannel&)>& leaving);

  // The live workers and their last figures; `device` names where channel k's worker runs.
  std::vector<WorkerSnapshot> LiveWorkers(const std::function<std::string(int gpu)>& device) const;

  // See Dispatcher::Shutdown, BeginShutdown and Release.
  void Shutdown();
  void BeginShutdown() { pool_->AskAllToStop(); }
  std::unique_ptr<WorkerPool> Release();

 private:
  const JobSettings& settings_;
  std::unique_ptr<WorkerPool> pool_;
  std::vector<DispatchChannel> channels_;
  SpareOffer spares_;
  Timeline* timeline_;
  DispatchStats* stats_;
  std::mt19937_64 rng_;  // each worker's limits, jittered
};

}  // namespace framemill
