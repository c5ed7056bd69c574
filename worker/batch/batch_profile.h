// Where a worker's time goes, stage by stage: a diagnostic for the question "why is the worker
// slower than its model alone?", turned on by FRAMEMILL_WORKER_PROFILE=1 in the worker's
// environment (off: every call returns at its first test, nothing is allocated or timed).
//
// Per batch it times the upload (up stream), the conversion to the model's input, the model, the
// conversion of its output (compute stream) and the download (down stream). On CUDA with CUDA
// events, each on the stream it runs on; on the CPU, where the steps run in line, with the host's
// monotonic clock (no upload or download there: they read 0). With staged copies (an arena not
// page-locked) also the host's copies between the arena and the staging buffers. Per chunk: the
// span from the first batch's first mark to the last batch's last, the host's wall time from the
// chunk's start until its output is complete, and the host's time between two chunks (the worker
// waiting for work).
//
// The worker's first chunk is summed apart from the later ones (profile_sums.h): it pays the
// warm-up (cuDNN's algorithm search, TorchScript's profiling runs), the later ones show the
// steady state. Every `kReportEvery` later chunks, and at destruction when something is not
// reported yet, it logs one line (info level, the worker's log), figures per frame in ms:
//   profile: first chunk: 32 frames, wall 812.000 ms, per frame ms: upload 0.210, to_model 0.050,
//   model 24.900, from_model 0.070, download 0.300; chunk span 25.300, chunk wall 25.375, between
//   chunks 0.000; later chunks: 10 chunks, 320 frames, per frame ms: upload 0.210, ...
// The stages overlap on CUDA (that is the point of the streams): their sum exceeds the span when
// the overlap works. Timing costs a few events per batch; it is not for production runs.
//
// Not thread-safe: one per BatchRunner.
#pragma once

#include <cstdint>
#include <memory>

#include "worker/batch/profile_sums.h"

namespace framemill {

enum class ProfileMark {
  kUploadStart,
  kUploadEnd,
  kToModelStart,
  kModelStart,
  kModelEnd,
  kFromModelEnd,
  kDownloadStart,
  kDownloadEnd,
  kCount
};

class BatchProfile {
 public:
  static constexpr int kReportEvery = 10;  // later chunks

  // FRAMEMILL_WORKER_PROFILE is set and not "0".
  static bool EnabledByEnvironment();

  // `on_device`: the marks are recorded on the current CUDA stream (CUDA builds; without CUDA the
  // profile stays off), else read from the host's monotonic clock.
  explicit BatchProfile(bool on_device, bool enabled = EnabledByEnvironment());
  ~BatchProfile();  // logs what is not reported yet
  BatchProfile(const BatchProfile&) = delete;
  BatchProfile& operator=(const BatchProfile&) = delete;

  bool enabled() const { return state_ != nullptr; }
  // A chunk starts (host time) with `batches` batches. Two chunks may be open at once: one whose
  // last download still runs while the next one starts (batch_runner.h, "Chunks back to back").
  void BeginChunk(int64_t batches);
  // Records `mark` of batch `batch` of the newest open chunk (on the current CUDA stream, or the
  // host's clock).
  void Mark(int64_t batch, ProfileMark mark);
  // The host spent `ms` copying between the arena and a staging buffer (staged copies), in the
  // newest open chunk.
  void AddHostCopy(double ms);
  // The oldest open chunk's work is finished (on CUDA: the host has synchronized with it): reads
  // its marks. Its wall time runs from its start to this call.
  void EndChunk(int64_t frames);
  // The newest (or the oldest) open chunk failed: it is dropped, not summed.
  void AbandonChunk(bool oldest = false);
  // The sums so far (the later chunks' since the last report); null when off.
  const ProfileSums* sums() const;

 private:
  struct State;
  void Report();
  std::unique_ptr<State> state_;
};

}  // namespace framemill
