// The encode stage: `encoders` threads, encoder k taking every encoders-th segment of the range
// still to do. Each writes its segment's chunks, as the workers finish them, from the arena into
// an ffmpeg encoder (a NUT file created under a random name, fsynced, renamed into place),
// frees their slots, takes the report's stills, and records the finished segment in the
// done-log. Owns the encoder threads and their figures; meets the other stages at the arena and
// its board.
//
// Test faults: job/supervisor_hooks.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/report/report_stills.h"

namespace framemill {

struct EncodeSetup {
  const Config* config = nullptr;
  const JobPlan* plan = nullptr;
  RenderRange range;
  int encoders = 1;
  SegmentFormat format;
  JobState* state = nullptr;  // the done-log: which segments are finished, where they go
  int scratch_fd = -1;        // the scratch directory, open
  std::string scratch;        // its name, for the encoders' logs
  StillCapture* stills = nullptr;
  // After a segment is recorded finished (on its encoder's thread); `all_done`: it was the last.
  std::function<void(int64_t index, bool all_done)> on_segment;
};

class EncodeStage {
 public:
  EncodeStage(EncodeSetup setup, JobArena* arena) : s_(std::move(setup)), arena_(*arena) {}
  ~EncodeStage() { Join(); }

  void Start();
  bool Running() const { return running_.load() > 0; }
  void Join();
  // Frames handed to the encoders by this run.
  int64_t frames_written() const { return frames_written_.load(); }
  // Summed over the encoder threads; read after Join.
  double busy_s() const {
    MutexLock lock(&mu_);
    return busy_s_;
  }
  double wait_s() const {
    MutexLock lock(&mu_);
    return wait_s_;
  }

 private:
  void Loop(int encoder);
  Status EncodeSegment(const SegmentPlan& seg, int encoder, double* busy_s, double* wait_s);
  Status WriteChunks(const SegmentPlan& seg, SegmentEncoder* enc, double* busy_s, double* wait_s,
                     bool* ended);

  const EncodeSetup s_;
  JobArena& arena_;
  std::vector<std::thread> threads_;
  std::atomic<int> running_{0};
  std::atomic<int64_t> frames_written_{0};
  mutable Mutex mu_;  // between the encoder threads
  double busy_s_ GUARDED_BY(mu_) = 0;
  double wait_s_ GUARDED_BY(mu_) = 0;
};

}  // namespace framemill
