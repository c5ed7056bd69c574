// The mux that follows the render. Started with the job, its ffmpeg joins each segment as soon as
// that segment and every one before it are finished, and writes the output (under its hidden
// partial name, as MuxAndVerify does) while the frames are still rendered. At the job's end only
// the last segment's join, the container's trailer and the verification are left: the join of
// the rest overlapped the render (BENCHMARKS.md, "The mux beside the render").
//
// How: the concat list names one named pipe per segment (feed-<index>.nut, mode 0600, in the
// job's private scratch directory). The concat demuxer opens each pipe only once it has read the
// one before to its end; the mux's own thread copies each finished segment file into its pipe,
// in order. The command is MuxAndVerify's join, with the same list durations and the same
// carried streams, so the output's packets are the same bytes.
//
// For the whole job of a constant-rate source (UsesLiveMux): a variable-frame-rate source is
// retimed after the join (output_muxer.cpp), and a part of a job has no output of its own.
//
// A mux that is abandoned (the job failed or was stopped) kills its ffmpeg and removes its
// partial output and pipes. The partial output's name is kept in the scratch directory
// (partial-output.note, CreatePartialOutput in output_muxer.h) while it exists, so that a service that died mid-job removes it when the
// job runs again with the same workspace.
//
// Thread safety: SegmentReady from any thread; Start, Finish and the destructor from the owner's.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/media/output_muxer.h"

namespace framemill {

// Whether a job's mux can follow its render: a constant-rate source (`constant_rate`), writing
// the whole job's output (not a part of it), asked for (the job's live_mux).
bool UsesLiveMux(bool asked, bool whole_job, bool constant_rate);

class LiveMux {
 public:
  // Starts the mux's thread, which creates the pipes, the list and the partial output and
  // starts ffmpeg. rq.segments and rq.segment_frames: every segment of the output, in order, as
  // they will be on disk; rq.source_carried: the source's streams (required: the join's plan
  // needs them before the first segment).
  static std::unique_ptr<LiveMux> Start(MuxRequest rq);
  // A mux not finished is abandoned: its ffmpeg killed and reaped, the partial output, the
  // pipes and the list removed.
  ~LiveMux();
  LiveMux(const LiveMux&) = delete;
  LiveMux& operator=(const LiveMux&) = delete;

  // Segment `index` is finished on disk (renamed into place, synced). Each once, in any order.
  void SegmentReady(size_t index);

  // Waits for ffmpeg to have joined every segment (all must have been made ready: else
  // kInternal), then verifies the output and renames it into place (PlaceOutput). An error: the
  // output is not there, and the caller may join the segments again with MuxAndVerify.
  Status Finish();

 private:
  explicit LiveMux(MuxRequest rq);
  void Run();  // the mux's thread
  Status Prepare();
  Status Feed(size_t index);
  // Waits (with mu_ not held) until segment `index` is ready; false when abandoned.
  bool WaitReady(size_t index) EXCLUDES(mu_);
  // The write end of pipe `index`, opened once ffmpeg has opened its read end.
  Result<UniqueFd> OpenPipe(size_t index);
  bool ChildExited() const REQUIRES(mu_);  // ffmpeg has exited (not yet reaped)
  void KillChild() REQUIRES(mu_);
  void Cleanup();

  MuxRequest rq_;
  std::thread thread_;

  Mutex mu_;
  CondVar cv_;
  std::vector<bool> ready_ GUARDED_BY(mu_);
  bool abandoned_ GUARDED_BY(mu_) = false;
  int pid_ GUARDED_BY(mu_) = -1;  // ffmpeg, while not reaped
  // Set by the thread before it ends; read by Finish after the join.
  Status outcome_;
  std::optional<JoinPlan> join_;
  std::optional<CreatedFile> partial_;
  std::vector<std::string> pipes_;  // names in the scratch directory, made by Prepare
  bool placed_ = false;
};

}  // namespace framemill
