// The service's metrics in the Prometheus text exposition format (version 0.0.4), written as a
// file for the node exporter's textfile collector: no listening socket, nothing new to secure.
//
// RenderMetrics is a pure function of a plain struct of figures; WriteMetricsFile puts its text
// in place atomically, so a reader (the node exporter, a test) sees the old file or the new one,
// never a torn one. Metric names are stable (`framemill_...`, units in the names); every label
// value comes from a small closed set or from the service's own configuration, so the number of
// series stays bounded. Counters count since the service process started (they restart at 0
// with it, as Prometheus's rate() expects).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

// What the service counts in a worker's life. Counted by reason, each a small closed set:
// recycle: rss | gpu | max_chunks; kill: rss | gpu | hang | start_timeout | protocol;
// crash: signal | exit (see DispatchStats).
enum class WorkerEvent { kRecycle, kCrash, kKill };
const char* Name(WorkerEvent event);  // "recycle", "crash", "kill"

// The reasons of `event`, in the order they are written. A count under any other reason is
// written as "other".
const std::vector<std::string>& WorkerEventReasons(WorkerEvent event);

// Counts of worker events: event -> reason -> count.
using WorkerEventCounts = std::map<WorkerEvent, std::map<std::string, int64_t>>;

// One live worker's memory (bytes) and where it runs.
struct WorkerMemory {
  int slot = 0;            // the worker's slot in the job (0 .. workers-1, standbys above)
  std::string device;      // "cpu", "cuda:N", or the configured device (WorkerSnapshot::device)
  uint64_t rss_bytes = 0;  // host resident set, current
  uint64_t gpu_reserved_bytes = 0;  // CUDA caching allocator, reserved, current
};

// Everything the metrics file says. Job counts are the spool's, read when the file is written.
struct MetricsFigures {
  bool up = true;             // false in the last file a stopping service writes
  std::string version;        // framemill's version (framemill_build_info)
  double start_time_s = 0;    // when the service started, Unix seconds (wall clock)
  int64_t jobs_incoming = 0;  // spool states: every one is written, 0 included
  int64_t jobs_active = 0;
  int64_t jobs_done = 0;
  int64_t jobs_failed = 0;
  double oldest_waiting_age_s = 0;  // wall-clock age of the oldest job in incoming/; 0 if none
  int64_t frames_processed = 0;     // frames through the model since the service started
  int64_t gpus_busy = 0;            // the service's GPUs (config service_gpus) running jobs hold
  int64_t gpus_free = 0;            // and those free; both 0 without service_gpus
  int64_t spare_workers = 0;        // spares started and waiting for a job (config spare_workers)
  int64_t jobs_waiting_for_space = 0;  // running jobs paused on a full disk (job/space_wait.h)
  bool spool_full = false;             // the spool's file system is full: claiming paused
  double job_fps = 0;               // the running jobs' frames per second in this run, summed
  WorkerEventCounts worker_events;  // since the service started
  std::vector<WorkerMemory> workers;  // the running jobs' live workers; empty when idle
};

// Escapes a label value as the text format requires: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);

// The exposition text: a HELP and a TYPE line for every metric, then its samples. Every spool
// state and every (event, reason) pair has a sample, 0 included; per-GPU memory is the sum of
// the live workers' reserved memory on each "cuda..." device.
std::string RenderMetrics(const MetricsFigures& figures);

// Writes `text` to `path` atomically (common/file_util.h) with mode 0644, whatever the umask:
// the node exporter runs as another user. The file's directory must exist.
Status WriteMetricsFile(const std::string& path, const std::string& text);

}  // namespace framemill
