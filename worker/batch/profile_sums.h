// The sums of a worker's profile (batch_profile.h), with the worker's first chunk kept apart from
// the later ones: the first chunk pays the warm-up (cuDNN's algorithm search, TorchScript's
// profiling runs, the caching allocator's first blocks), the later ones are the steady state.
// Averaged together, a short job's first chunk hides the steady state (and the steady state hides
// what the first chunk costs).
//
// Arithmetic only: no clock, no device. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace framemill {

// Milliseconds summed over a run of chunks, per stage (batch_profile.h says what each is), and
// the frames and chunks they cover.
struct StageSums {
  double upload = 0, to_model = 0, model = 0, from_model = 0, download = 0;
  // The host's copies between the arena and page-locked staging buffers (staged copies only,
  // batch_runner.h; 0 when the arena is page-locked or on the CPU). They overlap the device's work.
  double host_copy = 0;
  double span = 0;     // first upload's start to last download's end, per chunk
  double wall = 0;     // the host's time from a chunk's start until its output is complete
  double between = 0;  // the host's time between the end of a chunk and the start of the next
  // What the worker sustains when it is fed: for the chunks that did not wait for work (the next
  // request was there when the chunk before ended, or it started beside it), the time from the
  // chunk before's last output conversion to this one's, on the device; and those chunks' frames.
  // Unlike the span it counts what lies between chunks (the last download, unless it overlaps
  // the next chunk, and the host's turn), and overlapping chunks only once.
  double fed_period = 0;
  int64_t fed_frames = 0;
  int64_t frames = 0;
  int64_t chunks = 0;

  void Add(const StageSums& other);
  // "upload 0.210, to_model 0.050, model 13.900, from_model 0.070, download 0.300, host_copy
  // 0.000; chunk span 14.400, chunk wall 14.500, between chunks 0.200; fed 14.450 (310 frames)":
  // each sum per frame, in ms, the fed period per fed frame ("no frames" when there are none).
  std::string PerFrame() const;
};

class ProfileSums {
 public:
  // One finished chunk's sums (its `chunks` is taken as 1). The first call is the first chunk.
  void AddChunk(StageSums chunk);
  const StageSums& first() const { return first_; }  // the first chunk ({} before it)
  const StageSums& later() const { return later_; }  // the later chunks since ClearLater
  // The summary line, e.g.
  //   profile: first chunk: 32 frames, wall 812.000 ms, per frame ms: upload ...; later chunks:
  //   10 chunks, 320 frames, per frame ms: upload ...
  // "" before the first chunk.
  std::string Line() const;
  // After a report: the later chunks start again from nothing (the first chunk stays).
  void ClearLater() { later_ = StageSums(); }

 private:
  StageSums first_, later_;
};

}  // namespace framemill
