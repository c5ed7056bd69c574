#include "supervisor/job/job_run.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/kept_work.h"
#include "supervisor/job/run_faces.h"
#include "supervisor/job/supervisor_hooks.h"
#include "supervisor/media/carried_metadata.h"
#include "supervisor/job/run_report.h"

namespace framemill {
namespace {

// The job's color_conversion for this source, these workers and this output (color_choice.h),
// with its warning logged.
ColorConversion ResolveColorConversion(const ArenaPlanner& planner,
                                       const std::string& worker_device, const OutputSize& out,
                                       const std::string& input) {
  std::string warning;
  ColorConversion chosen = planner.Conversion(worker_device, out.width, out.height, &warning);
  if (!warning.empty()) spdlog::warn("{}: {}", input, warning);
  return chosen;
}

}  // namespace

StageClock::StageClock() : last_us_(MonotonicUs()) {}

void StageClock::Lap(double* into) {
  const uint64_t now = MonotonicUs();
  *into = static_cast<double>(now - last_us_) / 1e6;
  last_us_ = now;
}

JobRun::JobRun(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
               const JobOptions& options, JobFiles* files)
    : job_(job),
      config_(config),
      settings_(job.settings),
      stop_(stop),
      options_(options),
      files_(*files),
      decoder_(ArenaPlanner(prepared_, settings_, config_, range_), &arena_, &wake_,
               &pipeline_start_us_) {
  // A full disk stops the render at once; the reading is taken then, not after the teardown.
  arena_.on_board_failure = [this](const Status& s) { NoteSpaceAtFailure(s); };
}

void JobRun::NoteSpaceAtFailure(const Status& s) {
  if (s.code() != StatusCode::kNoSpace) return;
  const SpaceReading r = ReadSpace(JobSpaceWatch(files_));
  MutexLock lock(&space_mu_);
  space_at_failure_ = space_at_failure_ ? Lowest(*space_at_failure_, r) : r;
}

JobRun::~JobRun() {
  // Should anything have ended the run before the decoder was joined, it is stopped and joined
  // (a joinable thread's destructor would end the process, and with it the service), before any
  // other stage goes.
  decoder_.Stop();
}

DispatchStats JobRun::Dispatch() const {
  Dispatcher* d = workers_ ? workers_->dispatcher() : nullptr;
  return d != nullptr ? d->stats() : DispatchStats();
}

Result<JobReport> JobRun::Run() {
  Result<JobReport> result = RunPipeline();
  // Every job that started workers, but one refused for want of disk space: adding a file to a
  // full disk helps nobody.
  const bool no_space = !result.ok() && result.status().code() == StatusCode::kNoSpace;
  if (workers_ && workers_->dispatcher() != nullptr && !no_space && options_.write_report) {
    WriteReport(&result);
  }
  return result;
}

Result<JobReport> JobRun::RunPipeline() {
  const uint64_t t0 = MonotonicMs();
  FM_RETURN_IF_ERROR(Prepare());
  clock_.Lap(&report_.stages.prepare_s);
  FM_RETURN_IF_ERROR(OpenTimeline(job_, options_, files_, t0, &timeline_));
  if (settings_.mode == JobMode::kFaces) {
    FM_RETURN_IF_ERROR(FindFaces());
    clock_.Lap(&report_.stages.faces_s);
  }
  FM_RETURN_IF_ERROR(StartStages());
  clock_.Lap(&report_.stages.start_s);
  pipeline_start_us_.store(MonotonicUs(), std::memory_order_release);
  Status frames = RunFrames();
  clock_.Lap(&report_.stages.pipeline_s);
  if (!frames.ok()) {
    workers_->dispatcher()->Shutdown();
    return frames;
  }
  return Finish(t0);
}

// The job prepared (prepared_job.h), the range this run renders, and the scratch directory with
// its done-log: a run that finds finished segments there starts after them.
Status JobRun::Prepare() {
  Result<PreparedJob> prepared =
      PrepareJob(job_, config_, &files_, options_.decode_every_picture);
  if (!prepared.ok()) return prepared.status();
  prepared_ = std::move(*prepared);
  report_.warnings = prepared_.warnings;
  encoder_ = prepared_.encoder;
  const JobPlan& plan = prepared_.plan;
  Result<RenderRange> range = ChooseRange(job_, plan, options_);
  if (!range.ok()) return range.status();
  range_ = *range;
  FM_RETURN_IF_ERROR(OpenScratch(job_, options_, &files_));
  scratch_ = files_.path();
  state_ = std::make_unique<JobState>(scratch_, job_, plan, plan.chunks_per_segment,
                                      range_.seg_begin, range_.seg_end);
  if (!files_.kept_name.empty()) {
    state_->SetIdentity(
        KeptWorkIdentity(files_.input.get(), files_.model.get(), options_.work_settings));
  }
  FM_RETURN_IF_ERROR(state_->Load());
  const int64_t first_segment = range_.seg_begin + state_->resumed();
  range_.first_chunk =
      first_segment < range_.seg_end ? plan.segments[first_segment].first_chunk : range_.end_chunk;
  report_.segments_resumed = state_->resumed();
  report_.frames_resumed =
      range_.seg_begin < range_.seg_end
          ? prepared_.ChunkStartFrame(range_.first_chunk) -
                prepared_.ChunkStartFrame(plan.segments[range_.seg_begin].first_chunk)
          : 0;
  if (state_->resumed() > 0) {
    spdlog::info("resuming: {} of {} segments already finished; starting at frame {}",
                 state_->resumed(), range_.seg_end - range_.seg_begin,
                 prepared_.ChunkStartFrame(range_.first_chunk));
  }
  workers_ = std::make_unique<JobWorkers>(job_, config_, options_, files_, prepared_);
  return Status::Ok();
}

Status JobRun::FindFaces() {
  Result<FaceTable> faces = FacesForRun(config_, job_, prepared_, range_, state_->resumed(),
                                        scratch_, stop_, [this] { StartingBeat(); },
                                        &report_.faces);
  if (!faces.ok()) return faces.status();
  faces_ = std::move(*faces);
  return Status::Ok();
}

// The workers and the arena: the previous job's arena when this one reuses its workers (they are
// ready at once: nothing to make an arena beside, and their probe, not a guess, says whether it
// fits); else one made while the workers start, from a guess of its geometry, and decoded into
// at once.
Status JobRun::StartStages() {
  const WarmChoice choice = workers_->ChooseWarmPool();
  SharedMemory kept;
  ArenaGeometry kept_geometry{};
  if (WarmWorkers* warm = options_.warm; warm != nullptr && warm->arena.data() != nullptr) {
    SharedMemory left = std::move(warm->arena);
    // Not reused: removed on the way out, before this job makes its own.
    if (choice == WarmChoice::kReuse) {
      kept = std::move(left);
      kept_geometry = warm->arena_geometry;
    }
  }
  decoder_.Begin(DecodeSetupFor(), std::move(kept), kept_geometry);
  Result<StartedWorkers> started =
      workers_->Start(choice, &timeline_, scratch_, stop_, &wake_, [this] { StartingBeat(); });
  Status s = started.ok() ? MakeArena(started->first) : started.status();
  if (!s.ok()) {
    NoteSpaceAtFailure(s);
    if (arena_.board) arena_.board->Fail(s);  // an early decoder stops at its next chunk
    JoinDecoder();
    if (Dispatcher* d = workers_->dispatcher()) d->Shutdown();
    return s;
  }
  report_.stages.workers_wait_s = started->wait_s;
  report_.workers_warm = started->first.warm;
  report_.workers_spare = started->first.spare;
  report_.worker_sandbox = started->first.sandbox;
  if (prepared_.engine_to_build) StartEngineBeside();
  return Status::Ok();
}

void JobRun::StartEngineBeside() {
  EngineBesideSetup s;
  s.key = *prepared_.engine_to_build;
  s.model_fd = files_.model.get();
  s.model_label = job_.model;
  s.gpu_index = std::max(0, settings_.device.index);
  s.sandbox = config_.worker_sandbox.value_or(WorkerSandbox::kAuto);
  s.cache_dir = EngineCacheDir();
  s.prepared = &prepared_;
  s.ffmpeg = config_.ffmpeg;
  s.log_path = scratch_ + "/engine-frames.log";
  s.stand_in = InstalledSupervisorHooks().EngineStandIn();
  Dispatcher* d = workers_->dispatcher();
  engine_ = std::make_unique<EngineBeside>(std::move(s),
                                           [d](ModelOffer o) { d->OfferModel(std::move(o)); });
}

DecodeSetup JobRun::DecodeSetupFor() const {
  DecodeSetup setup;
  setup.config = &config_;
  setup.prepared = &prepared_;
  setup.input = job_.input;
  setup.range = range_;
  setup.scratch = scratch_;
  setup.faces = faces_ ? &*faces_ : nullptr;
  return setup;
}

void JobRun::JoinDecoder() {
  const std::optional<DecodeFigures> f = decoder_.Join();
  if (!f) return;
  decoded_short_ = decoded_short_ || f->ended_short;
  report_.decoder_restarts = f->restarts;
  report_.faults_retried.insert(report_.faults_retried.end(), f->faults.begin(), f->faults.end());
  report_.stages.decode_s = f->decode_s;  // none of a dropped early decoder's times
  report_.stages.decode_wait_s = f->decode_wait_s;
  report_.stages.decode_early_s = f->decode_early_s;
}

Status JobRun::MakeArena(const FirstWorker& first) {
  const VideoStreamInfo& v = prepared_.media.video;
  const ArenaPlanner planner(prepared_, settings_, config_, range_);
  worker_device_ = first.device;
  Result<OutputSize> size =
      OutputSizeFor(v, settings_.mode, prepared_.probe_in, first.probe_w, first.probe_h);
  if (!size.ok()) return size.status();
  out_ = *size;
  FM_RETURN_IF_ERROR(PlanOutputGeometry(v, settings_.deinterlace, prepared_.geometry_filters, out_,
                                        &encoder_, &out_geometry_, &report_.warnings));
  const ColorConversion conversion =
      ResolveColorConversion(planner, worker_device_, out_, job_.input);
  Result<ArenaGeometry> g = planner.For(out_.width, out_.height, planner.InputFormat(conversion));
  if (!g.ok()) return g.status();
  FM_RETURN_IF_ERROR(decoder_.Settle(*g, conversion, &report_.arena));
  return ArenaReady();
}

// The arena in place: the log's line, the free space the job needs.
Status JobRun::ArenaReady() {
  FM_RETURN_IF_ERROR(CheckFreeSpace());
  ArenaPlanner(prepared_, settings_, config_, range_)
      .LogReady(arena_, out_.width, out_.height, worker_device_);
  return Status::Ok();
}

// The encoded segments and the final file coexist until the end, on the scratch and output file
// systems. Estimated from the input's size, scaled by the output's pixel count, with a 50%
// margin (free_space.h); a wrong guess fails later, cleanly, with no_space.
Status JobRun::CheckFreeSpace() {
  struct stat st {};
  if (::fstat(files_.input.get(), &st) != 0) return Status::Ok();
  const VideoStreamInfo& v = prepared_.media.video;
  const SpaceNeeded need =
      EstimateSpace(st.st_size, int64_t{out_.width} * out_.height, int64_t{v.width} * v.height,
                    state_->resumed(), static_cast<int64_t>(prepared_.plan.segments.size()));
  space_need_ = need;
  SpaceFree free;
  free.scratch_dir = scratch_;
  free.scratch = FreeBytes(scratch_);
  free.output_dir = FdPath(files_.output_dir.get());
  free.output = FreeBytes(free.output_dir);
  return CheckSpace(need, free);
}

SegmentList JobRun::Segments() const {
  SegmentList list;
  for (const SegmentPlan& seg : prepared_.plan.segments) {
    list.paths.push_back(state_->SegmentPath(seg.index));
    list.frames.push_back(seg.frames);
  }
  return list;
}

EncodeSetup JobRun::EncodeSetupFor() {
  EncodeSetup e;
  e.config = &config_;
  e.plan = &prepared_.plan;
  e.range = range_;
  e.encoders = settings_.encoders;
  SegmentFormat& fmt = e.format;
  fmt.width = out_.width;
  fmt.height = out_.height;
  fmt.frame_rate = prepared_.media.video.frame_rate;
  fmt.encoder = encoder_;
  fmt.accurate_color = decoder_.conversion() == ColorConversion::kAccurate;
  fmt.color = prepared_.color_path;
  fmt.in_format = arena_.geometry.out_format;
  fmt.hdr = prepared_.media.video.hdr;
  fmt.sample_aspect = out_geometry_.sample_aspect;
  fmt.field_order = out_geometry_.field_order;
  if (prepared_.keep_alpha) {
    fmt.alpha = AlphaSource{&prepared_.source, &prepared_.media.video, prepared_.media.start_time,
                            prepared_.geometry_filters};
  }
  e.state = state_.get();
  e.scratch_fd = files_.dir.get();
  e.scratch = scratch_;
  e.stills = stills_.get();
  e.on_segment = [this](int64_t index, bool all_done) {
    output_->SegmentReady(index);
    if (all_done) workers_->dispatcher()->Wake();
  };
  return e;
}

// While the workers start: what the job had before it, no workers yet, at most once a
// kWakeIntervalMs (the sink writes progress.json at most once a second).
void JobRun::StartingBeat() {
  if (!options_.on_progress) return;
  JobProgress p;
  p.frames_total = prepared_.plan.frame_count;
  p.frames_resumed = prepared_.ChunkStartFrame(range_.first_chunk);
  p.frames_done = p.frames_resumed;
  p.frames_written = p.frames_resumed;
  p.segments_total = static_cast<int64_t>(prepared_.plan.segments.size());
  p.segments_done = state_->done();
  options_.on_progress(p);
}

void JobRun::Tick(int64_t processed) {
  if (!options_.on_progress) return;
  Dispatcher* d = workers_->dispatcher();
  JobProgress p;
  p.frames_total = prepared_.plan.frame_count;
  p.frames_done = prepared_.ChunkStartFrame(processed);
  p.frames_written = prepared_.ChunkStartFrame(range_.first_chunk) + encode_->frames_written();
  p.segments_total = static_cast<int64_t>(prepared_.plan.segments.size());
  p.segments_done = state_->done();
  p.frames_resumed = prepared_.ChunkStartFrame(range_.first_chunk);
  p.workers = d->LiveWorkers();
  p.dispatch = &d->stats();
  options_.on_progress(p);
}

// The pipeline: the output's mux beside it where the job has one, the encoders, the dispatcher
// (until the workers processed every chunk), then the encoders' trail.
Status JobRun::RunFrames() {
  const bool whole = options_.part.whole();
  output_ = std::make_unique<JobOutput>(
      OutputRequest(config_, job_, prepared_, files_, options_.output_reader_uid, out_geometry_,
                    encoder_, files_.dir.get(), scratch_),
      whole ? std::optional<Result<CarriedMetadata>>(
                  CarriedOf(prepared_.media, prepared_.source.name))
            : std::nullopt);
  output_->StartLive(
      UsesLiveMux(settings_.live_mux, whole, prepared_.media.video.constant_rate), Segments(),
      state_->resumed());
  std::vector<int64_t> first_frames;
  for (const ChunkPlan& c : prepared_.plan.chunks) first_frames.push_back(c.first_frame);
  stills_ = std::make_unique<StillCapture>(std::move(first_frames), arena_.geometry);
  ChunkBoard& board = *arena_.board;
  if (state_->all_done()) board.MarkAllEncoded();  // a resumed job with every segment finished
  encode_ = std::make_unique<EncodeStage>(EncodeSetupFor(), &arena_);
  encode_->Start();
  Dispatcher* d = workers_->dispatcher();
  d->Run(&board, arena_.shm.name(), arena_.geometry, range_.first_chunk, stop_,
         [this](int64_t processed) { Tick(processed); });
  engine_.reset();  // every chunk processed: a build still running is of no use to this job
  // Nor are workers that no later job keeps (framemill run, a part): they are asked to stop now,
  // so that their exit (a CUDA context torn down) runs beside the encoders' tail and the mux.
  if (options_.warm == nullptr && !board.failed()) d->BeginShutdown();
  JoinDecoder();
  // The encoders may trail the workers by much (an encode-bound job): the progress goes on,
  // counting the frames written, until they end.
  while (encode_->Running() && !board.failed()) {
    if (stop_.load()) {
      board.Fail(Status(StatusCode::kCancelled, "stopped by signal"));
      break;
    }
    Tick(range_.end_chunk);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  encode_->Join();
  StageTimes& stages = report_.stages;
  if (const uint64_t last = board.last_processed_us(); last > 0) {
    stages.tail_s = static_cast<double>(MonotonicUs() - last) / 1e6;
  }
  stages.encode_s = encode_->busy_s();
  stages.encode_wait_s = encode_->wait_s();
  report_.dispatch = d->stats();
  stages.workers_busy_s = report_.dispatch.WorkerBusySeconds();
  stages.workers = settings_.workers;
  stages.encoders = settings_.encoders;
  return board.failed() ? board.failure() : Status::Ok();
}

// After a clean finish no request is in flight: idle workers can serve the next job. Workers not
// kept were asked to stop once the last chunk was processed (RunFrames, which ends well only then);
// they are reaped after the mux, which their exits overlap.
Result<JobReport> JobRun::Finish(uint64_t t0) {
  Dispatcher* d = workers_->dispatcher();
  const bool kept = options_.warm != nullptr;
  if (kept) {
    options_.warm->pool = d->Release();
    // Workers moved to an engine mid-job are not this job's key's (its model's): never reused.
    options_.warm->key = workers_->WarmKey() + (d->MovedModel() ? "|moved" : "");
    // The frames are all encoded: the arena is free for the next job of these workers.
    options_.warm->arena = std::move(arena_.shm);
    options_.warm->arena_geometry = arena_.geometry;
    arena_.base = nullptr;
  }
  if (!options_.part.whole()) {  // a part ends with its segments: the stitch muxes
    if (!kept) d->Shutdown();
    FillReport(t0);
    report_.output = options_.workspace;
    report_.frames = 0;
    for (int64_t si = range_.seg_begin; si < range_.seg_end; ++si) {
      report_.frames += prepared_.plan.segments[si].frames;
    }
    report_.chunks = range_.end_chunk - prepared_.plan.segments[range_.seg_begin].first_chunk;
    report_.segments = range_.seg_end - range_.seg_begin;
    return report_;
  }
  Status muxed = output_->Finish(Segments(), job_.output, &report_);
  NoteSpaceAtFailure(muxed);  // before the workers' shutdown
  clock_.Lap(&report_.stages.mux_s);
  if (!kept) d->Shutdown();
  FM_RETURN_IF_ERROR(muxed);
  if (!kept) clock_.Lap(&report_.stages.stop_s);  // kept loaded: none waited for
  spdlog::info("stages: {}", report_.stages.Summary());
  FillReport(t0);
  return report_;
}

void JobRun::FillReport(uint64_t t0) {
  FillPlanFigures(job_, prepared_, &report_);
  report_.out_width = out_.width;
  report_.out_height = out_.height;
  report_.worker_input_format = decoder_.conversion() == ColorConversion::kDevice
                                    ? prepared_.media.video.pix_fmt
                                    : FrameFormatName(decoder_.in_format());
  report_.output_pix_fmt = encoder_.pix_fmt;
  report_.seconds = static_cast<double>(MonotonicMs() - t0) / 1000.0;
  report_.timeline = timeline_.path();
}

void JobRun::WriteReport(Result<JobReport>* result) {
  const Status outcome = result->ok() ? Status::Ok() : result->status();
  if (!result->ok()) {  // what the failed job had measured
    report_.dispatch = Dispatch();
    report_.timeline = timeline_.path();
  }
  const JobReportFile file = WriteRunReport(job_, options_, files_,
                                            result->ok() ? **result : report_, outcome, timeline_,
                                            stills_.get());
  if (result->ok() && !file.path.empty()) (*result)->report = file.path;
  if (result->ok() && !file.warning.empty()) (*result)->warnings.push_back(file.warning);
  if (options_.report_file != nullptr) *options_.report_file = file;
}

}  // namespace framemill
