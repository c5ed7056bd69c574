// What the dispatcher counts and measures of a job's workers: starts, recycles, crashes and kills
// by kind, startup times, and each worker generation's peak figures. Filled by the Dispatcher,
// read by the job's result, the report and the metrics. Not thread-safe: one writer, and readers
// only while it does not write (see Dispatcher::stats()).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "supervisor/workers/recycle_policy.h"

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
  // did not send) or "exit" (exited unasked or with an error). The kinds are Name(RecycleLimit).
  std::map<std::string, int> kills_by_reason;
  std::map<std::string, int> crashes_by_reason;
  // The workers' out-of-memory fallbacks (worker/model/tiled_model.h), over the job's chunk
  // results: errors met, summed; the fewest items per model call and the smallest tile any worker
  // was left with (0 = none).
  int64_t fallback_events = 0;
  uint32_t fallback_per_call = 0;
  uint32_t fallback_tile = 0;
  // Adds one chunk that succeeded, `busy_s` on its worker: that worker's `first` or a later one.
  void CountChunk(double busy_s, bool first);
  // Adds one chunk result's fallback figures.
  void CountFallbacks(uint32_t events, uint32_t per_call, uint32_t tile);
  // Peak figures of each worker generation that ran, in start order.
  std::vector<WorkerSnapshot> peaks;
  // Raises peaks[index] to `now`'s figures (and its pid, when known); an index past the end (a
  // worker this job did not start) is ignored.
  void RaisePeak(size_t index, const WorkerSnapshot& now);

  // Counts a verdict the dispatcher acts on: a kill (kills, kills_by_reason, and
  // protocol_violations for kProtocol) or a recycle (recycles) by Name(verdict.limit). Keep and
  // standby verdicts count nothing.
  void Count(const RecycleVerdict& verdict);
  // Counts a worker that died unasked: `signaled` by a signal, else by its exit.
  void CountCrash(bool signaled);
};

}  // namespace framemill
