// One run of a job (RunJob makes another after a crash it retries): its stages started in order
// and joined, whatever the outcome. Prepare (paths, probe, plan, done-log), the face pass, the
// workers with the arena (made while they start, from a guess of its geometry, and decoded into
// at once: the early decoder; decode_thread.h), then the pipeline (decode stage -> dispatcher and workers ->
// encode stage, meeting at the arena's chunk board), then the output (joined, verified, in
// place) or, for a part, its segments alone; the report for a job that started workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/mutex.h"
#include "common/status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/job/decode_stage.h"
#include "supervisor/job/decode_thread.h"
#include "supervisor/job/encode_stage.h"
#include "supervisor/job/engine_beside.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_options.h"
#include "supervisor/job/job_output.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/job_workers.h"
#include "supervisor/job/output_plan.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/job/space_wait.h"
#include "supervisor/report/job_result.h"
#include "supervisor/report/report_stills.h"
#include "supervisor/workers/timeline.h"

namespace framemill {

// Times the stages one after another: each Lap is the time since the last.
class StageClock {
 public:
  StageClock();
  void Lap(double* into);

 private:
  uint64_t last_us_;
};

class JobRun {
 public:
  JobRun(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
         const JobOptions& options, JobFiles* files);
  // A decoder still running (a run that ended early) is stopped and joined.
  ~JobRun();

  // The pipeline, then the report (for a job that started workers, whatever the outcome).
  Result<JobReport> Run();
  // The worker counts of this run (empty when it started no workers).
  DispatchStats Dispatch() const;
  // Segments finished in the scratch directory, resumed ones included (0 before it was read).
  int64_t SegmentsDone() const { return state_ ? state_->done() : 0; }
  // What the run estimated it still had to write, once it got that far (CheckFreeSpace).
  const std::optional<SpaceNeeded>& SpaceNeed() const { return space_need_; }
  // The free space read when the run failed with kNoSpace, before its teardown (stopping the
  // workers, joining the threads), the lowest if it was read more than once: space freed during
  // the teardown must count as returned (space_wait.h).
  std::optional<SpaceReading> SpaceAtFailure() const EXCLUDES(space_mu_) {
    MutexLock lock(&space_mu_);
    return space_at_failure_;
  }
  // Its decoder ended before the frames the packets promised (DecodeFigures::ended_short).
  bool DecodedShort() const { return decoded_short_; }

 private:
  Result<JobReport> RunPipeline();
  Status Prepare();
  Status FindFaces();
  Status StartStages();
  void StartEngineBeside();  // when the job has an engine to build (PreparedJob)
  // The output's size and geometry from the workers' probe, and the arena they need in place
  // (DecodeThread::Settle).
  Status MakeArena(const FirstWorker& first);
  // Waits for the decoder; its figures go into the report.
  void JoinDecoder();
  DecodeSetup DecodeSetupFor() const;
  Status ArenaReady();
  Status CheckFreeSpace();
  Status RunFrames();
  void StartingBeat();  // progress while the face pass runs and the workers start
  void Tick(int64_t processed);
  Result<JobReport> Finish(uint64_t t0);
  SegmentList Segments() const;
  EncodeSetup EncodeSetupFor();
  void FillReport(uint64_t t0);
  // Reads the free space for SpaceAtFailure when `s` is kNoSpace (any thread).
  void NoteSpaceAtFailure(const Status& s) EXCLUDES(space_mu_);
  void WriteReport(Result<JobReport>* result);

  const JobSpec& job_;
  const Config& config_;
  const JobSettings& settings_;
  const std::atomic<bool>& stop_;
  const JobOptions& options_;
  JobFiles& files_;

  PreparedJob prepared_;
  RenderRange range_;
  std::string scratch_;
  std::unique_ptr<JobState> state_;  // the done-log (state.json)
  std::optional<SpaceNeeded> space_need_;  // CheckFreeSpace's estimate
  bool decoded_short_ = false;             // DecodedShort
  mutable Mutex space_mu_;                 // the board's failure listener runs on any thread
  std::optional<SpaceReading> space_at_failure_ GUARDED_BY(space_mu_);
  Timeline timeline_;
  StageClock clock_;
  JobReport report_;
  std::optional<FaceTable> faces_;  // face mode: this run's frames' faces
  std::unique_ptr<JobWorkers> workers_;
  std::atomic<Dispatcher*> wake_{nullptr};  // the dispatcher, for the decoder's wake-ups
  // The compiled engine built beside the job, offered to its workers (engine_beside.h); reset
  // (its build stopped) when the workers have processed every chunk, and before the workers go.
  std::unique_ptr<EngineBeside> engine_;
  // When the pipeline began (MonotonicUs; 0 before): the decoder's time before it is the start's.
  std::atomic<uint64_t> pipeline_start_us_{0};
  std::string worker_device_;  // where the first worker runs ("cpu", "cuda:0")
  // The output's side (after the workers' probe): its size, geometry and encoder settings.
  OutputSize out_;
  OutputGeometry out_geometry_;
  EncoderSettings encoder_;
  JobArena arena_;
  DecodeThread decoder_;                  // the arena's origin and the thread that decodes into it
  std::unique_ptr<StillCapture> stills_;  // the report's stills, taken by the encoder threads
  std::unique_ptr<EncodeStage> encode_;
  // Last: destroyed first, before the files its ffmpeg reads (JobFiles, the caller's).
  std::unique_ptr<JobOutput> output_;
};

}  // namespace framemill
