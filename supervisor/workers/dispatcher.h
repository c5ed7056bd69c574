// The supervisor's decision loop for one job: hands ready chunks to workers, collects their
// results, and keeps the right number of healthy workers running. It owns the WorkerPool.
//
// Worker lifecycle, per channel (the pool has two channels per wanted worker, so a replacement
// can load its model while the worker it replaces still works: warm standby):
//
//   start ──► loading ──► active ──(soft limit)──► retiring ──(drained)──► kStop ──► exit 0
//                            │  └─(hard limit / hang)──► SIGTERM ──grace──► SIGKILL
//                            └─(80% of a soft limit)──► a standby starts loading on a spare
//                               channel, waits ready, and becomes active the moment the old
//                               worker retires: the retirement costs no model-load time.
//
// A worker that dies while active or retiring is a crash: its chunks go back to the front of
// the queue (each counts an attempt) and a replacement starts. Policy is here; the worker only
// reports. A worker that writes anything invalid into its shared memory (see shm_validate.h) is
// a protocol violation: it is SIGKILLed at once, logged and put on the timeline ("protocol
// violation: ..."), and its chunks go back like a crash's. Nothing read from a worker is used
// unchecked. Single-threaded: everything runs on the thread that calls Run().
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/plan/chunk_board.h"
#include "supervisor/plan/job_plan.h"
#include "supervisor/workers/recycle_policy.h"
#include "supervisor/workers/timeline.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

// One worker's figures (current, or peaks).
struct WorkerSnapshot {
  int worker = 0;
  uint64_t generation = 0;
  int pid = 0;
  uint64_t frames = 0;
  uint64_t rss_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  // Where it runs: "cuda:N" for a worker pinned to GPU N (settings.gpus), else the device the
  // first worker reported ("cpu", "cuda:0") when it has that form, else the configured device.
  // Set by LiveWorkers only.
  std::string device;
};

struct DispatchStats {
  int workers_started = 0;
  int crashes = 0;              // workers that died unasked
  int kills = 0;                // workers killed for a hard limit or a hang
  int chunk_retries = 0;        // chunks sent again
  int protocol_violations = 0;  // workers killed for writing invalid shared memory
  // The workers' time on chunks that succeeded: spawn to ready (process, CUDA context, model
  // load, probe) of each worker, each worker's first chunk, and the sum of all later chunks
  // (a restart costs the first two, less a later chunk).
  std::vector<double> ready_s;
  std::vector<double> first_chunk_s;
  double later_chunk_s_sum = 0;
  int64_t later_chunks = 0;
  // All workers' time on chunks that succeeded, summed.
  double WorkerBusySeconds() const;
  // Those figures summed up, in ms: ready_median, ready_max, first_chunk_median,
  // later_chunk_mean (0 where nothing was measured).
  std::map<std::string, double> StartupFigures() const;
  // The same as one line: "spawn to ready median 900 ms (max 1292); first chunk median 410 ms,
  // later chunks 290 ms".
  std::string StartupSummary() const;
  std::map<std::string, int> recycles;  // by kind of reason: "rss", "gpu", "max_chunks"
  // The same counts by kind, each a small closed set (metrics labels): kills by "rss", "gpu",
  // "hang", "start_timeout", "protocol"; crashes by "signal" (killed by a signal the supervisor
  // did not send) or "exit" (exited unasked or with an error).
  std::map<std::string, int> kills_by_reason;
  std::map<std::string, int> crashes_by_reason;
  // Peak figures of each worker generation that ran, in start order.
  std::vector<WorkerSnapshot> peaks;
};

// What the first worker to load the model found.
struct FirstWorker {
  uint32_t probe_w = 0, probe_h = 0;  // the model's output size for a kProbeSize square input
  std::string device;                 // where it runs: "cpu", "cuda:0"
  std::string sandbox;                // the sandbox it got (WorkerPool::Sandbox)
};

class Dispatcher {
 public:
  Dispatcher(const JobPlan& plan, const JobSettings& settings, std::unique_ptr<WorkerPool> pool,
             Timeline* timeline, uint64_t start_timeout_ms);
  ~Dispatcher();

  // Starts the job's workers and waits until one has loaded the model; returns what that one
  // found. Fails with kModelInvalid if a worker cannot load it.
  Result<FirstWorker> Start(const std::atomic<bool>& stop);

  // Runs until every chunk is encoded or the board has failed (the failure is on the board).
  // Chunks before `first_chunk` are already done (a resumed job). `tick` is called on every
  // pass of the loop with the number of chunks processed so far (first_chunk included).
  // `arena` is the supervisor's own copy of the arena's geometry, sent with every request.
  void Run(ChunkBoard* board, const std::string& arena_name, const ArenaGeometry& arena,
           int64_t first_chunk, const std::atomic<bool>& stop,
           const std::function<void(int64_t)>& tick);

  // Stops every worker (kStop, then SIGKILL after a grace period).
  void Shutdown();

  // Stops every worker that is not active and idle (loading, standby, retiring), and hands the
  // pool over with the idle ones still loaded. Call only when no chunk is in flight.
  std::unique_ptr<WorkerPool> Release();

  void Wake() { pool_->Wake(); }

  // The live workers and their current figures.
  std::vector<WorkerSnapshot> LiveWorkers() const;
  const DispatchStats& stats() const { return stats_; }

 private:
  enum class Role { kNone, kLoading, kStandby, kActive, kRetiring };
  struct Channel {
    Role role = Role::kNone;
    uint64_t generation = 0;
    uint64_t spawn_ms = 0;
    uint64_t ready_ms = 0;
    int gpu = -1;  // the GPU it is pinned to (settings.gpus), -1 = not pinned
    bool first_chunk_done = false;
    int replaces = -1;  // a standby (loading or ready): the channel it will take over
    int standby = -1;   // an active worker near its limit: its standby's channel
    bool stop_sent = false;
    uint64_t kill_deadline_ms = 0;  // SIGTERM sent; SIGKILL when this passes
    std::string kill_reason;
    std::string retire_reason;
    bool violated = false;  // killed for a protocol violation: its memory is not read again
    SoftLimits limits;
    std::deque<int64_t> inflight;
    size_t peak_index = 0;  // into stats_.peaks
  };

  Status Spawn(int k, int replaces);
  WorkerFigures Figures(int k) const;
  void Record(int k, const std::string& event, const std::string& reason = "");
  void NoteReady(int k);
  void HandleExit(const WorkerExit& e);
  void CollectResults(int k);
  // Reads and checks the worker's state and telemetry; false (and the worker killed) on a
  // violation. *state gets the checked state.
  bool CheckWorker(int k, WorkerState* state);
  void Violation(int k, const std::string& what);
  void ChunkFailed(int64_t chunk, const std::string& why, StatusCode code);
  void CheckLimits(int k, uint64_t now);
  void Retire(int k);
  void Promote(int k);
  void Assign(int k);
  int FreeChannel() const;
  int LeastLoadedGpu() const;  // of settings.gpus, the one with the fewest workers; -1 if none
  int Serving() const;         // workers loading or active, not retiring

  const JobPlan& plan_;
  const JobSettings& settings_;
  std::unique_ptr<WorkerPool> pool_;
  Timeline* timeline_;
  uint64_t start_timeout_ms_;
  std::vector<Channel> channels_;
  std::vector<int> attempts_;  // by chunk
  std::mt19937_64 rng_;
  ChunkBoard* board_ = nullptr;
  std::string arena_name_;
  ArenaGeometry arena_;  // our own copy
  uint32_t probe_w_ = 0, probe_h_ = 0;
  std::string device_;           // unpinned workers' device label (WorkerSnapshot::device)
  int64_t processed_ = 0;        // chunks whose output is in the arena
  int load_failures_ = 0;        // workers that died while loading, since the last good chunk
  uint64_t load_ms_ = 0;         // spawn to ready of the last worker that became ready
  uint64_t spawn_retry_ms_ = 0;  // no replacement is started before this (after a failed spawn)
  int spawn_failures_ = 0;       // replacements that could not be started, in a row
  DispatchStats stats_;
};

}  // namespace framemill
