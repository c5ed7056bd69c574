#include "supervisor/job/job_runner.h"

#include <cstdint>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <fcntl.h>
#include <cstdlib>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/file_util.h"
#include "common/frame_format.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/faces/job_faces.h"
#include "supervisor/job/color_choice.h"
#include "supervisor/job/model_fit.h"
#include "supervisor/job/free_space.h"
#include "supervisor/job/warm_key.h"
#include "supervisor/plan/chunk_board.h"
#include "supervisor/media/color_path.h"
#include "supervisor/workers/dispatcher.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/plan/job_plan.h"
#include "supervisor/job/job_limits.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/kept_work.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/media/decode_seek.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/media/output_geometry.h"
#include "supervisor/media/live_mux.h"
#include "supervisor/media/output_muxer.h"
#include "supervisor/media/pixel_format.h"
#include "supervisor/report/report_file.h"
#include "supervisor/report/report_stills.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/workers/timeline.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {
namespace {

// The job's color_conversion for this source and these workers (color_choice.h), with its
// warning logged.
ColorConversion ResolveColorConversion(ColorConversion setting, const std::string& worker_device,
                                       const VideoStreamInfo& v, const std::string& input) {
  std::string warning;
  ColorConversion chosen = ChooseColorConversion(setting, worker_device, v.pix_fmt, &warning);
  if (!warning.empty()) spdlog::warn("{}: {}", input, warning);
  return chosen;
}

// A fault hook from the environment: the number N in `name`, or -1 when unset.
int64_t FaultHook(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : -1;
}

// Each hook fires once per process, so that a retry succeeds.
std::atomic<bool> g_decoder_fault_fired{false};
std::atomic<bool> g_encoder_fault_fired{false};

bool IsCrash(const Status& s) {
  return s.code() == StatusCode::kDecoderCrashed || s.code() == StatusCode::kEncoderCrashed;
}

// What a job opened, kept across the attempts of one RunJob: a retry after a crash reads the
// same files and keeps the finished segments of its scratch directory.
struct JobFiles {
  // Named once: the checked, open input, model and output directory.
  UniqueFd input, model, output_dir;
  UniqueFd dir;              // the scratch directory, open
  std::string private_name;  // "" = the caller's workspace (kept); else removed at the end
  std::string kept_name;     // keep_work: the kept work's name in output_dir
  UniqueFd kept_lock;        // keep_work: its lock, on a descriptor no child inherits
  int64_t segments_done = 0;  // in the scratch directory after the last run, resumed ones too
  std::string path() const { return FdPath(dir.get()); }
};

// The file `name` in the directory `dir_fd`, created exclusively under a random name, then
// renamed to `name` (a link planted there is replaced, not followed). For the timeline.
Result<UniqueFd> CreateInPlace(int dir_fd, const std::string& name) {
  Result<CreatedFile> f = CreateExclusiveAt(dir_fd, "." + name + ".", ".tmp", 0644);
  if (!f.ok()) return f.status();
  FM_RETURN_IF_ERROR(RenameCheckedAt(dir_fd, f->name, f->fd.get(), name, RenameMode::kReplace));
  return std::move(f->fd);
}

// One job's run. Owns the workers, the arena and the scratch directory for its lifetime.
class JobRun {
 public:
  JobRun(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
         const JobOptions& options, JobFiles* files)
      : job_(job),
        config_(config),
        settings_(job.settings),
        stop_(stop),
        options_(options),
        scratch_dir_(*files),
        input_fd_(files->input),
        model_fd_(files->model),
        output_dir_fd_(files->output_dir) {}

  // The previous job's workers, retiring beside this one (StartWorkers), are waited for here.
  ~JobRun() {
    if (retiring_.joinable()) retiring_.join();
  }

  // The pipeline, then the report (for a job that started workers, whatever the outcome).
  Result<JobReport> Run();
  // The worker counts of this run (empty when it started no workers).
  DispatchStats Dispatch() const { return dispatcher_ ? dispatcher_->stats() : DispatchStats(); }
  // Segments finished in the scratch directory, resumed ones included (0 before it was read).
  int64_t SegmentsDone() const { return state_ ? state_->done() : 0; }

 private:
  Result<JobReport> RunPipeline();
  void WriteReport(Result<JobReport>* result);
  Status OpenPaths();
  Status OpenScratch();
  Status Prepare();
  Status ResolveDepth();
  Status StartDecoder(int64_t skip);
  Result<bool> ReadFrame(uint8_t* dst);
  // What this job does with the warm pool it is offered (warm_key.h), decided once: the pool
  // and its arena go together.
  WarmChoice ChooseWarmPool() const;
  Status StartWorkers(WarmChoice choice);
  std::string JobWarmKey() const;
  // The input the workers probe the model with (model_fit.h ProbeShapeFor): kProbeSize square,
  // face_size in face mode (a face model may take nothing else: GFPGAN's and CodeFormer's
  // networks are built for 512), a one-shape package's shape. Set by Prepare.
  ProbeShape probe_in_;
  std::optional<int> card_scale_;  // the model card's scale, when the model has a card
  ArenaDemand Demand() const;      // what the pipeline keeps in flight (common/shm_protocol.h)
  FrameFormat InputFormat(ColorConversion conversion) const;  // how input frames lie in a slot
  // The arena's geometry for these output and input frames (no side effects).
  Result<ArenaGeometry> ArenaFor(int out_w, int out_h, FrameFormat in_format) const;
  // The arena this job will most likely need, guessed before any worker has probed the model:
  // the output at the card's scale (else the frame's own size), the input as the job's device
  // would take it (with `*conversion`, the colour conversion that input needs). Device "auto"
  // is guessed a GPU where the host has NVIDIA's driver (/dev/nvidiactl), else the CPU.
  std::optional<ArenaGeometry> GuessArena(ColorConversion* conversion) const;
  // The warm pool's arena (WarmWorkers), taken when this job reuses that pool (`choice`);
  // otherwise the pool's arena is removed here, before this job makes its own. Empty when there
  // is none.
  SharedMemory TakeKeptArena(WarmChoice choice, ArenaGeometry* geometry);
  // Arenas ready before the workers' probe said which one the job needs, else dropped: `kept`,
  // the previous job's (TakeKeptArena), used when it holds the real geometry (ArenaHolds), or
  // the early one, made from `guess` while the workers start and decoded into at once by the
  // early decoder (StartEarlyDecoder), kept when the guess was right.
  struct ReadyArenas {
    SharedMemory kept;
    ArenaGeometry kept_geometry{};
    std::optional<ArenaGeometry> guess;
    ColorConversion guess_conversion = ColorConversion::kAccurate;
    std::future<Status> early;  // the early arena made (or why not), set by the early decoder
  };
  // Makes the guessed arena and decodes into it on `*decoder` while the workers start: the
  // pipeline's first chunks are ready when the first worker is. Sets this run's decoder side
  // (colour conversion, input format, arena, board) from the guess.
  void StartEarlyDecoder(ReadyArenas* ready, std::thread* decoder);
  // The arena for the workers' probe: the kept one, the early one (its decoder then goes on),
  // else a new one (an early decoder on a wrong guess is stopped first, its frames dropped).
  Status CreateArena(ReadyArenas* ready, std::thread* decoder);
  // Starts DecodeLoop on `*decoder`; its failure fails the board.
  void RunDecoder(std::thread* decoder);
  void DecodeLoopGuarded();
  Status ArenaReady(const ArenaDemand& demand);
  bool PageLocks() const;
  // The first frame of the plan's chunk `k`; the plan's frame_count for k past the last chunk.
  int64_t ChunkStartFrame(int64_t k) const {
    return k < static_cast<int64_t>(plan_.chunks.size()) ? plan_.chunks[k].first_frame
                                                         : plan_.frame_count;
  }
  Status PlanGeometry();
  // The decoder's -vf: geometry's filters (deinterlace, turn upright), then the colour path's
  // conversion to the model's format.
  std::vector<std::string> DecoderFilters() const;
  Status CheckFreeSpace() const;
  void DecodeLoop();
  void EncodeLoop(int encoder);
  Status EncodeSegment(const SegmentPlan& seg, const SegmentFormat& fmt, int encoder,
                       double* busy_s, double* wait_s);
  Status SegmentFinished(int64_t index, int64_t bytes);
  Status ChoosePart();
  // Face mode: the face table of the frames this run renders (job_faces.h), kept in the job's
  // workspace so that a resumed job pastes the very faces the first run would have.
  Status FindFaces();
  // Face mode: the FaceWarps of chunk frames [first, first + frames) into the slot's face region.
  void WriteChunkFaces(int64_t first, int32_t frames, uint32_t slot);
  Result<JobReport> Stitch();
  MuxRequest MakeMuxRequest(const std::vector<std::string>& segments,
                            const std::vector<int64_t>& frames) const;
  // The whole job's segments, in order, and their frames.
  void PlanSegments(std::vector<std::string>* segments, std::vector<int64_t>* frames) const;
  // Starts the live mux (live_mux.h) when the job's output can follow its render; the segments
  // a resumed job kept are ready at once.
  void StartLiveMux();
  // The live mux's output, or when there is none or it failed, MuxAndVerify's.
  Status Mux(const std::vector<std::string>& segments, const std::vector<int64_t>& frames);
  void FillReport(uint64_t t0);

  const JobSpec& job_;
  const Config& config_;
  const JobSettings& settings_;
  const std::atomic<bool>& stop_;
  const JobOptions& options_;

  JobFiles& scratch_dir_;
  UniqueFd& input_fd_;  // these three live in the JobFiles
  UniqueFd& model_fd_;
  UniqueFd& output_dir_fd_;
  std::string output_name_;
  SourceFile source_;                    // the input as ffprobe and ffmpeg get it
  std::unique_ptr<FrameReader> reader_;  // decoder thread only
  int64_t next_frame_ = 0;               // the frame the decoder delivers next
  int64_t error_retried_at_ = -1;        // where a decoder's error exit was retried
  MediaInfo media_;
  int64_t chunks_per_segment_ = 1;
  std::unique_ptr<JobState> state_;  // the done-log (state.json)
  std::atomic<int64_t> frames_written_{0};  // frames handed to the encoders by this run
  int64_t first_chunk_ = 0;
  // What this run renders: segments [seg_begin_, seg_end_), chunks before end_chunk_ (the whole
  // plan, or a part of it).
  int64_t seg_begin_ = 0, seg_end_ = 0, end_chunk_ = 0;
  std::mutex stages_mu_;  // guards stages_.encode_* between encoder threads
  JobPlan plan_;
  std::string scratch_;
  Timeline timeline_;
  std::unique_ptr<Dispatcher> dispatcher_;
  // Stops the previous job's idle workers of another model (StartWorkers): joined when the job
  // ends, not when its own workers are ready.
  std::thread retiring_;
  // dispatcher_ for the decoder thread's wake-ups: set once made (an early decoder runs before).
  std::atomic<Dispatcher*> wake_{nullptr};
  // When the pipeline stage began (MonotonicUs; 0 before): the decoder's time before it is the
  // start's (stages_.decode_early_s), after it the pipeline's.
  std::atomic<uint64_t> pipeline_start_us_{0};
  uint32_t probe_w_ = 0, probe_h_ = 0;
  std::string worker_device_;  // where the first worker runs ("cpu", "cuda:0")
  // settings_.color_conversion as it applies to this job: never kAuto.
  ColorConversion color_conversion_ = ColorConversion::kAccurate;
  // What the decoder's filters make of the source (upright, progressive unless deinterlace off;
  // set by Prepare) and what the encoder writes (set by PlanGeometry).
  std::vector<std::string> decoder_filters_;
  OutputGeometry out_geometry_;
  // depth: the matrix, range and tags both ways; how frames lie in the arena (in: as the decoder
  // writes them, out: as the encoder takes them).
  ColorPath color_path_;
  EncoderSettings encoder_;  // settings_.encoder with pix_fmt resolved
  FrameFormat in_format_ = FrameFormat::kRgb24;
  FrameFormat out_format_ = FrameFormat::kRgb24;
  int out_w_ = 0, out_h_ = 0;
  SharedMemory arena_shm_;
  uint8_t* arena_base_ = nullptr;
  ArenaGeometry arena_;  // our own copy: the header in shared memory is never read back
  std::unique_ptr<ChunkBoard> board_;
  std::unique_ptr<StillCapture> stills_;  // the report's stills, taken by the encoder threads
  std::optional<FaceTable> faces_;        // face mode: this run's frames' faces
  JobReport report_;
  StageTimes& stages_ = report_.stages;  // decode_* written by the decoder thread only,
                                         // encode_* under stages_mu_
  // The source's carried metadata (streams, tags, chapters) for the mux, read from the probe
  // Prepare made; none for a part of a job (its stitch reads them).
  std::optional<Result<CarriedMetadata>> source_carried_;
  // The mux beside the render (live_mux.h), when the job has one; its segments are reported by
  // the encoder threads (SegmentFinished). Last member: destroyed first, before the files its
  // ffmpeg reads (JobFiles, the caller's).
  std::unique_ptr<LiveMux> live_mux_;
};

// Opens and checks the input, the model and the output directory (once per RunJob: a retry uses
// the files the first attempt opened).
Status JobRun::OpenPaths() {
  if (!input_fd_.valid()) {
    Result<UniqueFd> input =
        OpenCheckedFile(CheckedKind::kInput, job_.input, config_.allowed_input_roots);
    if (!input.ok()) return input.status();
    input_fd_ = std::move(*input);
  }
  if (!model_fd_.valid()) {
    Result<UniqueFd> model =
        OpenCheckedFile(CheckedKind::kModel, job_.model, config_.allowed_model_roots);
    if (!model.ok()) return model.status();
    model_fd_ = std::move(*model);
  }
  output_name_ = BaseName(job_.output);
  if (output_name_.empty() || output_name_ == "." || output_name_ == "..") {
    return Status(StatusCode::kOutputInvalid, job_.output + ": not a file name");
  }
  Result<std::string> muxer = MuxerForOutput(job_.output);
  if (!muxer.ok()) return muxer.status();
  const std::string out_dir = DirName(job_.output);
  if (!output_dir_fd_.valid()) {
    Result<UniqueFd> dir = OpenCheckedDirectory(out_dir, config_.allowed_output_roots);
    if (!dir.ok()) return dir.status();
    output_dir_fd_ = std::move(*dir);
  }
  if (::access(FdPath(output_dir_fd_.get()).c_str(), W_OK) != 0) {
    return Status(StatusCode::kOutputInvalid, out_dir + ": output directory is not writable");
  }
  struct stat st {};
  if (::fstatat(output_dir_fd_.get(), output_name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status(StatusCode::kOutputInvalid, job_.output + ": output is a directory");
    }
    if (!job_.overwrite) {
      return Status(StatusCode::kOutputInvalid,
                    job_.output + ": output exists (set \"overwrite\": true to replace it)");
    }
  }
  Result<std::vector<std::string>> restrictions =
      InputRestrictions(config_.ffprobe, config_.allow_playlist_inputs ? PlaylistInputs::kAllow
                                                                       : PlaylistInputs::kRefuse);
  if (!restrictions.ok()) return restrictions.status();
  source_ = SourceFile{input_fd_.get(), job_.input, std::move(*restrictions)};
  return Status::Ok();
}

// Without a workspace: a private directory (mode 0700, random name) in the output directory,
// created once per RunJob. With one: the caller's directory, opened.
Status JobRun::OpenScratch() {
  if (scratch_dir_.dir.valid()) return Status::Ok();
  if (options_.workspace.empty() && options_.keep_work) {
    const std::string name = KeptWorkName(job_.output);
    Result<KeptWork> kept = OpenKeptWork(output_dir_fd_.get(), name, options_.fresh_work);
    if (!kept.ok()) return kept.status();
    scratch_dir_.kept_name = name;
    scratch_dir_.dir = std::move(kept->dir);
    scratch_dir_.kept_lock = std::move(kept->lock);
    return Status::Ok();
  }
  if (options_.workspace.empty()) {
    Result<CreatedFile> dir = MakePrivateDirectoryAt(output_dir_fd_.get(), ".framemill-work.");
    if (!dir.ok()) return dir.status();
    scratch_dir_.private_name = dir->name;
    scratch_dir_.dir = std::move(dir->fd);
    return Status::Ok();
  }
  FM_RETURN_IF_ERROR(MakeDirectories(options_.workspace));
  scratch_dir_.dir.Reset(::open(options_.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!scratch_dir_.dir.valid()) {
    return Status(StatusCode::kIo,
                  "open workspace " + options_.workspace + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// depth: the colour path, the output pixel format (pix_fmt "auto": the source's depth and chroma
// layout where the encoder has them) and the arena's output format.
Status JobRun::ResolveDepth() {
  const VideoStreamInfo& v = media_.video;
  color_path_ = ResolveColorPath(v);
  encoder_ = settings_.encoder;
  if (color_path_.assumed) {
    spdlog::info("{}: no colour-space tag; converting and tagging as {} ({} at {}x{})", job_.input,
                 color_path_.color_space, color_path_.color_space == "bt709" ? "HD" : "SD", v.width,
                 v.height);
  }
  if (encoder_.pix_fmt == "auto") {
    Result<std::vector<std::string>> supported =
        EncoderPixelFormats(config_.ffmpeg, encoder_.codec);
    if (!supported.ok()) return supported.status();
    PixelFormatChoice choice = ChoosePixelFormat(ParsePixelFormat(v.pix_fmt), *supported);
    encoder_.pix_fmt = choice.pix_fmt;
    if (!choice.warning.empty()) {
      std::string w = encoder_.codec + ": " + choice.warning;
      spdlog::warn("{}: {}", job_.input, w);
      report_.warnings.push_back(w);
    }
  }
  out_format_ =
      ParsePixelFormat(encoder_.pix_fmt).bits > 8 ? FrameFormat::kRgb48 : FrameFormat::kRgb24;
  spdlog::info("{}: {} ({}-bit {}) -> {}", job_.input, v.pix_fmt, v.bits_per_component,
               v.chroma_layout, encoder_.pix_fmt);
  return Status::Ok();
}

Status JobRun::Prepare() {
  FM_RETURN_IF_ERROR(OpenPaths());
  Result<MediaInfo> media = ProbeMedia(config_.ffprobe, source_, /*frame_times=*/true);
  if (!media.ok()) return media.status();
  media_ = std::move(*media);
  const VideoStreamInfo& v = media_.video;
  FM_RETURN_IF_ERROR(CheckJobLimits(v, config_).WithContext(job_.input));
  // The card beside the model (supervisor/job/model_fit.h), read beside its resolved path: an
  // input or a setting the model cannot take fails here, before a worker starts or a frame is
  // decoded.
  // In face mode the model sees face_size x face_size crops, never a whole frame.
  const bool faces = settings_.mode == JobMode::kFaces;
  const std::string model_path = FdRealPath(model_fd_.get());
  Result<std::optional<ModelCard>> card = LoadModelCard(model_path);
  if (!card.ok()) return card.status();
  FM_RETURN_IF_ERROR(CheckModelFitsJob(*card, model_path, settings_,
                                       faces ? settings_.faces.size : v.display_width,
                                       faces ? settings_.faces.size : v.display_height));
  probe_in_ = ProbeShapeFor(*card, settings_);
  if (card->has_value()) card_scale_ = (*card)->scale;
  FM_RETURN_IF_ERROR(ResolveDepth());
  // The decoder's geometry filters (deinterlace, turn upright): the source's alone, so known
  // before any worker, and the early decoder (RunPipeline) can start with them.
  Result<std::vector<std::string>> filters = GeometryFilters(v, settings_.deinterlace);
  if (!filters.ok()) return filters.status().WithContext(job_.input);
  decoder_filters_ = std::move(*filters);
  if (!v.constant_rate) {
    spdlog::info("{}: variable frame rate; every frame keeps its source timestamp", job_.input);
  }
  Result<JobPlan> plan = PlanJob(v.frame_count, v.frame_rate.value(), settings_);
  if (!plan.ok()) return plan.status();
  plan_ = std::move(*plan);
  chunks_per_segment_ = plan_.chunks_per_segment;
  spdlog::info(
      "{}: video stream #{} {} {}x{} @ {} fps, {} frames, {} audio, {} subtitle; "
      "plan: {} chunks of {}, {} segments",
      job_.input, v.index, v.codec, v.width, v.height, v.frame_rate.ToString(), v.frame_count,
      media_.audio.size(), media_.subtitles.size(), plan_.chunks.size(), plan_.chunk_frames,
      plan_.segments.size());
  FM_RETURN_IF_ERROR(ChoosePart());
  if (options_.stitch) return Status::Ok();  // no workspace of its own: Stitch() reads the parts'
  FM_RETURN_IF_ERROR(OpenScratch());
  // A name of the open directory: valid here and in every child that inherits it.
  scratch_ = scratch_dir_.path();
  state_ =
      std::make_unique<JobState>(scratch_, job_, plan_, chunks_per_segment_, seg_begin_, seg_end_);
  if (!scratch_dir_.kept_name.empty()) {
    state_->SetIdentity(
        KeptWorkIdentity(input_fd_.get(), model_fd_.get(), options_.work_settings));
  }
  FM_RETURN_IF_ERROR(state_->Load());
  const int64_t first_segment = seg_begin_ + state_->resumed();
  first_chunk_ = first_segment < seg_end_ ? plan_.segments[first_segment].first_chunk : end_chunk_;
  report_.segments_resumed = state_->resumed();
  report_.frames_resumed =
      seg_begin_ < seg_end_
          ? ChunkStartFrame(first_chunk_) - ChunkStartFrame(plan_.segments[seg_begin_].first_chunk)
          : 0;
  if (state_->resumed() > 0) {
    spdlog::info(
        "resuming: {} of {} segments already finished; starting at frame {}", state_->resumed(),
        seg_end_ - seg_begin_,
        first_chunk_ < end_chunk_ ? plan_.chunks[first_chunk_].first_frame : plan_.frame_count);
  }
  return Status::Ok();
}

// The segments this run renders: all of them, or one part's (the parts plan written once beside
// the job, or read there by the stitch).
Status JobRun::ChoosePart() {
  seg_begin_ = 0;
  seg_end_ = static_cast<int64_t>(plan_.segments.size());
  end_chunk_ = static_cast<int64_t>(plan_.chunks.size());
  if (options_.part.whole()) return Status::Ok();
  Result<PartsPlan> mine = MakePartsPlan(job_, plan_, options_.part.count);
  if (!mine.ok()) return mine.status();
  Result<PartsPlan> parts = WritePartsPlanOnce(options_.parts_dir, *mine);
  if (!parts.ok()) return parts.status();
  const PartRange& r = parts->parts[static_cast<size_t>(options_.part.index - 1)];
  seg_begin_ = r.first_segment;
  seg_end_ = r.end_segment();
  if (seg_end_ < static_cast<int64_t>(plan_.segments.size())) {
    end_chunk_ = plan_.segments[seg_end_].first_chunk;
  }
  spdlog::info("part {}: segments {}..{}, frames {}..{}", options_.part.ToString(), seg_begin_,
               seg_end_ - 1, r.first_frame, r.first_frame + r.frames - 1);
  return Status::Ok();
}

// This job's key for warm workers (warm_key.h).
std::string JobRun::JobWarmKey() const {
  // The probe's shape comes from the model's card, a file of its own: a card added, changed or
  // removed beside the same model file must not hand over workers probed at another shape.
  return WarmKey(options_.output_reader_uid, IdentifyFile(model_fd_.get()), settings_,
                 LogDirKey(options_.worker_log_dir, IdentifyFile(scratch_dir_.dir.get()))) +
         "|probe " + std::to_string(probe_in_.width) + "x" + std::to_string(probe_in_.height) +
         "x" + std::to_string(probe_in_.batch);
}

WarmChoice JobRun::ChooseWarmPool() const {
  const WarmWorkers* warm = options_.warm;
  const bool offered = warm != nullptr && warm->pool != nullptr;
  return ChooseWarm(offered, offered ? warm->key : "", offered ? JobWarmKey() : "");
}

Status JobRun::StartWorkers(WarmChoice choice) {
  const uint64_t t_wait = MonotonicUs();
  std::unique_ptr<WorkerPool> pool;
  WarmWorkers* warm = options_.warm;
  // The previous job's idle workers, of another model or settings, exit on a thread of their own
  // while this job's workers start: a CUDA worker's exit (its context torn down, 0.4-0.8 s on the
  // H200 machine) is otherwise waited for first. Joined when the job ends (~JobRun), not here: a
  // spare that loads the model in 0.3 s is ready before the old workers are gone, and the job
  // then waited for them (measured: 0.48 s of a 0.8 s start). The two hold the GPU's memory at
  // once for that while.
  switch (choice) {
    case WarmChoice::kReuse:
      pool = std::move(warm->pool);
      spdlog::info("reusing the loaded workers of the previous job");
      break;
    case WarmChoice::kReplace:
      if (retiring_.joinable()) retiring_.join();
      retiring_ = std::thread([old = std::move(warm->pool)]() mutable {
        const uint64_t t0 = MonotonicMs();
        old->StopAll(5000);
        old.reset();
        spdlog::info("the previous job's workers stopped in {} ms, beside this job's start",
                     MonotonicMs() - t0);
      });  // (its arena went with TakeKeptArena)
      break;
    case WarmChoice::kStartFresh:
      break;
  }
  if (pool == nullptr) {
    WorkerOptions opts;
    opts.worker_binary = WorkerBinaryPath(config_.worker_binary);
    // The file as opened and checked: the pool hands the descriptor to the workers; where it
    // reads a name, it gets the real path resolved at the check, not the job's symlink.
    opts.model = FdRealPath(model_fd_.get());
    opts.model_fd = model_fd_.get();
    opts.device = settings_.device;
    opts.precision = settings_.precision;
    opts.model_optimization = settings_.model_optimization;
    opts.cudnn_autotune = settings_.cudnn_autotune;
    opts.tile = settings_.tile;
    opts.probe_width = probe_in_.width;
    opts.probe_height = probe_in_.height;
    opts.probe_batch = probe_in_.batch;
    opts.log_level = config_.log_level;
    opts.log_dir = options_.worker_log_dir.empty() ? scratch_ : options_.worker_log_dir;
    opts.pytorch_alloc_conf = config_.pytorch_alloc_conf;
    opts.sandbox = config_.worker_sandbox.value_or(WorkerSandbox::kAuto);
    // Twice the channels of the workers wanted: room for a warm standby beside each one.
    int channels = std::min<int>(2 * settings_.workers, static_cast<int>(kMaxWorkerChannels));
    Result<std::unique_ptr<WorkerPool>> created = WorkerPool::Create(opts, channels);
    if (!created.ok()) return created.status();
    pool = std::move(*created);
  }
  dispatcher_ =
      std::make_unique<Dispatcher>(plan_, settings_, std::move(pool), &timeline_,
                                   static_cast<uint64_t>(config_.worker_start_timeout_s * 1000));
  wake_.store(dispatcher_.get(), std::memory_order_release);
  dispatcher_->OfferSpares(options_.spares, options_.on_spare_taken);
  Result<FirstWorker> first = dispatcher_->Start(stop_);
  if (!first.ok()) return first.status();
  stages_.workers_wait_s = static_cast<double>(MonotonicUs() - t_wait) / 1e6;
  report_.workers_warm = first->warm;
  report_.workers_spare = first->spare;
  probe_w_ = first->probe_w;
  probe_h_ = first->probe_h;
  worker_device_ = first->device;
  report_.worker_sandbox = first->sandbox;
  if (WorkerSandboxDegraded(first->sandbox)) {
    // Once per job, and loud: the job runs, but its model can reach what the service can.
    spdlog::warn(
        "WORKERS ARE NOT SANDBOXED as they should be: {} (worker_sandbox \"auto\"; "
        "\"required\" refuses to run so)",
        first->sandbox);
  } else {
    spdlog::info("worker sandbox: {}", first->sandbox);
  }
  spdlog::info("model maps {}x{} to {}x{} on {}", probe_in_.width, probe_in_.height, probe_w_,
               probe_h_, worker_device_);
  return Status::Ok();
}

ArenaDemand JobRun::Demand() const {
  ArenaDemand demand;
  demand.workers = settings_.workers;
  demand.encoders = settings_.encoders;
  demand.chunks_per_segment = chunks_per_segment_;
  demand.chunks = static_cast<int64_t>(plan_.chunks.size());
  demand.arena_mb = config_.arena_mb;
  return demand;
}

FrameFormat JobRun::InputFormat(ColorConversion conversion) const {
  // color_conversion device: the source's 4:2:0 planes go to the workers as they are. More than
  // 8 bits reach the model as 16 (rgb48).
  return conversion == ColorConversion::kDevice ? FrameFormat::kYuv420p
         : media_.video.bits_per_component > 8  ? FrameFormat::kRgb48
                                                : FrameFormat::kRgb24;
}

Result<ArenaGeometry> JobRun::ArenaFor(int out_w, int out_h, FrameFormat in_format) const {
  const VideoStreamInfo& v = media_.video;
  ArenaGeometry shape;
  shape.chunk_frames = static_cast<uint32_t>(plan_.chunk_frames);
  shape.in_width = static_cast<uint32_t>(v.display_width);
  shape.in_height = static_cast<uint32_t>(v.display_height);
  shape.in_format = in_format;
  shape.in_matrix = MatrixForColorSpace(color_path_.color_space);
  shape.in_full_range = color_path_.full_range ? 1 : 0;
  shape.out_format = out_format_;
  shape.out_width = static_cast<uint32_t>(out_w);
  shape.out_height = static_cast<uint32_t>(out_h);
  if (settings_.mode == JobMode::kFaces) {
    shape.face_slots = static_cast<uint32_t>(settings_.faces.max_faces);
    shape.face_size = static_cast<uint32_t>(settings_.faces.size);
    shape.face_blend = static_cast<uint32_t>(settings_.faces.BlendPixels());
  }
  return SizeArena(shape, Demand());
}

std::optional<ArenaGeometry> JobRun::GuessArena(ColorConversion* conversion) const {
  const VideoStreamInfo& v = media_.video;
  std::string device = "cpu";
  if (settings_.device.kind == DeviceKind::kCuda ||
      (settings_.device.kind == DeviceKind::kAuto && HostHasNvidiaDriver())) {
    device = "cuda:0";
  }
  const int scale = settings_.mode == JobMode::kFaces ? 1 : card_scale_.value_or(1);
  *conversion = ChooseColorConversion(settings_.color_conversion, device, v.pix_fmt, nullptr);
  Result<ArenaGeometry> g =
      ArenaFor(v.display_width * scale, v.display_height * scale, InputFormat(*conversion));
  if (!g.ok()) return std::nullopt;
  return *g;
}

SharedMemory JobRun::TakeKeptArena(WarmChoice choice, ArenaGeometry* geometry) {
  WarmWorkers* warm = options_.warm;
  if (warm == nullptr || warm->arena.data() == nullptr) return SharedMemory();
  SharedMemory kept = std::move(warm->arena);
  *geometry = warm->arena_geometry;
  if (choice != WarmChoice::kReuse) return SharedMemory();  // `kept` removes it on the way out
  return kept;
}

Status JobRun::CreateArena(ReadyArenas* ready, std::thread* decoder) {
  const VideoStreamInfo& v = media_.video;
  const bool faces = settings_.mode == JobMode::kFaces;
  if (faces) {
    // The faces are pasted back into the frame: the output is the frame's size, whatever the
    // face model's scale (the worker samples its output back down). The model must map its
    // square to a square of a whole multiple of its side.
    if (probe_w_ != probe_h_ || probe_w_ == 0 || probe_w_ % probe_in_.width != 0) {
      return Status(StatusCode::kModelInvalid,
                    "face model maps a " + std::to_string(probe_in_.width) + "x" +
                        std::to_string(probe_in_.height) + " face to " + std::to_string(probe_w_) +
                        "x" + std::to_string(probe_h_) +
                        "; face mode needs the same square or a whole multiple of it");
    }
    out_w_ = v.display_width;
    out_h_ = v.display_height;
  } else {
    // The model's scale, from its output for the probe's input; the frame must scale exactly.
    // The model sees upright frames: display_width x display_height (source_geometry.h).
    uint64_t ow = static_cast<uint64_t>(v.display_width) * probe_w_;
    uint64_t oh = static_cast<uint64_t>(v.display_height) * probe_h_;
    if (probe_w_ == 0 || probe_h_ == 0 || ow % probe_in_.width != 0 || oh % probe_in_.height != 0) {
      return Status(StatusCode::kModelInvalid,
                    "model output size " + std::to_string(probe_w_) + "x" +
                        std::to_string(probe_h_) + " for a " + std::to_string(probe_in_.width) +
                        "x" + std::to_string(probe_in_.height) + " input is not a whole scale of " +
                        std::to_string(v.display_width) + "x" + std::to_string(v.display_height));
    }
    out_w_ = static_cast<int>(ow / probe_in_.width);
    out_h_ = static_cast<int>(oh / probe_in_.height);
  }
  FM_RETURN_IF_ERROR(PlanGeometry());
  // color_conversion device: the source's 4:2:0 planes go to the workers as they are. More
  // than 8 bits reach the model as 16 (rgb48); the output side is 16-bit for an output format
  // of more than 8 bits.
  const ColorConversion conversion =
      ResolveColorConversion(settings_.color_conversion, worker_device_, v, job_.input);
  Result<ArenaGeometry> g = ArenaFor(out_w_, out_h_, InputFormat(conversion));
  if (!g.ok()) return g.status();
  const ArenaDemand demand = Demand();
  if (decoder->joinable()) {
    // The early decoder's: kept, and its decoder goes on, when the guess was right (the same
    // arena and the same conversion, so the same frames). Else it stops, its frames dropped.
    const Status made = ready->early.get();
    if (made.ok() && SameArenaGeometry(*ready->guess, *g) && conversion == color_conversion_) {
      report_.arena = "early";
      spdlog::info("arena made, and decoded into, while the workers started");
      return ArenaReady(demand);
    }
    board_->Fail(Status(StatusCode::kCancelled, "the arena's guess was wrong"));
    decoder->join();
    reader_.reset();
    board_.reset();
    arena_shm_ = SharedMemory();
    arena_base_ = nullptr;
    next_frame_ = 0;
    error_retried_at_ = -1;
    stages_.decode_s = stages_.decode_wait_s = stages_.decode_early_s = 0;
    spdlog::info("the early arena's guess was wrong{}: made again, decoding from the start",
                 made.ok() ? "" : " (" + made.message() + ")");
  }
  color_conversion_ = conversion;
  in_format_ = InputFormat(conversion);
  Result<SharedMemory> shm = Status(StatusCode::kInternal, "no arena");
  if (ready->kept.data() != nullptr) {
    // The previous job's, beside the workers this job reuses: already zeroed, and already
    // page-locked in those workers.
    if (ArenaHolds(ready->kept_geometry, *g)) {
      shm = std::move(ready->kept);
      *g = ready->kept_geometry;  // its slots, perhaps more than this job would have made
      report_.arena = "kept";
      spdlog::info("arena kept from the previous job, with its workers");
    }
    ready->kept = SharedMemory();  // not this job's geometry: removed now
  }
  arena_ = *g;                                      // first: PageLocks reads the geometry
  arena_.flags = PageLocks() ? kArenaPageLock : 0;  // this job's, sent with each request
  const bool page_locks = (arena_.flags & kArenaPageLock) != 0;
  if (!shm.ok()) {
    // Slots reserved as the decoder first takes them (DecodeLoop), unless the workers page-lock
    // the whole arena at their first chunk.
    shm = CreateFrameArena(*g, /*all_slots=*/page_locks);
    report_.arena = "made";
  }
  if (!shm.ok()) return shm.status();
  if (page_locks) {
    // A kept arena may have slots its job never took, not reserved yet: page-locking touches them.
    FM_RETURN_IF_ERROR(shm->Reserve(0, shm->size()));
  }
  arena_shm_ = std::move(*shm);
  arena_base_ = static_cast<uint8_t*>(arena_shm_.data());
  board_ =
      std::make_unique<ChunkBoard>(static_cast<int64_t>(plan_.chunks.size()), arena_.slot_count);
  RunDecoder(decoder);
  return ArenaReady(demand);
}

void JobRun::StartEarlyDecoder(ReadyArenas* ready, std::thread* decoder) {
  color_conversion_ = ready->guess_conversion;
  in_format_ = InputFormat(color_conversion_);
  arena_ = *ready->guess;
  arena_.flags = PageLocks() ? kArenaPageLock : 0;
  board_ =
      std::make_unique<ChunkBoard>(static_cast<int64_t>(plan_.chunks.size()), arena_.slot_count);
  auto made = std::make_shared<std::promise<Status>>();
  ready->early = made->get_future();
  *decoder = std::thread([this, made] {
    // Creating it zeroes its pages (posix_fallocate on tmpfs: 0.45 s for 2.6 GB on the 2-core
    // machine, 0.75 s for 4 GB on the H200 machine), off the start as the decoding is; and only
    // slot 0's unless the workers page-lock it: the decoder reserves each slot as it first takes
    // it, so that a worker ready early (a spare) does not wait for gigabytes to be zeroed.
    try {
      Result<SharedMemory> shm =
          CreateFrameArena(arena_, /*all_slots=*/(arena_.flags & kArenaPageLock) != 0);
      if (!shm.ok()) return made->set_value(shm.status());
      arena_shm_ = std::move(*shm);
      arena_base_ = static_cast<uint8_t*>(arena_shm_.data());
    } catch (const std::exception& e) {
      return made->set_value(Status(StatusCode::kInternal, std::string("arena: ") + e.what()));
    }
    made->set_value(Status::Ok());  // arena_shm_ is the main thread's to read from here on
    DecodeLoopGuarded();
  });
}

void JobRun::RunDecoder(std::thread* decoder) {
  *decoder = std::thread([this] { DecodeLoopGuarded(); });
}

void JobRun::DecodeLoopGuarded() {
  try {
    DecodeLoop();
  } catch (const std::exception& e) {
    board_->Fail(Status(StatusCode::kInternal, std::string("decoder thread: ") + e.what()));
  }
}

// The arena in place (arena_, board_): the log's line, the free space it needs, a warning when
// it holds fewer chunks than the pipeline keeps in flight.
Status JobRun::ArenaReady(const ArenaDemand& demand) {
  FM_RETURN_IF_ERROR(CheckFreeSpace());
  spdlog::info("arena {}: {} slots of {} MiB ({} -> {}x{}){}", arena_shm_.name(), arena_.slot_count,
               arena_.slot_bytes >> 20, plan_.chunk_frames, out_w_, out_h_,
               worker_device_.rfind("cuda", 0) != 0 ? ""
               : arena_.flags & kArenaPageLock      ? ", page-locked in the workers"
                                                    : ", copies staged in the workers");
  if (const uint64_t wanted = ArenaSlotsWanted(demand); arena_.slot_count < wanted) {
    // Large output frames (an upscaler's 4K-8K) fill the default arena with a few chunks; the
    // decoder then waits for the encoders and the stages take turns instead of overlapping.
    const uint64_t needed_mb = (wanted * arena_.slot_bytes + (1u << 20) - 1) >> 20;
    spdlog::warn(
        "arena_mb={} holds {} of the {} chunks this pipeline keeps in flight ({} MiB each): the "
        "decoder will wait for the encoders; arena_mb={} or a smaller chunk_frames lets the "
        "stages overlap",
        config_.arena_mb, arena_.slot_count, wanted, arena_.slot_bytes >> 20, needed_mb);
  }
  return Status::Ok();
}

// Whether the workers page-lock this job's arena (page_lock_arena; with "auto", when the frames
// this run renders pay for it: WorthPageLocking). Only CUDA workers act on it.
bool JobRun::PageLocks() const {
  switch (settings_.page_lock_arena) {
    case PageLockArena::kOn:
      return true;
    case PageLockArena::kOff:
      return false;
    case PageLockArena::kAuto:
      break;
  }
  const int64_t frames = ChunkStartFrame(end_chunk_) - ChunkStartFrame(first_chunk_);
  return frames > 0 && WorthPageLocking(arena_, static_cast<uint64_t>(frames));
}

// The geometry of this job's frames (source_geometry.h, output_geometry.h): the decoder's filters
// (deinterlacing, then turning upright), the output's sample aspect ratio (the source's display
// aspect kept), field order and a pixel format that can hold its size.
std::vector<std::string> JobRun::DecoderFilters() const {
  std::vector<std::string> filters = decoder_filters_;
  for (const std::string& f :
       ColorFilters(color_path_, in_format_, color_conversion_ == ColorConversion::kAccurate))
    filters.push_back(f);
  return filters;
}

Status JobRun::PlanGeometry() {
  const VideoStreamInfo& v = media_.video;
  out_geometry_.display_width = out_w_;
  out_geometry_.display_height = out_h_;
  out_geometry_.sample_aspect =
      OutputSampleAspect(UprightSampleAspect(v), v.display_width, v.display_height, out_w_, out_h_);
  out_geometry_.field_order = !KeepsFields(v, settings_.deinterlace) ? "progressive"
                              : TopFieldFirst(v.field_order)         ? "tt"
                                                                     : "bb";
  std::string chain;
  for (const std::string& f : decoder_filters_) chain += (chain.empty() ? "" : ",") + f;
  std::string warning;
  // After ResolveDepth: pix_fmt "auto" is already the source's depth and chroma layout.
  Result<std::string> pix_fmt =
      PixelFormatForSize(encoder_.codec, encoder_.pix_fmt, out_w_, out_h_, &warning);
  if (!pix_fmt.ok()) return pix_fmt.status();
  if (!warning.empty()) {
    spdlog::warn("{}", warning);
    report_.warnings.push_back(warning);
  }
  encoder_.pix_fmt = *pix_fmt;
  spdlog::info(
      "geometry: stored {}x{}, shown {}x{} (turned {} degrees{}), sample aspect {}, field order "
      "{}; decoder filters: {}; output {}x{}, sample aspect {}, {}",
      v.width, v.height, v.display_width, v.display_height, v.rotation, v.hflip ? ", mirrored" : "",
      v.sample_aspect.ToString(), v.field_order.empty() ? "unknown" : v.field_order,
      chain.empty() ? "none" : chain, out_w_, out_h_, out_geometry_.sample_aspect.ToString(),
      out_geometry_.field_order);
  return Status::Ok();
}

// The encoded segments and the final file coexist until the end, on the scratch and output file
// systems. Estimate them from the input's size, scaled by the output's pixel count, with a 50%
// margin (free_space.h); a wrong guess fails later, cleanly, with no_space.
Status JobRun::CheckFreeSpace() const {
  struct stat st {};
  if (::fstat(input_fd_.get(), &st) != 0) return Status::Ok();
  const SpaceNeeded need = EstimateSpace(
      st.st_size, int64_t{out_w_} * out_h_, int64_t{media_.video.width} * media_.video.height,
      state_->resumed(), static_cast<int64_t>(plan_.segments.size()));
  SpaceFree free;
  free.scratch_dir = scratch_;
  free.scratch = FreeBytes(scratch_);
  free.output_dir = FdPath(output_dir_fd_.get());
  free.output = FreeBytes(free.output_dir);
  return CheckSpace(need, free);
}

// Starts ffmpeg on the source at frame `skip`: a keyframe seek and a drop by timestamp
// (decode_seek.h), or, for a video without timestamps, by dropping the first `skip` frames
// here. A part's decoder stops by itself after the part's last frame.
Status JobRun::StartDecoder(int64_t skip) {
  reader_.reset();  // a crashed one is reaped here
  const int64_t end_frame = end_chunk_ < static_cast<int64_t>(plan_.chunks.size())
                                ? plan_.chunks[end_chunk_].first_frame
                                : 0;
  DecodeSeek seek = SeekFor(media_.video, media_.start_time, skip, 0);
  const int64_t from = seek.seeks() ? skip : 0;
  if (end_frame > 0) seek.max_frames = end_frame - from;
  if (seek.seeks()) {
    spdlog::info(
        "decoder: frame {} on, seeking to {:.3f} s and dropping frames shown before "
        "{:.6f} s",
        skip, seek.input_seek_s, seek.trim_start_s);
  }
  Result<std::unique_ptr<FrameReader>> reader = FrameReader::Start(
      config_.ffmpeg, source_, media_.video, scratch_ + "/decoder.log", in_format_,
      DecoderFilters(), color_conversion_ == ColorConversion::kAccurate, seek);
  if (!reader.ok()) return reader.status();
  reader_ = std::move(*reader);
  next_frame_ = from;
  std::vector<uint8_t> discard(arena_.InFrameBytes());
  while (next_frame_ < skip) {
    if (board_->failed()) return Status(StatusCode::kCancelled, "the job failed elsewhere");
    Result<bool> got = reader_->Read(discard.data());
    if (!got.ok()) return got.status();
    if (!*got) {
      Status finished = reader_->Finish();
      if (IsCrash(finished)) return finished;
      return Status(StatusCode::kInputInvalid,
                    "decoding ended after " + std::to_string(next_frame_) + " frames of the " +
                        std::to_string(skip) + " to skip" +
                        (finished.ok() ? "" : "; " + finished.message()));
    }
    ++next_frame_;
  }
  return Status::Ok();
}

// The next frame into `dst`: true, or false at the end of the stream. A decoder that crashed
// (killed by a signal) is started again, up to decoder_restarts times, and resumes at the frame
// it stopped at. One that exits with an error before the last frame is tried once more at that
// frame: stopping there again makes it bad input (false, for Finish to report), getting past it
// makes it a crash survived. An error exit at the end is left for Finish to report.
Result<bool> JobRun::ReadFrame(uint8_t* dst) {
  static const int64_t kill_at = FaultHook("FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME");
  static const int64_t term_at = FaultHook("FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME");
  for (;;) {
    if ((next_frame_ == kill_at || next_frame_ == term_at) &&
        !g_decoder_fault_fired.exchange(true)) {
      const int sig = next_frame_ == kill_at ? SIGKILL : SIGTERM;
      spdlog::warn("fault hook: sending the decoder signal {} before frame {}", sig, next_frame_);
      reader_->KillForTest(sig);
    }
    Result<bool> got = reader_->Read(dst);
    Status failure;
    if (got.ok() && *got) {
      ++next_frame_;
      return true;
    }
    const bool budget = report_.decoder_restarts < config_.decoder_restarts;
    if (got.ok()) {
      failure = reader_->Finish();
      // An error exit before the frames the packets promise: bad input if a second decoder
      // stops at this very frame too, a crash if it gets past it. Tried once per frame.
      const bool suspect = !failure.ok() && !IsCrash(failure) && budget &&
                           next_frame_ < plan_.frame_count && next_frame_ != error_retried_at_;
      if (!IsCrash(failure) && !suspect) return false;
      if (suspect) {
        error_retried_at_ = next_frame_;
        failure = Status(StatusCode::kDecoderCrashed,
                         "ffmpeg decoder failed before frame " + std::to_string(next_frame_) +
                             " of " + std::to_string(plan_.frame_count) + " (" + failure.message() +
                             "); trying once more to tell a crash from bad "
                             "input");
      }
    } else {
      failure = got.status();
    }
    if (!IsCrash(failure) || !budget) return failure;
    ++report_.decoder_restarts;
    report_.faults_retried.push_back(failure.message());
    spdlog::warn("{}: {}; restarting the decoder at frame {} (restart {} of {})", job_.input,
                 failure.ToString(), next_frame_, report_.decoder_restarts,
                 config_.decoder_restarts);
    const int64_t resume_at = next_frame_;
    Status restarted = StartDecoder(resume_at);
    if (!restarted.ok()) return restarted;
  }
}

void JobRun::DecodeLoop() {
  const VideoStreamInfo& v = media_.video;
  if (first_chunk_ >= end_chunk_) return;  // every segment already finished: nothing to decode
  const int64_t skip = plan_.chunks[first_chunk_].first_frame;
  Status started = StartDecoder(skip);
  if (!started.ok()) {
    reader_.reset();
    return board_->Fail(started.WithContext(job_.input + " (skipping finished segments)"));
  }
  size_t frame_bytes = arena_.InFrameBytes();
  std::vector<bool> reserved(arena_.slot_count, false);  // by this loop (CreateFrameArena)
  auto fail = [&](const Status& s) {
    reader_.reset();  // kills and reaps the decoder now, not when the job object goes
    board_->Fail(s);
  };
  // Time from `from` to now: the pipeline's share into `*pipeline`, the start's (an early
  // decoder's) into `*early` when given.
  auto account = [this](uint64_t from, double* pipeline, double* early) {
    const uint64_t now = MonotonicUs();
    const uint64_t p = pipeline_start_us_.load(std::memory_order_acquire);
    const uint64_t split = p == 0 ? now : std::clamp(p, from, now);
    if (early != nullptr) *early += static_cast<double>(split - from) / 1e6;
    *pipeline += static_cast<double>(now - split) / 1e6;
  };
  for (int64_t c = first_chunk_; c < end_chunk_; ++c) {
    const ChunkPlan& chunk = plan_.chunks[c];
    uint64_t t_wait = MonotonicUs();
    std::optional<uint32_t> slot = board_->AcquireSlot();
    uint64_t t_read = MonotonicUs();
    account(t_wait, &stages_.decode_wait_s, nullptr);  // waiting for the workers: the start's
    if (!slot) return reader_.reset();
    if (!reserved[*slot]) {
      // Its pages, before anything touches them (CreateFrameArena); a no-op where they are.
      const auto [offset, bytes] = ArenaSlotRange(arena_, *slot);
      Status r = arena_shm_.Reserve(offset, bytes);
      if (!r.ok()) return fail(r);
      reserved[*slot] = true;
    }
    uint8_t* dst = arena_.SlotIn(arena_base_, *slot);
    for (int32_t f = 0; f < chunk.frames; ++f) {
      Result<bool> got = ReadFrame(dst + f * frame_bytes);
      if (!got.ok()) return fail(got.status().WithContext(job_.input));
      if (!*got) {
        Status finished = reader_->Finish();
        return fail(Status(StatusCode::kInputInvalid,
                           job_.input + ": decoding ended after " + std::to_string(next_frame_) +
                               " of " + std::to_string(v.frame_count) +
                               " frames (truncated or corrupt input)" +
                               (finished.ok() ? "" : "; " + finished.message())));
      }
    }
    if (faces_) WriteChunkFaces(chunk.first_frame, chunk.frames, *slot);
    account(t_read, &stages_.decode_s, &stages_.decode_early_s);
    board_->MarkDecoded(chunk.index, *slot);
    if (c == first_chunk_) spdlog::info("decoder: chunk {} ready", c);
    // Before the dispatcher exists (an early decoder) nothing waits: its Run finds the chunks.
    if (Dispatcher* d = wake_.load(std::memory_order_acquire)) d->Wake();
  }
  std::vector<uint8_t> extra(frame_bytes);
  // A part that ends before the video does: its decoder stopped at the part's last frame.
  Result<bool> more = ReadFrame(extra.data());
  if (more.ok() && *more && end_chunk_ == static_cast<int64_t>(plan_.chunks.size())) {
    return fail(Status(StatusCode::kInputInvalid,
                       job_.input + ": decoder gives more frames than the " +
                           std::to_string(v.frame_count) + " its packets promise"));
  }
  Status finished = more.ok() ? reader_->Finish() : more.status();
  if (!finished.ok()) return fail(finished.WithContext(job_.input));
  reader_.reset();
}

// Encoder `encoder` of settings_.encoders takes every encoders-th segment.
void JobRun::EncodeLoop(int encoder) {
  SegmentFormat fmt;
  fmt.width = out_w_;
  fmt.height = out_h_;
  fmt.frame_rate = media_.video.frame_rate;
  fmt.encoder = encoder_;
  fmt.accurate_color = color_conversion_ == ColorConversion::kAccurate;
  fmt.color = color_path_;
  fmt.in_format = out_format_;
  fmt.hdr = media_.video.hdr;
  fmt.sample_aspect = out_geometry_.sample_aspect;
  fmt.field_order = out_geometry_.field_order;
  double busy_s = 0, wait_s = 0;
  for (int64_t si = seg_begin_ + state_->resumed() + encoder; si < seg_end_;
       si += settings_.encoders) {
    Status s = EncodeSegment(plan_.segments[si], fmt, encoder, &busy_s, &wait_s);
    if (!s.ok()) {
      board_->Fail(s.WithContext("segment " + std::to_string(si)));
      break;
    }
    if (board_->failed()) break;
  }
  std::lock_guard<std::mutex> lock(stages_mu_);
  stages_.encode_s += busy_s;
  stages_.encode_wait_s += wait_s;
}

Status JobRun::EncodeSegment(const SegmentPlan& seg, const SegmentFormat& fmt, int encoder,
                             double* busy_s, double* wait_s) {
  static const int64_t kill_segment = FaultHook("FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT");
  const size_t frame_bytes = arena_.OutFrameBytes();
  const std::string name = BaseName(state_->SegmentPath(seg.index));
  uint64_t t_start = MonotonicUs();
  // Written under a random name created exclusively, through its descriptor; renamed once done.
  Result<CreatedFile> partial =
      CreateExclusiveAt(scratch_dir_.dir.get(), name + ".partial.", "", 0600);
  if (!partial.ok()) return partial.status();
  auto remove_partial = [&] { ::unlinkat(scratch_dir_.dir.get(), partial->name.c_str(), 0); };
  Result<std::unique_ptr<SegmentEncoder>> enc =
      SegmentEncoder::Start(config_.ffmpeg, partial->fd.get(), fmt,
                            scratch_ + "/encoder-" + std::to_string(encoder) + ".log");
  if (!enc.ok()) {
    remove_partial();
    return enc.status();
  }
  *busy_s += static_cast<double>(MonotonicUs() - t_start) / 1e6;
  for (int64_t c = seg.first_chunk; c < seg.first_chunk + seg.chunk_count; ++c) {
    uint64_t t_wait = MonotonicUs();
    if (!board_->WaitProcessed(c)) {  // the job failed elsewhere
      enc->reset();                   // kills and reaps the encoder
      remove_partial();
      return Status::Ok();
    }
    uint64_t t_write = MonotonicUs();
    *wait_s += static_cast<double>(t_write - t_wait) / 1e6;
    const ChunkPlan& chunk = plan_.chunks[c];
    Status written =
        (*enc)->Write(arena_.SlotOut(arena_base_, board_->SlotOf(c)), frame_bytes * chunk.frames);
    if (!written.ok()) {
      remove_partial();
      return written;
    }
    if (stills_->Wants(c)) {
      const uint32_t slot = board_->SlotOf(c);
      stills_->Capture(c, arena_.SlotIn(arena_base_, slot), arena_.SlotOut(arena_base_, slot));
    }
    board_->ReleaseSlot(c);
    frames_written_.fetch_add(chunk.frames);
    if (seg.index == kill_segment && !g_encoder_fault_fired.exchange(true)) {
      spdlog::warn("fault hook: killing the encoder of segment {}", seg.index);
      (*enc)->KillForTest();
    }
    *busy_s += static_cast<double>(MonotonicUs() - t_write) / 1e6;
  }
  uint64_t t_finish = MonotonicUs();
  Status done = (*enc)->Finish();
  if (done.ok() && ::fsync(partial->fd.get()) != 0) {
    done = Status(StatusCode::kIo, "fsync segment " + name + ": " + std::strerror(errno));
  }
  if (done.ok()) {
    done = RenameCheckedAt(scratch_dir_.dir.get(), partial->name, partial->fd.get(), name,
                           RenameMode::kReplace);
  }
  if (!done.ok()) {
    remove_partial();
    return done;
  }
  struct stat sb {};
  if (::fstat(partial->fd.get(), &sb) != 0) return Status(StatusCode::kIo, "stat " + name);
  FM_RETURN_IF_ERROR(SegmentFinished(seg.index, sb.st_size));
  const uint64_t closed_us = MonotonicUs() - t_finish;
  *busy_s += static_cast<double>(closed_us) / 1e6;
  spdlog::debug("segment {} done: {} frames, closed {} ms after its last frames were written",
                seg.index, seg.frames, closed_us / 1000);
  return Status::Ok();
}

Status JobRun::FindFaces() {
  const VideoStreamInfo& v = media_.video;
  const int64_t first = first_chunk_ < end_chunk_ ? plan_.chunks[first_chunk_].first_frame : 0;
  const int64_t end = ChunkStartFrame(end_chunk_);
  const std::string kept = scratch_ + "/faces.json";
  FaceTableNeed need;
  need.width = v.display_width;
  need.height = v.display_height;
  need.face_size = settings_.faces.size;
  need.video_frames = plan_.frame_count;
  need.first_frame = first;
  need.frames = end - first;
  // A resumed run: the table the first run made covers these frames (it began at or before them).
  // Only with segments kept: a job started over (its input, model or settings changed) finds
  // its faces again, as a new job would.
  Result<FaceTable> table = state_->resumed() > 0
                                ? ReadFaceTable(kept)
                                : Result<FaceTable>(Status(StatusCode::kIo, "started over"));
  if (table.ok()) {
    FaceTableNeed whole = need;
    whole.first_frame = table->first_frame;
    whole.frames = end - table->first_frame;
    if (table->first_frame <= first && table->face_margin == settings_.faces.margin &&
        CheckFaceTable(*table, whole, kept).ok()) {
      spdlog::info("faces: the table of the first run ({}), frames {} to {}", kept, first, end);
      faces_ = std::move(*table);
    }
  }
  if (!faces_) {
    Result<std::vector<std::string>> filters = GeometryFilters(v, settings_.deinterlace);
    if (!filters.ok()) return filters.status().WithContext(job_.input);
    JobFacesInput in;
    in.source = &source_;
    in.media = &media_;
    in.filters = std::move(*filters);
    in.first = first;
    in.end = end;
    in.stderr_path = scratch_ + "/faces-decoder.log";
    Result<FaceTable> made = FacesForJob(config_, settings_, in, stop_);
    if (!made.ok()) return made.status();
    FM_RETURN_IF_ERROR(WriteFaceTable(kept, *made));
    faces_ = std::move(*made);
  }
  report_.faces = FaceFiguresOf(*faces_, v.frame_rate.value());
  // Only this run's frames count in its figures.
  spdlog::info("faces: {} in frames {} to {} ({} frames without a face, {} tracks)",
               report_.faces.faces_found, first, end, report_.faces.frames_without_faces,
               faces_->stats.tracks);
  return Status::Ok();
}

void JobRun::WriteChunkFaces(int64_t first, int32_t frames, uint32_t slot) {
  FaceWarp* dst = arena_.SlotFaces(arena_base_, slot);
  const uint32_t per_frame = arena_.face_slots;
  std::memset(dst, 0, sizeof(FaceWarp) * per_frame * static_cast<size_t>(frames));
  for (int32_t f = 0; f < frames; ++f) {
    const int64_t row = first + f - faces_->first_frame;
    if (row < 0 || row >= static_cast<int64_t>(faces_->frames.size())) continue;
    const std::vector<FaceWarp>& in = faces_->frames[static_cast<size_t>(row)];
    // A table's warps are present ones (face_align.h, face_table.h), largest first.
    std::copy_n(in.begin(), std::min<size_t>(in.size(), per_frame),
                dst + static_cast<size_t>(f) * per_frame);
  }
}

Status JobRun::SegmentFinished(int64_t index, int64_t bytes) {
  FM_RETURN_IF_ERROR(state_->Finished(index, bytes));
  if (live_mux_ != nullptr) live_mux_->SegmentReady(static_cast<size_t>(index));
  if (state_->all_done()) {
    board_->MarkAllEncoded();
    dispatcher_->Wake();
  }
  return Status::Ok();
}

Result<JobReport> JobRun::Run() {
  Result<JobReport> result = RunPipeline();
  // Every job that started workers, but one refused for want of disk space: adding a file to a
  // full disk helps nobody.
  const bool no_space = !result.ok() && result.status().code() == StatusCode::kNoSpace;
  if (dispatcher_ != nullptr && !no_space && options_.write_report) WriteReport(&result);
  return result;
}

void JobRun::WriteReport(Result<JobReport>* result) {
  const Status outcome = result->ok() ? Status::Ok() : result->status();
  if (!result->ok()) {  // what the failed job had measured
    report_.dispatch = dispatcher_->stats();
    report_.timeline = timeline_.path();
  }
  JobReport& r = result->ok() ? **result : report_;
  std::string note = "the job ended before its frames reached the arena";
  std::vector<ReportStill> stills;
  if (stills_ != nullptr) {
    stills = stills_->Encode(&note);
  } else if (!StillsAvailable()) {
    note = "this build has no OpenCV";
  }
  const std::string path = job_.output + ".report.html";
  const std::string& filed =
      outcome.ok() ? options_.timeline_filed_done : options_.timeline_filed_failed;
  const std::string html = RenderReportHtml(
      MakeReportData(job_, r, outcome, timeline_.records(), std::move(stills), note, filed));
  Status written = WriteReportFile(output_dir_fd_.get(), ReportName(output_name_), html,
                                   options_.output_reader_uid);
  JobReportFile file;
  if (written.ok()) {
    file.path = path;
    if (result->ok()) (*result)->report = path;
  } else {
    file.warning = "job report not written: " + written.message();
    spdlog::warn("{}: {}", job_.output, file.warning);
    if (result->ok()) (*result)->warnings.push_back(file.warning);
  }
  if (options_.report_file != nullptr) *options_.report_file = file;
}

Result<JobReport> JobRun::RunPipeline() {
  uint64_t t0 = MonotonicMs();
  uint64_t t_stage = MonotonicUs();
  auto lap = [&t_stage](double* into) {
    uint64_t now = MonotonicUs();
    *into = static_cast<double>(now - t_stage) / 1e6;
    t_stage = now;
  };
  FM_RETURN_IF_ERROR(Prepare());
  lap(&stages_.prepare_s);
  if (options_.stitch) {
    Result<JobReport> stitched = Stitch();
    lap(&stages_.mux_s);
    if (stitched.ok()) FillReport(t0);
    return stitched.ok() ? Result<JobReport>(report_) : stitched;
  }
  {
    // Beside the output: in the checked output directory. Elsewhere (the service's spool): in
    // the caller's directory.
    const std::string timeline =
        options_.timeline.empty() ? job_.output + ".timeline.jsonl" : options_.timeline;
    UniqueFd other_dir;
    if (!options_.timeline.empty()) {
      other_dir.Reset(::open(DirName(timeline).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!other_dir.valid()) {
        return Status(StatusCode::kIo,
                      "open directory of " + timeline + ": " + std::strerror(errno));
      }
    }
    Result<UniqueFd> fd = CreateInPlace(other_dir.valid() ? other_dir.get() : output_dir_fd_.get(),
                                        BaseName(timeline));
    if (!fd.ok()) return fd.status();
    FM_RETURN_IF_ERROR(timeline_.Adopt(::fcntl(fd->get(), F_DUPFD_CLOEXEC, 0), timeline, t0));
  }
  if (options_.part.whole()) source_carried_.emplace(CarriedOf(media_, source_.name));
  if (settings_.mode == JobMode::kFaces) {
    FM_RETURN_IF_ERROR(FindFaces());
    lap(&stages_.faces_s);
  }
  // The arena: the previous job's when this one reuses its workers (they are ready at once:
  // nothing to make an arena beside, and their probe, not a guess, says whether it fits); else
  // one made while the workers start, from a guess of its geometry, and decoded into at once.
  const WarmChoice warm_choice = ChooseWarmPool();
  ReadyArenas ready;
  std::thread decoder;
  // Should anything throw before the decoder is joined below, it is stopped and joined on the
  // way out (a joinable thread's destructor would end the process, and with it the service).
  struct StopDecoderOnExit {
    JobRun* run;
    std::thread& t;
    ~StopDecoderOnExit() {
      if (!t.joinable()) return;
      if (run->board_) run->board_->Fail(Status(StatusCode::kInternal, "the job ended early"));
      t.join();
    }
  } stop_decoder{this, decoder};
  ready.kept = TakeKeptArena(warm_choice, &ready.kept_geometry);
  if (ready.kept.data() == nullptr) {
    ready.guess = GuessArena(&ready.guess_conversion);
    if (ready.guess) StartEarlyDecoder(&ready, &decoder);
  }
  Status s = StartWorkers(warm_choice);
  if (s.ok()) s = CreateArena(&ready, &decoder);
  if (!s.ok()) {
    if (board_) board_->Fail(s);  // an early decoder stops at its next chunk
    if (decoder.joinable()) decoder.join();
    if (dispatcher_) dispatcher_->Shutdown();
    return s;
  }
  lap(&stages_.start_s);
  pipeline_start_us_.store(MonotonicUs(), std::memory_order_release);
  StartLiveMux();
  {
    std::vector<int64_t> first_frames;
    for (const ChunkPlan& c : plan_.chunks) first_frames.push_back(c.first_frame);
    stills_ = std::make_unique<StillCapture>(std::move(first_frames), arena_);
  }
  if (state_->all_done()) {
    board_->MarkAllEncoded();  // a resumed job whose every segment was already finished
  }
  std::vector<std::thread> encoders;
  std::atomic<int> encoders_left{settings_.encoders};
  for (int e = 0; e < settings_.encoders; ++e) {
    encoders.emplace_back([this, e, &encoders_left] {
      try {
        EncodeLoop(e);
      } catch (const std::exception& ex) {
        board_->Fail(Status(StatusCode::kInternal, std::string("encoder thread: ") + ex.what()));
      }
      encoders_left.fetch_sub(1);
    });
  }
  auto tick = [this](int64_t processed) {
    if (!options_.on_progress) return;
    JobProgress p;
    p.frames_total = plan_.frame_count;
    p.frames_done = ChunkStartFrame(processed);
    p.frames_written = ChunkStartFrame(first_chunk_) + frames_written_.load();
    p.segments_total = static_cast<int64_t>(plan_.segments.size());
    p.segments_done = state_->done();
    p.frames_resumed = ChunkStartFrame(first_chunk_);
    p.workers = dispatcher_->LiveWorkers();
    p.dispatch = &dispatcher_->stats();
    options_.on_progress(p);
  };
  dispatcher_->Run(board_.get(), arena_shm_.name(), arena_, first_chunk_, stop_, tick);
  decoder.join();
  // The encoders may trail the workers by much (an encode-bound job): the progress goes on,
  // counting the frames written, until they end.
  while (encoders_left.load() > 0 && !board_->failed()) {
    if (stop_.load()) {
      board_->Fail(Status(StatusCode::kCancelled, "stopped by signal"));
      break;
    }
    tick(end_chunk_);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : encoders) t.join();
  if (const uint64_t last = board_->last_processed_us(); last > 0) {
    stages_.tail_s = static_cast<double>(MonotonicUs() - last) / 1e6;
  }
  lap(&stages_.pipeline_s);
  report_.dispatch = dispatcher_->stats();
  stages_.workers_busy_s = report_.dispatch.WorkerBusySeconds();
  stages_.workers = settings_.workers;
  stages_.encoders = settings_.encoders;
  if (board_->failed()) {
    dispatcher_->Shutdown();
    return board_->failure();
  }
  // After a clean finish no request is in flight: idle workers can serve the next job. Workers
  // not kept are asked to stop now and reaped after the mux, which their exits overlap.
  const bool kept = options_.warm != nullptr;
  if (kept) {
    options_.warm->pool = dispatcher_->Release();
    options_.warm->key = JobWarmKey();
    // The frames are all encoded: the arena is free for the next job of these workers.
    options_.warm->arena = std::move(arena_shm_);
    options_.warm->arena_geometry = arena_;
    arena_base_ = nullptr;
  } else {
    dispatcher_->BeginShutdown();
  }

  if (!options_.part.whole()) {  // a part ends with its segments: the stitch muxes
    if (!kept) dispatcher_->Shutdown();
    FillReport(t0);
    report_.output = options_.workspace;
    report_.frames = 0;
    for (int64_t si = seg_begin_; si < seg_end_; ++si) report_.frames += plan_.segments[si].frames;
    report_.chunks = end_chunk_ - plan_.segments[seg_begin_].first_chunk;
    report_.segments = seg_end_ - seg_begin_;
    return report_;
  }
  std::vector<std::string> segments;
  std::vector<int64_t> frames;
  PlanSegments(&segments, &frames);
  Status muxed = Mux(segments, frames);
  if (!kept) dispatcher_->Shutdown();
  FM_RETURN_IF_ERROR(muxed);
  lap(&stages_.mux_s);
  spdlog::info("stages: {}", stages_.Summary());
  FillReport(t0);
  return report_;
}

void JobRun::PlanSegments(std::vector<std::string>* segments, std::vector<int64_t>* frames) const {
  for (const SegmentPlan& seg : plan_.segments) {
    segments->push_back(state_->SegmentPath(seg.index));
    frames->push_back(seg.frames);
  }
}

void JobRun::StartLiveMux() {
  if (!UsesLiveMux(settings_.live_mux, options_.part.whole() && !options_.stitch,
                   media_.video.constant_rate) ||
      !source_carried_.has_value() || !source_carried_->ok()) {
    return;  // (metadata that could not be read: the mux after the render reads it again)
  }
  std::vector<std::string> segments;
  std::vector<int64_t> frames;
  PlanSegments(&segments, &frames);
  MuxRequest rq = MakeMuxRequest(segments, frames);
  rq.source_carried = **source_carried_;
  live_mux_ = LiveMux::Start(std::move(rq));
  for (int64_t i = 0; i < state_->resumed(); ++i) live_mux_->SegmentReady(static_cast<size_t>(i));
}

// Joins `segments` (each of `frames`), adds the source's other streams, verifies, and renames
// the output into place (output_muxer.h). A live mux has joined them already but for the last:
// it finishes; should it fail, they are joined again here, from their files.
Status JobRun::Mux(const std::vector<std::string>& segments, const std::vector<int64_t>& frames) {
  if (live_mux_ != nullptr) {
    Status live = live_mux_->Finish();
    live_mux_.reset();
    if (live.ok()) {
      report_.mux = "live";
      return live;
    }
    if (live.code() == StatusCode::kNoSpace) return live;  // joining again needs the same space
    const std::string warning =
        "the join beside the render failed (" + live.ToString() + "); joined again at the end";
    spdlog::warn("{}: {}", job_.output, warning);
    report_.warnings.push_back(warning);
  }
  MuxRequest mux = MakeMuxRequest(segments, frames);
  if (source_carried_.has_value() && source_carried_->ok()) {
    mux.source_carried = **source_carried_;  // else probed again, reported
  }
  report_.mux = "after";
  return MuxAndVerify(mux);
}

MuxRequest JobRun::MakeMuxRequest(const std::vector<std::string>& segments,
                                  const std::vector<int64_t>& frames) const {
  MuxRequest mux;
  mux.ffmpeg = config_.ffmpeg;
  mux.ffprobe = config_.ffprobe;
  mux.source = source_;
  mux.source_info = &media_;
  mux.segments = segments;
  mux.segment_frames = frames;
  mux.frame_rate = media_.video.frame_rate;
  mux.scratch_dir = scratch_;
  mux.scratch_fd = scratch_dir_.dir.get();
  mux.output_dir_fd = output_dir_fd_.get();
  mux.output_name = output_name_;
  mux.output = job_.output;
  mux.overwrite = job_.overwrite;
  mux.output_reader_uid = options_.output_reader_uid;
  mux.geometry = out_geometry_;
  mux.expected_pix_fmt = encoder_.pix_fmt;
  mux.expected_color = color_path_;
  mux.codec = encoder_.codec;
  return mux;
}

void JobRun::FillReport(uint64_t t0) {
  report_.output = job_.output;
  report_.frames = plan_.frame_count;
  report_.chunks = static_cast<int64_t>(plan_.chunks.size());
  report_.segments = static_cast<int64_t>(plan_.segments.size());
  report_.in_width = media_.video.display_width;
  report_.in_height = media_.video.display_height;
  report_.out_width = out_w_;
  report_.out_height = out_h_;
  report_.worker_input_format = color_conversion_ == ColorConversion::kDevice
                                    ? media_.video.pix_fmt
                                    : FrameFormatName(in_format_);
  report_.output_pix_fmt = encoder_.pix_fmt;
  report_.seconds = static_cast<double>(MonotonicMs() - t0) / 1000.0;
  report_.timeline = timeline_.path();
}

// `framemill stitch`: every part's done-log must list all its segments (read, never written);
// the segments' own size is the output's (the model's scale, found by the parts' workers).
Result<JobReport> JobRun::Stitch() {
  Result<PartsPlan> parts = ReadPartsPlan(options_.parts_dir);
  if (!parts.ok()) return parts.status();
  Result<PartsPlan> mine = MakePartsPlan(job_, plan_, static_cast<int>(parts->parts.size()));
  if (!mine.ok()) return mine.status();
  FM_RETURN_IF_ERROR(SamePartsPlan(*parts, *mine));
  std::vector<std::string> segments;
  std::vector<int64_t> frames;
  const int count = static_cast<int>(parts->parts.size());
  for (int i = 0; i < count; ++i) {
    const PartRange& r = parts->parts[static_cast<size_t>(i)];
    const PartRef ref{i + 1, count};
    JobState st(PartDir(options_.parts_dir, ref), job_, plan_, chunks_per_segment_, r.first_segment,
                r.end_segment());
    FM_RETURN_IF_ERROR(st.Load(/*write_back=*/false));
    if (!st.all_done()) {
      return Status(StatusCode::kInvalidJob,
                    "part " + ref.ToString() + " is not finished: " + std::to_string(st.done()) +
                        " of its " + std::to_string(r.segment_count) + " segments are done");
    }
    for (int64_t si = r.first_segment; si < r.end_segment(); ++si) {
      segments.push_back(st.SegmentPath(si));
      frames.push_back(plan_.segments[si].frames);
    }
  }
  Result<MediaInfo> first = ProbeMedia(config_.ffprobe, segments.front(), /*frame_times=*/false);
  if (!first.ok()) return first.status().WithContext("stitch");
  out_w_ = first->video.width;
  out_h_ = first->video.height;
  FM_RETURN_IF_ERROR(PlanGeometry());
  scratch_dir_.dir.Reset(::open(options_.parts_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!scratch_dir_.dir.valid()) {
    return Status(StatusCode::kIo, "open " + options_.parts_dir + ": " + std::strerror(errno));
  }
  scratch_ = scratch_dir_.path();
  spdlog::info("stitch: {} parts, {} segments, {}x{}", count, segments.size(), out_w_, out_h_);
  FM_RETURN_IF_ERROR(Mux(segments, frames));
  report_.segments_resumed = static_cast<int64_t>(segments.size());
  return report_;
}

}  // namespace

void WarmWorkers::Stop(int timeout_ms) {
  if (pool != nullptr) pool->StopAll(timeout_ms);
  pool.reset();
  arena = SharedMemory();
}

Result<JobReport> RunJob(const JobSpec& job, const Config& config, const std::atomic<bool>& stop,
                         const JobOptions& options) {
  JobFiles files;
  std::vector<std::string> faults;
  std::optional<Result<JobReport>> result;
  for (int attempt = 0;; ++attempt) {
    {
      JobRun run(job, config, stop, options, &files);
      result.emplace(run.Run());
      files.segments_done = run.SegmentsDone();
      if (options.attempt_dispatch != nullptr) options.attempt_dispatch->push_back(run.Dispatch());
    }
    if (result->ok()) {
      JobReport& r = **result;
      r.attempts = attempt + 1;
      r.faults_retried.insert(r.faults_retried.begin(), faults.begin(), faults.end());
      break;
    }
    const Status& s = result->status();
    if (!IsCrash(s) || attempt >= config.crash_retries || stop.load()) break;
    spdlog::warn("{}; running the job again, keeping its finished segments (retry {} of {})",
                 s.ToString(), attempt + 1, config.crash_retries);
    faults.push_back(s.message());
  }
  if (!files.private_name.empty() && files.output_dir.valid()) {
    files.dir.Reset();
    (void)RemoveTreeAt(files.output_dir.get(), files.private_name);
  }
  // Stopped: whatever failed on the way out (a decoder that took the terminal's SIGINT too) is
  // the stop's doing; the job ends cancelled, its work kept.
  if (!result->ok() && stop.load() && result->status().code() != StatusCode::kCancelled) {
    result.emplace(Status(StatusCode::kCancelled,
                          "stopped by signal (meanwhile: " + result->status().ToString() + ")"));
  }
  // The kept work goes once the output is in place, or when the job could not start as it is;
  // it is removed while still locked, so that no other run takes it meanwhile.
  if (!files.kept_name.empty() &&
      (result->ok() || !KeepsWork(result->status(), files.segments_done))) {
    (void)RemoveTreeAt(files.output_dir.get(), files.kept_name);
  }
  files.dir.Reset();
  files.kept_lock.Reset();
  return std::move(*result);
}

}  // namespace framemill
