// Where a CUDA worker's time goes, stage by stage, measured with CUDA events: a diagnostic for
// the question "why is the worker slower than its model alone?", turned on by
// FRAMEMILL_WORKER_PROFILE=1 in the worker's environment (off: every call is a no-op).
//
// Per batch it times, on the stream each runs on: the upload (up stream), the conversion to the
// model's input, the model, the conversion of its output (compute stream) and the download (down
// stream). Per chunk: the span from the first upload's start to the last download's end on the
// device, the host's wall time in BatchRunner::Run, and the host's time between two chunks (the
// worker waiting for work). Every `kReportEvery` chunks and at destruction it logs the figures per
// frame (info level, the worker's log):
//   profile: 640 frames, per frame ms: upload 0.21, to_model 0.05, model 13.90, from_model 0.07,
//   download 0.30; chunk span 14.4, chunk wall 14.5, between chunks 0.2
// The stages overlap (that is the point of the streams): their sum exceeds the span when the
// overlap works. Timing costs a few events per batch; it is not for production runs.
//
// Not thread-safe: one per BatchRunner.
#pragma once

#include <cstdint>
#include <memory>

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
  static constexpr int kReportEvery = 10;  // chunks

  BatchProfile();  // enabled when FRAMEMILL_WORKER_PROFILE is set and not "0"
  ~BatchProfile();  // logs what is not reported yet
  BatchProfile(const BatchProfile&) = delete;
  BatchProfile& operator=(const BatchProfile&) = delete;

  bool enabled() const { return state_ != nullptr; }
  // A chunk starts (host time) with `batches` batches.
  void BeginChunk(int64_t batches);
  // Records `mark` of batch `batch` on the current CUDA stream.
  void Mark(int64_t batch, ProfileMark mark);
  // The chunk's device work is finished (the host has synchronized): reads the events.
  void EndChunk(int64_t frames);

 private:
  struct State;
  void Report();
  std::unique_ptr<State> state_;
};

}  // namespace framemill
