// The memory timeline of a job: one JSON object per line, appended as things happen, so that
// `tail -f` shows it live and the sawtooth of recycling can be plotted afterwards.
//   {"t": 12.345, "worker": 1, "gen": 7, "pid": 4242, "event": "chunk", "frames": 640,
//    "rss_mb": 812.4, "gpu_allocated_mb": 0, "gpu_reserved_mb": 0, "gpu_process_mb": 0,
//    "reason": "..."}   (gpu_process_mb: the driver's figure via NVML, 0 when unknown)
// t is seconds since the job started; gen counts workers started by the job (never reused);
// frames are the frames this worker has done. The events are TimelineEventKind's, by Name().
// Thread safety: one writer thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/shm_validate.h"
#include "common/status.h"

namespace framemill {

// What happened to a worker. Name() is the "event" string of the JSON line.
enum class TimelineEventKind {
  kStart,    // "start": spawned (reason: whose standby it is, its GPU)
  kReady,    // "ready": the model is loaded
  kChunk,    // "chunk": a chunk is done
  kRecycle,  // "recycle": a soft limit was hit; it takes no more chunks
  kStop,     // "stop": a recycled worker left cleanly
  kExit,     // "exit": a worker the supervisor killed has exited
  kCrash,    // "crash": died unasked
  kKill,     // "kill": killed for a hard limit, a hang, a start timeout or a protocol violation
};

const char* Name(TimelineEventKind kind);

struct TimelineEvent {
  int worker = -1;
  uint64_t generation = 0;
  int pid = 0;
  TimelineEventKind kind = TimelineEventKind::kStart;
  uint64_t frames = 0;
  uint64_t rss_bytes = 0;
  uint64_t gpu_allocated_bytes = 0;
  uint64_t gpu_reserved_bytes = 0;
  uint64_t gpu_process_bytes = 0;  // NVML; 0 = unknown
  std::string reason;
};

// A worker's event with its last telemetry's figures.
TimelineEvent WorkerTimelineEvent(int worker, uint64_t generation, int pid, TimelineEventKind kind,
                                  const TelemetrySnapshot& t, const std::string& reason);

// An event as recorded: `t_s` seconds since the job started.
struct TimelineRecord {
  double t_s = 0;
  TimelineEvent event;
};

class Timeline {
 public:
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Starts a new file at `path` (truncating). A timeline that is not open records nothing.
  Status Open(const std::string& path, uint64_t start_ms);
  // Writes into the open file `fd` (taken over; `path` is its name, for reports).
  Status Adopt(int fd, const std::string& path, uint64_t start_ms);
  void Record(const TimelineEvent& e, uint64_t now_ms);
  const std::string& path() const { return path_; }
  // Every event recorded while open, in order (for the job report). Read it only when the
  // writer thread is done.
  const std::vector<TimelineRecord>& records() const { return records_; }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t start_ms_ = 0;
  std::vector<TimelineRecord> records_;
};

}  // namespace framemill
