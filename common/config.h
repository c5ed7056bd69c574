// The service configuration (config/framemill.json, documented key by key in config/README.md)
// and the per-job settings that jobs may override. Every field has a default and a unit.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/face_setting.h"
#include "common/status.h"
#include "common/tile_setting.h"

namespace framemill {

// How output segments are encoded. Every segment of a job is encoded with identical settings
// so that segments can be joined by stream copy.
struct EncoderSettings {
  std::string codec = "libx264";  // any ffmpeg video encoder name
  int crf = 18;                   // constant rate factor; -1 = leave to the encoder
  std::string preset = "medium";  // encoder preset; "" = none (for encoders without presets)
  // Output pixel format (an ffmpeg name), or "auto": the source's bit depth and chroma layout where
  // the encoder has them, else the nearest (supervisor/media/pixel_format.h), with a warning.
  std::string pix_fmt = "auto";
};

// When a worker is replaced on purpose. Soft limits are checked between chunks: the worker
// finishes what it holds, then exits cleanly. 0 turns a limit off.
struct RecycleSettings {
  int64_t gpu_reserved_mb = 0;  // CUDA caching allocator's reserved memory, MiB
  int64_t rss_mb = 0;           // current resident set, MiB
  int64_t max_chunks = 0;       // chunks per worker (like Celery's max_tasks_per_child)
  double jitter = 0.1;          // each worker's limits are lowered by up to this fraction, at
                                // random, so that workers do not all recycle at once
  bool warm_standby = true;     // start the replacement and load its model before the old
                                // worker stops taking chunks
};

// When a worker is killed: SIGTERM, then SIGKILL after grace_s; its chunks are sent again.
struct KillSettings {
  int64_t gpu_reserved_mb = 0;  // 0 = off
  int64_t rss_mb = 0;           // 0 = off
  double grace_s = 10.0;
};

// What a worker does to the TorchScript model it loads, before the first frame
// (worker/model/frame_model.h): torch.jit.freeze (parameters become constants, the graph is
// simplified) and optimize_for_inference (convolutions fused with their bias, add and ReLU into
// cuDNN's fused kernels on CUDA). Same frames to within the precision's rounding; a model that
// cannot be frozen (one that changes its own attributes) runs as it is, with a warning.
enum class ModelOptimization {
  kAuto,  // on with CUDA, off on the CPU (see docs/gpu.md for the figures behind it)
  kOn,    // on every device
  kOff,   // the model as it is in the file
  // auto's freezing, and on an NVIDIA GPU a compiled engine (AOTInductor) for the job's frame
  // size, batch and precision from the engine cache when one is there (supervisor/engines/)
  kCompile,
};
const char* Name(ModelOptimization mode);  // "auto", "on", "off", "compile"
std::optional<ModelOptimization> ParseModelOptimization(const std::string& name);

// CUDA: whether each worker page-locks the job's shared-memory frame arena (cudaHostRegister), so
// that its copies run straight between the arena and the device, or stages them through small
// page-locked buffers of its own, the host copying each byte once more beside the device's work
// (worker/batch/batch_runner.h). Page-locking costs the worker about 0.4 s a GB of arena at its
// first chunk (1.5 s for the default 4 GB on an H200 machine) and pins the arena for the job;
// staging cost `restore` at 1080p about 1% of its steady-state rate there, and 0.2-0.3 s while the
// worker first touches the arena's pages (docs/gpu.md).
enum class PageLockArena {
  kAuto,  // page-lock when the job moves its arena's bytes 20 times over (WorthPageLocking)
  kOn,
  kOff,
};
const char* Name(PageLockArena mode);  // "auto", "on", "off"
std::optional<PageLockArena> ParsePageLockArena(const std::string& name);

// Where a job's workers run (worker/model/frame_model.h ResolveDevice): "auto", "cpu", "cuda" or
// "cuda:N".
enum class DeviceKind {
  kAuto,  // CUDA's first GPU when the worker's LibTorch has CUDA and a GPU is present, else CPU
  kCpu,
  kCuda,  // `index`, or the first GPU
};
struct DeviceSetting {
  DeviceKind kind = DeviceKind::kAuto;
  int index = -1;  // with kCuda: the GPU (cuda:N, 0..99); -1 = "cuda", the first

  // The plain CUDA setting ("cuda", no index): the one `gpus` narrows to a GPU per worker.
  bool AnyCuda() const { return kind == DeviceKind::kCuda && index < 0; }
  bool operator==(const DeviceSetting& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const DeviceSetting& o) const { return !(*this == o); }
};
std::string Name(const DeviceSetting& device);  // "auto", "cpu", "cuda", "cuda:N"
// Parses auto | cpu | cuda | cuda:N (N of one or two digits); nullopt for anything else.
std::optional<DeviceSetting> ParseDevice(const std::string& name);

// The number format of the model's weights and activations in the worker.
enum class Precision {
  kFp32,
  kFp16,  // CUDA only
  kBf16,
};
const char* Name(Precision precision);  // "fp32", "fp16", "bf16"
std::optional<Precision> ParsePrecision(const std::string& name);

// YUV <-> RGB conversion around the model, as a job sets it. The encoders' RGB -> YUV is
// swscale's, accurate with kAccurate, fast otherwise.
enum class ColorConversion {
  // kDevice when the workers run on a GPU and the source is 8-bit 4:2:0, kAccurate otherwise
  // (supervisor/job/color_choice.h decides it for a job).
  kAuto,
  kAccurate,  // swscale with accurate rounding
  kFast,      // without it: about 4x faster decoding at 1080p, slightly coarser rounding
  // The decoder passes 8-bit 4:2:0 YUV as it is and each worker converts it on its device: half
  // the bytes per frame and no swscale; other sources get kFast.
  kDevice,
};
const char* Name(ColorConversion mode);  // "auto", "accurate", "fast", "device"
std::optional<ColorConversion> ParseColorConversion(const std::string& name);

// Settings a job may override; the config file gives their defaults.
// What the decoder does with interlaced video before the model sees it (supervisor/
// source_geometry.h). Every filter here makes one frame of each source frame, so the frame-exact
// plan holds.
enum class Deinterlace {
  kAuto,   // bwdif on a source whose field_order says interlaced; others untouched
  kOff,    // frames go to the model with their fields; the output keeps the field order
  kBwdif,  // the named filter on every frame, whatever the flags say
  kYadif,
  kW3fdif,
  kEstdif,
  kKerndeint,
};
const char* Name(Deinterlace mode);  // "auto", "off", "bwdif", "yadif", ...
// Parses a mode or filter name; nullopt for anything else.
std::optional<Deinterlace> ParseDeinterlace(const std::string& name);

struct JobSettings {
  int chunk_frames = 32;          // frames per chunk: the unit of dispatch and of retry
  double segment_seconds = 60.0;  // target length of one encoded segment (rounded to chunks)
  int workers = 2;                // worker processes for the job
  // GPUs to spread the workers over (CUDA device indices as the machine numbers them); each
  // worker sees only its own GPU (CUDA_VISIBLE_DEVICES). Empty: every worker uses `device`.
  std::vector<int> gpus;
  // With `gpus`: workers on each GPU; `workers` is then gpus.size() * workers_per_gpu.
  // 0 = not set (`workers` workers, spread evenly over `gpus`).
  int workers_per_gpu = 0;
  int batch = 8;  // frames per model call inside a worker
  // ffmpeg encoders working on different segments at once (for when encoding is the slowest
  // stage); with more than one, segments are at most 4 chunks long so that all fit in the arena.
  int encoders = 1;
  DeviceSetting device;                    // auto | cpu | cuda | cuda:N
  Precision precision = Precision::kFp32;  // the model's weights and activations
  ModelOptimization model_optimization = ModelOptimization::kAuto;  // see ModelOptimization
  // CUDA: cuDNN's algorithm search (benchmark mode) in each worker. Off by default: on an H200
  // it made each worker's first call 1.3 s (`restore`) and 2.9 s (esrgan-slim-x2) longer and
  // bought nothing in the steady state for either (docs/gpu.md); on, it may help a network
  // that cuDNN's heuristics serve badly.
  bool cudnn_autotune = false;
  PageLockArena page_lock_arena = PageLockArena::kAuto;  // see PageLockArena
  // Join the output while the frames are rendered (supervisor/media/live_mux.h): each segment as
  // soon as it and those before it are encoded, so that the job's end waits only for the last
  // one's join. Off: every segment is joined once the last is encoded. A variable-frame-rate
  // source is always joined at the end (it is retimed after the join).
  bool live_mux = true;
  ColorConversion color_conversion = ColorConversion::kAuto;        // see ColorConversion
  int max_attempts = 3;           // tries per chunk before the job fails
  double hang_timeout_s = 300.0;  // a busy worker without a heartbeat this long is killed
  EncoderSettings encoder;
  RecycleSettings recycle;
  KillSettings kill;
  Deinterlace deinterlace = Deinterlace::kAuto;  // see Deinterlace
  TileSetting tile;  // frames in tiles inside the worker, and out-of-memory fallbacks
  JobMode mode = JobMode::kFrames;  // whole frames, or faces (common/face_setting.h)
  FaceSetting faces;                // face mode's keys (face_size, face_margin, ...)
};

// How far a worker process is confined (worker/sandbox/sandbox.h). Not a job setting: a job must
// not loosen it.
enum class WorkerSandbox {
  kRequired,  // a worker that cannot be fully sandboxed fails the job, saying why
  kAuto,      // sandbox where possible; a worker that could not be gets a loud warning
  kOff,       // no sandbox
};
const char* Name(WorkerSandbox mode);  // "required", "auto", "off"
// Parses a mode name; nullopt for anything else.
std::optional<WorkerSandbox> ParseWorkerSandbox(const std::string& name);

// Where the service runs its jobs: itself (kLocal), or on a Slurm cluster as parts and a stitch
// (kSlurm: supervisor/cluster/slurm_commands.h).
enum class Backend { kLocal, kSlurm };
const char* Name(Backend backend);  // "local", "slurm"
std::optional<Backend> ParseBackend(const std::string& name);

// The most parts the slurm backend cuts a job into (as supervisor/plan/part_plan.h kMaxParts).
inline constexpr int kMaxSlurmParts = 10000;

struct Config {
  JobSettings defaults;
  // The config file's "defaults" object as written ({} without one): with a job's own keys over
  // it, what a job's frames are made with (`framemill run` compares it to keep or redo its work).
  nlohmann::json defaults_object = nlohmann::json::object();
  std::string ffmpeg = "ffmpeg";  // path or name on PATH
  std::string ffprobe = "ffprobe";
  std::string worker_binary;              // "" = framemill-worker beside the framemill binary
  std::string face_detector_binary;       // "" = framemill-face-detector beside it
  int64_t arena_mb = 4096;                // shared-memory frame arena per job, MiB
  double worker_start_timeout_s = 300.0;  // model load time allowed before a worker is failed
  std::string pytorch_alloc_conf;         // given to workers as PYTORCH_CUDA_ALLOC_CONF and
                                          // PYTORCH_ALLOC_CONF ("" = leave the environment)
  std::string log_level = "info";         // trace | debug | info | warn | error
  // The service (framemill serve):
  std::string spool_dir = "/var/spool/framemill";
  // A job's input, output and model must resolve (symlinks followed) inside one of these;
  // empty = anywhere.
  std::vector<std::string> allowed_input_roots;
  std::vector<std::string> allowed_output_roots;
  std::vector<std::string> allowed_model_roots;
  double rescan_interval_s = 10.0;  // spool rescans besides inotify (lost events, NFS)
  // `serve` refuses to start while any allowed_*_roots list is empty, unless this is true
  // (`framemill run`, a user's own command, never needs roots).
  bool allow_any_path = false;
  // Starts of one job (first start and every resume) before the service files it as failed
  // with reason `crashed`: a job whose handling crashed or killed the supervisor that often is
  // not resumed again.
  int max_job_starts = 3;
  // Members of this group (and root, and the service's own user) may cancel or retry any job;
  // others only their own. "" = nobody but root and the service's user.
  std::string admin_group = "framemill-admin";
  // Days that the finished segments of a failed job whose reason is retryable (framemill retry)
  // are kept; the service removes older ones at start and once an hour. 0 = remove at once.
  double failed_work_keep_days = 7.0;
  // Jobs one submitter may have running at once in `framemill serve` (with service_gpus, jobs
  // run side by side); more of theirs wait while others' run. 0 = no limit.
  int max_running_per_user = 0;
  // Unset: kRequired for the service (framemill serve), kAuto for framemill run.
  std::optional<WorkerSandbox> worker_sandbox;
  // The GPUs `framemill serve` owns and shares among its jobs (supervisor/service/gpu_scheduler.h):
  // it runs several jobs at once, each on GPUs of its own (the job's `gpus`, or a share of the
  // free ones), with warm workers kept per GPU set and model. Empty: one job at a time, each on
  // the device and gpus it names.
  std::vector<int> service_gpus;
  // `framemill serve` keeps one spare worker per service GPU (or one, without a GPU set): a
  // worker process started without a model, its sandbox on and its device ready (the CUDA
  // context, cuDNN and cuBLAS), that the next job's first worker takes instead of starting one
  // (supervisor/workers/worker_pool.h, CreateSpares and Adopt). It holds the device's context
  // memory while it waits. The next one starts once a job takes it (a CPU spare's once that job
  // ends).
  bool spare_workers = true;
  // The service's backend; with kSlurm, each job is submitted as slurm_parts parts and a stitch
  // (sbatch options slurm_options) and the service follows it until the stitch job ends.
  Backend backend = Backend::kLocal;
  int slurm_parts = 4;
  std::vector<std::string> slurm_options;
  double slurm_poll_s = 2.0;  // how often the service asks squeue about a job's stitch
  // Playlist- and list-style inputs (hls, dash, concat, image2, imf, vobsub, ...) make ffmpeg
  // open further files named inside them, possibly outside the roots: refused unless true.
  bool allow_playlist_inputs = false;
  // A crashed decoding ffmpeg (killed by a signal) is restarted this many times within a job,
  // resuming at the frame it stopped at.
  int decoder_restarts = 2;
  // A job that still fails with a crashed decoder or encoder is run again this many times,
  // keeping its finished segments.
  int crash_retries = 2;
  // A job whose output, scratch or shared-memory file system is full waits up to this long for
  // space (supervisor/job/space_wait.h), its finished segments kept, and then fails with
  // no_space; 0 = fail at once. The wait starts again after a run that finished a segment.
  double no_space_wait_s = 1800.0;
  // Limits on what one job may make the service hold, checked once the input is probed, before a
  // worker starts or a frame is decoded (a small file can claim a huge frame or millions of
  // frames): pixels of one frame (default 8192 x 8192) and frames of one job (default 4,000,000:
  // 37 hours at 30 fps). Over either, the job fails with input_invalid naming the key.
  int64_t max_frame_pixels = int64_t{8192} * 8192;
  int64_t max_job_frames = 4000000;
  // Run when a job ends (supervisor/service/job_end_hook.h): the program (an absolute path, run
  // without a shell) and its first arguments; the job's result.json path is appended. Empty = none.
  std::vector<std::string> on_job_end;
  double on_job_end_timeout_s = 30.0;  // the hook is killed after this long
  // Every helper program run to its end (ffprobe, and ffmpeg where it is not a stream of frames)
  // is killed after this long (supervisor/process/subprocess.h): a decoder looping on a hostile
  // file costs its job (timed_out), never the service.
  double child_timeout_s = 3600.0;
  // A service job that shows no life (a progress report or a phase's beat) for this long is
  // stopped and filed as failed (timed_out); the service goes on. systemd's watchdog restarts
  // the service only when its own loop stops, or when a stopped job still has not ended a
  // minute later.
  double job_stall_timeout_s = 900.0;
  // The service's metrics, in the Prometheus text format for the node exporter's textfile
  // collector (supervisor/report/metrics.h), rewritten atomically at each job state change and
  // every few seconds while a job runs. A relative path is under spool_dir (its directory is
  // created 0755); "" = no metrics.
  std::string metrics_textfile = "metrics/framemill.prom";
  // Jobs one submitter may have waiting in incoming/; the service refuses the ones beyond (by
  // arrival) with invalid_job naming the key. 0 = no limit.
  int max_queued_per_user = 1000;
};

// Limits that keep a job file from asking for absurd resources. Used by both parsers.
inline constexpr int kMaxChunkFrames = 4096;
inline constexpr int kMaxWorkers = 64;
inline constexpr int kMaxBatch = 1024;
inline constexpr int kMaxEncoders = 16;
inline constexpr int kMaxAttempts = 100;
inline constexpr int64_t kMaxJobFileBytes = 1 << 20;
inline constexpr int kMaxJobStarts = 1000;

// Reads the settings in `object` (a job or the config's "defaults") over `*settings`.
// Keys not in the object keep their current values; unknown keys are errors, except those in
// `other_keys` (read by the caller from the same object: a job's input, output, ...).
Status ReadJobSettings(const nlohmann::json& object, const std::string& path, StatusCode code,
                       JobSettings* settings, std::initializer_list<const char*> other_keys = {});

// Parses a config from JSON (all keys optional). Errors name the key.
Result<Config> ParseConfig(const nlohmann::json& object);

// Loads the config: `explicit_path` if given, else $FRAMEMILL_CONFIG, else
// /etc/framemill/framemill.json if it exists, else built-in defaults.
Result<Config> LoadConfig(const std::string& explicit_path);

}  // namespace framemill
