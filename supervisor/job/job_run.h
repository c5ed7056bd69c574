// One run of a job (RunJob makes another after a crash it retries): its stages started in order
// and joined, whatever the outcome. Prepare (paths, probe, plan, done-log), the face pass, the
// workers with the arena (made while they start, from a guess of its geometry, and decoded into
// at once: the early decoder), then the pipeline (decode stage -> dispatcher and workers ->
// encode stage, meeting at the arena's chunk board), then the output (joined, verified, in
// place) or, for a part, its segments alone; the report for a job that started workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/job/decode_stage.h"
#include "supervisor/job/encode_stage.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/job_arena.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_options.h"
#include "supervisor/job/job_output.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/job_workers.h"
#include "supervisor/job/output_plan.h"
#include "supervisor/job/prepared_job.h"
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

 private:
  Result<JobReport> RunPipeline();
  Status Prepare();
  Status FindFaces();
  Status StartStages();
  // The arena for the workers' probe: the kept one, the early one (its decoder then goes on),
  // else a new one (an early decoder on a wrong guess is stopped first, its frames dropped).
  Status MakeArena(const FirstWorker& first);
  // Makes the guessed arena and decodes into it while the workers start.
  void StartEarlyDecoder(const ArenaGeometry& guess, ColorConversion conversion);
  void DropEarlyDecoder(const Status& made);
  void StartDecoder();
  // Joins the decoder thread; its figures go into the report (`times`: its timings too).
  void JoinDecoder(bool times = true);
  std::unique_ptr<DecodeStage> MakeDecodeStage();
  Status ArenaReady();
  Status CheckFreeSpace();
  Status RunFrames();
  void StartingBeat();  // progress while the workers start
  void Tick(int64_t processed);
  Result<JobReport> Finish(uint64_t t0);
  SegmentList Segments() const;
  EncodeSetup EncodeSetupFor();
  void FillReport(uint64_t t0);
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
  Timeline timeline_;
  StageClock clock_;
  JobReport report_;
  std::optional<FaceTable> faces_;  // face mode: this run's frames' faces
  std::unique_ptr<JobWorkers> workers_;
  std::atomic<Dispatcher*> wake_{nullptr};  // the dispatcher, for the decoder's wake-ups
  // When the pipeline began (MonotonicUs; 0 before): the decoder's time before it is the start's.
  std::atomic<uint64_t> pipeline_start_us_{0};
  std::string worker_device_;  // where the first worker runs ("cpu", "cuda:0")
  // The decoder's side: settings_.color_conversion as it applies (never kAuto), how input frames
  // lie in the arena.
  ColorConversion conversion_ = ColorConversion::kAccurate;
  FrameFormat in_format_ = FrameFormat::kRgb24;
  // The output's side (after the workers' probe): its size, geometry and encoder settings.
  OutputSize out_;
  OutputGeometry out_geometry_;
  EncoderSettings encoder_;
  // The arena the previous job's workers kept (WarmWorkers), when this job reuses them.
  SharedMemory kept_arena_;
  ArenaGeometry kept_geometry_{};
  std::optional<ArenaGeometry> guess_;  // the early arena's geometry, when one was made
  std::future<Status> early_;           // the early arena made (or why not)
  int64_t restarts_used_ = 0;           // decoder restarts of a dropped early decoder
  JobArena arena_;
  std::unique_ptr<DecodeStage> decode_;
  std::thread decoder_;
  std::unique_ptr<StillCapture> stills_;  // the report's stills, taken by the encoder threads
  std::unique_ptr<EncodeStage> encode_;
  // Last: destroyed first, before the files its ffmpeg reads (JobFiles, the caller's).
  std::unique_ptr<JobOutput> output_;
};

}  // namespace framemill
