// The supervisor's decision loop for one job: hands ready chunks to workers, collects their
// results, and keeps the right number of healthy workers running. It owns the WorkerPool (through
// its roster).
//
// Worker lifecycle, per channel (the pool has two channels per wanted worker, so a replacement
// can load its model while the worker it replaces still works: warm standby):
//
//   start ──► loading ──► active ──(soft limit)──► retiring ──(drained)──► kStop ──► exit 0
//                            │  └─(hard limit / hang)──► SIGTERM ──grace──► SIGKILL
//                            └─(80% of a soft limit)──► a standby starts loading on a spare
//                               channel, waits ready, and becomes active the moment the old
//                               worker retires: the retirement costs no model-load time.
//                               (80%: kStandbyAt in recycle_policy.h)
//
// A worker that dies while active or retiring is a crash: its chunks go back to the front of
// the queue (each counts an attempt) and a replacement starts. Policy is here; the worker only
// reports: the rules are recycle_policy's Judge (one verdict per worker per pass) and
// dispatch_channel's rules over the channels. A worker that writes anything invalid into its shared
// memory (see shm_validate.h) is a protocol violation: it is SIGKILLed at once, logged and put on
// the timeline ("protocol violation: ..."), and its chunks go back like a crash's. Nothing read
// from a worker is used unchecked. Single-threaded: everything runs on the thread that calls Run().
//
// The dispatcher decides; beside it, each with state of its own: the workers' side
// (worker_roster.h: the pool, each channel's record, a worker's reports read and checked, the
// spares offered to the first workers), the chunks' side (chunk_feed.h: requests, results, a
// chunk's attempts), what the first ready worker found of the model (model_probe.h), a model the
// workers move to (model_switch.h), and when a replacement is tried again after failed starts
// (spawn_backoff.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/plan/chunk_board.h"
#include "supervisor/plan/job_plan.h"
#include "supervisor/workers/chunk_feed.h"
#include "supervisor/workers/dispatch_stats.h"
#include "supervisor/workers/model_probe.h"
#include "supervisor/workers/model_switch.h"
#include "supervisor/workers/recycle_policy.h"
#include "supervisor/workers/spawn_backoff.h"
#include "supervisor/workers/timeline.h"
#include "supervisor/workers/dispatch_channel.h"
#include "supervisor/workers/worker_pool.h"
#include "supervisor/workers/worker_roster.h"

namespace framemill {

// What the first worker to load the model found.
struct FirstWorker {
  uint32_t probe_w = 0, probe_h = 0;  // the model's output size for a kProbeSize square input
  std::string device;                 // where it runs: "cpu", "cuda:0"
  std::string sandbox;                // the sandbox it got (WorkerPool::Sandbox)
  bool warm = false;                  // it was kept loaded from the previous job (Release)
  bool spare = false;                 // it was a spare, started before the job (OfferSpares)
};

class Dispatcher {
 public:
  Dispatcher(const JobPlan& plan, const JobSettings& settings, std::unique_ptr<WorkerPool> pool,
             Timeline* timeline, uint64_t start_timeout_ms);
  ~Dispatcher();

  // Spares (WorkerPool::CreateSpares) that Start's first workers take where one fits
  // (WorkerPool::Adopt), instead of starting a process; a worker started later (a replacement,
  // a standby) is always started afresh. Not owned; to be set before Start. `on_taken` (may be
  // empty) is called with the pool a spare was taken from.
  void OfferSpares(std::vector<WorkerPool*> spares,
                   std::function<void(WorkerPool*)> on_taken = {}) {
    roster_.OfferSpares(std::move(spares), std::move(on_taken));
  }

  // Starts the job's workers and waits until one has loaded the model; returns what that one
  // found. Fails with kModelInvalid if a worker cannot load it. `beat` (may be empty) is called
  // about every kWakeIntervalMs while it waits: the job's progress report, through which a
  // cancel or the service's stop reaches `stop`, and the service's watchdog sees the job alive.
  Result<FirstWorker> Start(const std::atomic<bool>& stop,
                            const std::function<void()>& beat = nullptr);

  // Runs until every chunk is encoded or the board has failed (the failure is on the board).
  // Chunks before `first_chunk` are already done (a resumed job). `tick` is called on every
  // pass of the loop with the number of chunks processed so far (first_chunk included).
  // `arena` is the supervisor's own copy of the arena's geometry, sent with every request.
  void Run(ChunkBoard* board, const std::string& arena_name, const ArenaGeometry& arena,
           int64_t first_chunk, const std::atomic<bool>& stop,
           const std::function<void(int64_t)>& tick);

  // Stops every worker (kStop, then SIGKILL after a grace period); a worker recycled and told to
  // stop before is waited for first, and its exit recorded (the timeline's stop row).
  void Shutdown() { roster_.Shutdown(); }
  // Asks every worker to stop and returns at once (their exits, a CUDA context's teardown
  // included, overlap the mux); Shutdown then reaps them.
  void BeginShutdown() { roster_.BeginShutdown(); }

  // Stops every worker that is neither active and idle nor still loading (standby, retiring),
  // and hands the pool over with the rest (KeptAtRelease): the next job's Start adopts them.
  // Call only when no chunk is in flight.
  std::unique_ptr<WorkerPool> Release() { return roster_.Release(); }

  void Wake() { roster_.pool().Wake(); }

  // Any thread: the workers move to `offer` (model_switch.h), each at its chunk boundary.
  void OfferModel(ModelOffer offer) {
    switch_.Offer(std::move(offer));
    roster_.pool().Wake();
  }
  // Whether the workers moved to an offered model (and it was not dropped).
  bool MovedModel() const { return switch_.moving(); }

  // The live workers and their current figures.
  std::vector<WorkerSnapshot> LiveWorkers() const;
  const DispatchStats& stats() const { return stats_; }

 private:
  void NoteReady(int k);
  // Start's pieces: a ready worker's probe taken; the previous job's workers taken over (ready
  // ones up to `wanted`, loading ones beside a ready one; the rest killed, `*killed`); a worker
  // that died while loading.
  bool TakeProbe(int k, FirstWorker* first);
  int AdoptLeftWorkers(int wanted, bool* killed, FirstWorker* first);
  Status LoadFailed(const WorkerExit& e);
  void HandleExit(const WorkerExit& e);
  void CollectResults(int k);
  // Judges worker `k` (recycle_policy.h) and acts on the verdict.
  void CheckLimits(int k, uint64_t now);
  void Assign(int k);
  // The model move (model_switch.h): each active worker on an older model given a standby on
  // the pool's; a worker of the offered model that disagrees with the probe (`said`) retired,
  // and the offer dropped.
  void MoveWorkers();
  void DropModel(int k, const ProbeReport& said);

  const JobPlan& plan_;
  const JobSettings& settings_;
  DispatchStats stats_;
  WorkerRoster roster_;  // the workers' side: the pool and each channel's record
  uint64_t start_timeout_ms_;
  ChunkFeed chunks_;  // the chunks' side: requests, results, attempts
  ChunkBoard* board_ = nullptr;
  ModelProbe probe_;            // what the first ready worker found; later workers must agree
  ModelSwitch switch_;          // a model the workers move to mid-job (OfferModel)
  int load_failures_ = 0;       // workers that died while loading, since the last good chunk
  uint64_t load_ms_ = 0;        // spawn to ready of the last worker that became ready
  SpawnBackoff spawn_backoff_;  // replacements that could not be started, and the next try
};

}  // namespace framemill
