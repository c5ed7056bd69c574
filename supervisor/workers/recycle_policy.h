// The supervisor's rule for replacing a worker, as one pure function of what the worker reported
// and what the supervisor tracks of it (so it can be tested without processes). Soft limits retire
// a worker between chunks, and near one (kStandbyAt of it) a replacement starts loading; hard
// limits, a missing heartbeat and a model that does not load in time kill it.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "common/config.h"

namespace framemill {

// The fraction of a soft limit at which a worker's warm standby starts loading.
inline constexpr double kStandbyAt = 0.8;

// What a worker last reported (bytes, counts, CLOCK_MONOTONIC ms).
struct WorkerFigures {
  uint64_t rss_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t chunks_done = 0;
  uint64_t heartbeat_ms = 0;
  bool busy = false;  // holds at least one chunk
};

// One worker's soft limits after jitter; 0 = off.
struct SoftLimits {
  uint64_t rss_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t max_chunks = 0;
};

// Where a worker is in its life, as far as the rule cares. A loading worker is judged only by
// the start timeout; an active one by every limit; a standby or a retiring one (or one the
// supervisor took over idle) by the hard limits and the heartbeat only.
enum class WorkerPhase { kLoading, kActive, kOther };

// What the supervisor tracks of a worker besides its figures (CLOCK_MONOTONIC ms).
struct WorkerStanding {
  WorkerPhase phase = WorkerPhase::kActive;
  uint64_t spawn_ms = 0;          // when it was started
  uint64_t ready_ms = 0;          // when it loaded the model (its chunk pace is measured from it)
  uint64_t start_timeout_ms = 0;  // a loading worker older than this is killed
  uint64_t load_ms = 0;      // spawn to ready of the last worker that became ready; 0 = none yet
  bool has_standby = false;  // a standby for it is loading or waiting already
  // Chunks of the run not yet processed, its own in flight included: a worker with room for all
  // of them never reaches max_chunks in this run, so it gets no standby for that limit (one
  // started near a job's end loads a model for nothing). UINT64_MAX: not known.
  uint64_t run_chunks_left = UINT64_MAX;
};

// What the rule tells the supervisor to do with a worker.
enum class RecycleAction {
  kKeep,          // nothing to do
  kStartStandby,  // near a soft limit: start its replacement loading (warm standby)
  kRecycle,       // over a soft limit: take no more chunks, stop when its chunks are done
  kKill,          // SIGTERM now, SIGKILL after kill.grace_s
};

// The limit behind a verdict. Name() is the word that counts recycles and kills by kind in
// result.json and the metrics (a small closed set: metrics labels).
enum class RecycleLimit {
  kNone,          // "none": a kKeep verdict
  kGpuReserved,   // "gpu": the CUDA caching allocator's reserved bytes
  kRss,           // "rss": the resident set
  kMaxChunks,     // "max_chunks": chunks done
  kHang,          // "hang": no heartbeat for hang_timeout_s while it holds a chunk
  kStartTimeout,  // "start_timeout": the model not loaded within worker_start_timeout_s
  kProtocol,      // "protocol": invalid shared memory (decided by shm_validate.h, not by Judge)
};

const char* Name(RecycleAction action);
const char* Name(RecycleLimit limit);

struct RecycleVerdict {
  RecycleAction action = RecycleAction::kKeep;
  RecycleLimit limit = RecycleLimit::kNone;
  // The figure that crossed the threshold, in the limit's unit: bytes (gpu, rss), chunks
  // (max_chunks), ms (hang: since the last heartbeat; start_timeout: since the spawn). For
  // kStartStandby the threshold is the lowered one that starts the standby.
  uint64_t figure = 0;
  uint64_t threshold = 0;
  // For people and logs, e.g. "rss 812 MiB over the soft limit 800 MiB", "ran 10 chunks
  // (max_chunks 10)" (a jittered limit: "ran 9 chunks, its limit (max_chunks 10 less jitter)"; a
  // standby: "ran 8 of its 10 chunks"), "no heartbeat for 31.0 s (hang_timeout_s 30.0)", "model
  // not loaded within worker_start_timeout_s". Empty for kKeep.
  std::string reason;
};

// Lowers each configured soft limit by a random fraction in [0, jitter).
SoftLimits JitteredLimits(const RecycleSettings& settings, std::mt19937_64& rng);

// The one decision about a worker, taken on every pass of the dispatcher. In order: a loading
// worker past its start timeout is killed; otherwise a hard limit (gpu reserved, then rss) or a
// busy worker's silence past hang_timeout_s kills it; an active worker over a soft limit (gpu
// reserved, then rss, then max_chunks) is recycled; an active worker without a standby, with
// recycle.warm_standby on, gets one when it reaches kStandbyAt of a soft limit (of max_chunks:
// kStandbyAt of it and at least two chunks before the end, earlier still when a model load, at
// the worker's measured chunk pace, would not end before its last chunk). `now_ms` is
// CLOCK_MONOTONIC.
RecycleVerdict Judge(const SoftLimits& limits, const JobSettings& settings,
                     const WorkerFigures& figures, const WorkerStanding& standing, uint64_t now_ms);

}  // namespace framemill
