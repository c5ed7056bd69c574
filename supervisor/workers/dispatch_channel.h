// The dispatcher's record of one channel of the worker pool (its shared memory is the
// WorkerChannel of common/shm_protocol.h), and the rules over a set of them
// that need no process: where a new worker goes, how many chunks a worker is sent, who takes over
// when a worker leaves. Pure functions of the records (unit-tested); the Dispatcher owns the
// records and acts on the answers. Not thread-safe: the dispatcher's thread only.
//
// Roles of a channel (see dispatcher.h for the life of a worker):
//   kNone ─► kLoading ─► kActive ─► kRetiring ─► (exit) kNone
//                  └───► kStandby ─(its worker retires or dies)─► kActive
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "common/shm_protocol.h"  // kInflightPerWorker: chunks in flight per worker
#include "supervisor/workers/recycle_policy.h"

namespace framemill {

enum class WorkerRole {
  kNone,      // no worker, or one that has exited
  kLoading,   // started, loading its model
  kStandby,   // loaded, waiting to replace the worker in `replaces`
  kActive,    // takes chunks
  kRetiring,  // over a soft limit: finishes its chunks, then is sent kStop
};

const char* Name(WorkerRole role);

struct DispatchChannel {
  WorkerRole role = WorkerRole::kNone;
  uint64_t generation = 0;
  uint64_t spawn_ms = 0;  // CLOCK_MONOTONIC
  uint64_t ready_ms = 0;  // CLOCK_MONOTONIC
  int gpu = -1;           // the GPU it is pinned to (settings.gpus), -1 = not pinned
  bool first_chunk_done = false;
  bool from_spare = false;  // a spare taken at the job's start (WorkerPool::Adopt)
  uint64_t model = 0;       // which of the pool's models it was started with (WorkerPool::ModelOf)
  int replaces = -1;  // a standby (loading or ready): the channel it will take over
  int standby = -1;   // an active worker near its limit: its standby's channel
  bool stop_sent = false;
  uint64_t kill_deadline_ms = 0;  // SIGTERM sent; SIGKILL when this passes (UINT64_MAX: sent)
  std::string kill_reason;
  std::string retire_reason;
  bool violated = false;  // killed for a protocol violation: its memory is not read again
  SoftLimits limits;
  std::deque<int64_t> inflight;  // chunks sent to it, oldest first
  size_t peak_index = 0;         // into DispatchStats::peaks
};

// The phase recycle_policy's Judge sees for a role.
WorkerPhase PhaseOf(WorkerRole role);

// Of `gpus`, the one with the fewest workers loading, waiting or active (retiring ones are on
// their way out); the first such on a tie; -1 if `gpus` is empty.
int LeastLoadedGpu(const std::vector<int>& gpus, const std::vector<DispatchChannel>& channels);

// The GPU a new worker is pinned to: a standby (`replaces` >= 0) takes over the GPU of the worker
// it replaces; any other goes where workers are fewest.
int GpuFor(int replaces, const std::vector<int>& gpus,
           const std::vector<DispatchChannel>& channels);

// The first channel with no role and no live process (`alive(k)`), or -1.
int FreeChannel(const std::vector<DispatchChannel>& channels,
                const std::function<bool(int)>& alive);

// Workers that serve or will: active ones and loading ones that replace nobody. A standby is not
// counted while the worker it will replace still works.
int Serving(const std::vector<DispatchChannel>& channels);

// How many more chunks to send this worker now: up to kInflightPerWorker in flight, and only to
// an active worker that is not being killed.
int ChunksWanted(const DispatchChannel& ch);

// True when the worker should be sent kStop: retiring, its chunks done, not sent yet.
bool WantsStop(const DispatchChannel& ch);

// The role of a worker that has just loaded its model: a standby waits, any other is active.
WorkerRole RoleWhenReady(const DispatchChannel& ch);

// Worker `k` leaves (retires, dies, is killed): its standby, if any, takes over now (at once if
// ready, as soon as it is ready if still loading).
void Promote(std::vector<DispatchChannel>* channels, int k);

// A move to the pool's model `current` (model_switch.h): the next active worker, not being
// killed, on another model and without a standby, to get a standby on `current`; -1 for none.
int NextToMove(const std::vector<DispatchChannel>& channels, uint64_t current);

// Whether worker k, ready as a standby on `current`, moves its worker (active, on an older model)
// over: that worker retires now, at its chunk boundary, rather than at a limit.
bool MovesOver(const std::vector<DispatchChannel>& channels, int k, uint64_t current);

// True when a worker is kept for the next job at Dispatcher::Release: active and idle, or still
// loading its model (a worker started late in a short job: killing it would make every short job
// start one again; the next job adopts it as loading).
bool KeptAtRelease(const DispatchChannel& ch);

// A worker recycled and told to stop: it leaves on its own.
bool LeavingOnItsOwn(const DispatchChannel& ch);

}  // namespace framemill
