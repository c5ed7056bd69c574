#include "common/config.h"

#include <cstdint>
#include <cstdlib>
#include <regex>
#include <unistd.h>

#include "common/env_knobs.h"
#include "common/json_fields.h"

namespace framemill {
namespace {

constexpr const char* kSystemConfigPath = "/etc/framemill/framemill.json";

void ReadEncoder(FieldReader& parent, StatusCode code, EncoderSettings* enc) {
  const nlohmann::json* obj = parent.Object("encoder");
  if (obj == nullptr) return;
  FieldReader r(*obj, parent.Child("encoder"), code);
  r.String("codec", &enc->codec);
  r.Int("crf", &enc->crf, -1, 63);
  r.String("preset", &enc->preset, /*allow_empty=*/true);  // "" = the encoder has no presets
  r.String("pix_fmt", &enc->pix_fmt);
  parent.Adopt(r.Finish());
}

void ReadRecycle(FieldReader& parent, StatusCode code, RecycleSettings* rs) {
  const nlohmann::json* obj = parent.Object("recycle");
  if (obj == nullptr) return;
  FieldReader r(*obj, parent.Child("recycle"), code);
  r.Int("gpu_reserved_mb", &rs->gpu_reserved_mb, 0, int64_t{1} << 30);
  r.Int("rss_mb", &rs->rss_mb, 0, int64_t{1} << 30);
  r.Int("max_chunks", &rs->max_chunks, 0, int64_t{1} << 40);
  r.Double("jitter", &rs->jitter, 0.0, 0.9);
  r.Bool("warm_standby", &rs->warm_standby);
  parent.Adopt(r.Finish());
}

void ReadKill(FieldReader& parent, StatusCode code, KillSettings* ks) {
  const nlohmann::json* obj = parent.Object("kill");
  if (obj == nullptr) return;
  FieldReader r(*obj, parent.Child("kill"), code);
  r.Int("gpu_reserved_mb", &ks->gpu_reserved_mb, 0, int64_t{1} << 30);
  r.Int("rss_mb", &ks->rss_mb, 0, int64_t{1} << 30);
  r.Double("grace_s", &ks->grace_s, 0.0, 3600.0);
  parent.Adopt(r.Finish());
}

}  // namespace

Status ReadJobSettings(const nlohmann::json& object, const std::string& path, StatusCode code,
                       JobSettings* s, std::initializer_list<const char*> other_keys) {
  FieldReader r(object, path, code);
  for (const char* key : other_keys) r.Skip(key);
  r.Int("chunk_frames", &s->chunk_frames, 1, kMaxChunkFrames);
  r.Double("segment_seconds", &s->segment_seconds, 0.001, 24 * 3600.0);
  r.Int("workers", &s->workers, 1, kMaxWorkers);
  r.Int("batch", &s->batch, 1, kMaxBatch);
  r.Int("encoders", &s->encoders, 1, kMaxEncoders);
  ReadEnum(r, "device", &s->device, ParseDevice, "auto, cpu, cuda or cuda:N");
  r.IntList("gpus", &s->gpus, 0, kMaxWorkers - 1);
  r.Int("workers_per_gpu", &s->workers_per_gpu, 0, kMaxWorkers);
  if (r.status().ok() && object.is_object() && object.contains("workers") &&
      s->workers_per_gpu > 0 && object.contains("workers_per_gpu")) {
    r.Fail("workers_per_gpu", "set workers or workers_per_gpu, not both");
  }
  if (r.status().ok() && !s->gpus.empty()) {
    if (!s->device.AnyCuda() && s->device.kind != DeviceKind::kAuto) {
      r.Fail("gpus", "needs device cuda (or auto), not \"" + Name(s->device) +
                         "\": each worker "
                         "sees only its own GPU");
    }
    // A count given here wins; otherwise the per-GPU count (from here or the defaults) sets it.
    if (s->workers_per_gpu > 0 && !(object.is_object() && object.contains("workers"))) {
      s->workers = static_cast<int>(s->gpus.size()) * s->workers_per_gpu;
    }
    if (s->workers > kMaxWorkers) r.Fail("workers_per_gpu", "more than 64 workers in all");
  }
  r.Int("max_attempts", &s->max_attempts, 1, kMaxAttempts);
  ReadEnum(r, "precision", &s->precision, ParsePrecision, "fp32, fp16 or bf16");
  ReadEnum(r, "model_optimization", &s->model_optimization, ParseModelOptimization,
           "auto, on or off");
  r.Bool("cudnn_autotune", &s->cudnn_autotune);
  ReadEnum(r, "page_lock_arena", &s->page_lock_arena, ParsePageLockArena, "auto, on or off");
  r.Bool("live_mux", &s->live_mux);
  ReadEnum(r, "color_conversion", &s->color_conversion, ParseColorConversion,
           "auto, accurate, fast or device");
  r.Double("hang_timeout_s", &s->hang_timeout_s, 1.0, 24 * 3600.0);
  ReadEncoder(r, code, &s->encoder);
  ReadRecycle(r, code, &s->recycle);
  ReadKill(r, code, &s->kill);
  ReadEnum(r, "deinterlace", &s->deinterlace, ParseDeinterlace,
           "auto, off, bwdif, yadif, w3fdif, estdif or kerndeint");
  if (r.status().ok() && object.is_object() && object.contains("tile")) {
    r.Skip("tile");
    Result<TileSetting> tile = ReadTileSetting(object.at("tile"), path + ".tile", code);
    if (tile.ok()) {
      s->tile = *tile;
    } else {
      r.Adopt(tile.status());
    }
  }
  ReadEnum(r, "mode", &s->mode, ParseJobMode, "frames or faces");
  ReadFaceSetting(r, &s->faces);
  if (r.status().ok()) {
    // A hard limit under its soft limit would kill workers that should have been recycled.
    if (s->kill.rss_mb > 0 && s->recycle.rss_mb > 0 && s->kill.rss_mb <= s->recycle.rss_mb) {
      r.Fail("kill", "rss_mb must be above recycle.rss_mb");
    }
    if (s->kill.gpu_reserved_mb > 0 && s->recycle.gpu_reserved_mb > 0 &&
        s->kill.gpu_reserved_mb <= s->recycle.gpu_reserved_mb) {
      r.Fail("kill", "gpu_reserved_mb must be above recycle.gpu_reserved_mb");
    }
  }
  return r.Finish();
}

const char* Name(WorkerSandbox mode) {
  switch (mode) {
    case WorkerSandbox::kRequired:
      return "required";
    case WorkerSandbox::kAuto:
      return "auto";
    case WorkerSandbox::kOff:
      return "off";
  }
  return "?";
}

const char* Name(Deinterlace mode) {
  switch (mode) {
    case Deinterlace::kAuto:
      return "auto";
    case Deinterlace::kOff:
      return "off";
    case Deinterlace::kBwdif:
      return "bwdif";
    case Deinterlace::kYadif:
      return "yadif";
    case Deinterlace::kW3fdif:
      return "w3fdif";
    case Deinterlace::kEstdif:
      return "estdif";
    case Deinterlace::kKerndeint:
      return "kerndeint";
  }
  return "?";
}

const char* Name(ModelOptimization mode) {
  switch (mode) {
    case ModelOptimization::kAuto:
      return "auto";
    case ModelOptimization::kOn:
      return "on";
    case ModelOptimization::kOff:
      return "off";
    case ModelOptimization::kCompile:
      return "compile";
  }
  return "?";
}

std::optional<ModelOptimization> ParseModelOptimization(const std::string& name) {
  return FindByName<ModelOptimization>(
      name, {ModelOptimization::kAuto, ModelOptimization::kOn, ModelOptimization::kOff,
             ModelOptimization::kCompile});
}

const char* Name(PageLockArena mode) {
  switch (mode) {
    case PageLockArena::kAuto:
      return "auto";
    case PageLockArena::kOn:
      return "on";
    case PageLockArena::kOff:
      return "off";
  }
  return "?";
}

std::optional<PageLockArena> ParsePageLockArena(const std::string& name) {
  return FindByName<PageLockArena>(name,
                                   {PageLockArena::kAuto, PageLockArena::kOn, PageLockArena::kOff});
}

std::optional<Deinterlace> ParseDeinterlace(const std::string& name) {
  return FindByName<Deinterlace>(
      name, {Deinterlace::kAuto, Deinterlace::kOff, Deinterlace::kBwdif, Deinterlace::kYadif,
             Deinterlace::kW3fdif, Deinterlace::kEstdif, Deinterlace::kKerndeint});
}

std::string Name(const DeviceSetting& device) {
  switch (device.kind) {
    case DeviceKind::kAuto:
      return "auto";
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return device.index < 0 ? "cuda" : "cuda:" + std::to_string(device.index);
  }
  return "?";
}

std::optional<DeviceSetting> ParseDevice(const std::string& name) {
  static const std::regex kDevice("auto|cpu|cuda|cuda:([0-9]{1,2})");
  std::smatch m;
  if (!std::regex_match(name, m, kDevice)) return std::nullopt;
  DeviceSetting d;
  if (name == "cpu") {
    d.kind = DeviceKind::kCpu;
  } else if (name != "auto") {
    d.kind = DeviceKind::kCuda;
    if (m[1].matched) d.index = std::stoi(m[1].str());
  }
  return d;
}

const char* Name(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
  }
  return "?";
}

std::optional<Precision> ParsePrecision(const std::string& name) {
  return FindByName<Precision>(name, {Precision::kFp32, Precision::kFp16, Precision::kBf16});
}

const char* Name(ColorConversion mode) {
  switch (mode) {
    case ColorConversion::kAuto:
      return "auto";
    case ColorConversion::kAccurate:
      return "accurate";
    case ColorConversion::kFast:
      return "fast";
    case ColorConversion::kDevice:
      return "device";
  }
  return "?";
}

std::optional<ColorConversion> ParseColorConversion(const std::string& name) {
  return FindByName<ColorConversion>(name, {ColorConversion::kAuto, ColorConversion::kAccurate,
                                            ColorConversion::kFast, ColorConversion::kDevice});
}

const char* Name(Backend backend) {
  switch (backend) {
    case Backend::kLocal:
      return "local";
    case Backend::kSlurm:
      return "slurm";
  }
  return "?";
}

std::optional<Backend> ParseBackend(const std::string& name) {
  return FindByName<Backend>(name, {Backend::kLocal, Backend::kSlurm});
}

std::optional<WorkerSandbox> ParseWorkerSandbox(const std::string& name) {
  return FindByName<WorkerSandbox>(
      name, {WorkerSandbox::kRequired, WorkerSandbox::kAuto, WorkerSandbox::kOff});
}

Result<Config> ParseConfig(const nlohmann::json& object) {
  Config c;
  FieldReader r(object, "config", StatusCode::kInvalidConfig);
  if (const nlohmann::json* d = r.Object("defaults")) {
    Status s = ReadJobSettings(*d, r.Child("defaults"), StatusCode::kInvalidConfig, &c.defaults);
    if (!s.ok()) return s;
    c.defaults_object = *d;
  }
  r.String("ffmpeg", &c.ffmpeg);
  r.String("ffprobe", &c.ffprobe);
  r.String("worker_binary", &c.worker_binary);
  r.String("face_detector_binary", &c.face_detector_binary);
  r.Int("arena_mb", &c.arena_mb, 16, 1 << 20);
  r.Double("worker_start_timeout_s", &c.worker_start_timeout_s, 1, 24 * 3600.0);
  r.String("log_level", &c.log_level);
  r.String("pytorch_alloc_conf", &c.pytorch_alloc_conf, /*allow_empty=*/true);
  r.String("spool_dir", &c.spool_dir);
  r.StringList("allowed_input_roots", &c.allowed_input_roots);
  r.StringList("allowed_output_roots", &c.allowed_output_roots);
  r.StringList("allowed_model_roots", &c.allowed_model_roots);
  r.Double("rescan_interval_s", &c.rescan_interval_s, 0.1, 3600.0);
  r.Bool("allow_any_path", &c.allow_any_path);
  r.Int("max_job_starts", &c.max_job_starts, 1, kMaxJobStarts);
  r.String("admin_group", &c.admin_group, /*allow_empty=*/true);
  r.Double("failed_work_keep_days", &c.failed_work_keep_days, 0.0, 3650.0);
  r.Int("max_running_per_user", &c.max_running_per_user, 0, kMaxWorkers);
  r.Int("max_queued_per_user", &c.max_queued_per_user, 0, 1000000);
  std::string sandbox;
  r.String("worker_sandbox", &sandbox);
  if (r.status().ok() && !sandbox.empty()) {
    c.worker_sandbox = ParseWorkerSandbox(sandbox);
    if (!c.worker_sandbox) {
      r.Fail("worker_sandbox", "must be required, auto or off, got \"" + sandbox + "\"");
    }
  }
  std::string backend;
  r.String("backend", &backend);
  if (r.status().ok() && !backend.empty()) {
    std::optional<Backend> parsed = ParseBackend(backend);
    if (!parsed) r.Fail("backend", "must be local or slurm, got \"" + backend + "\"");
    if (parsed) c.backend = *parsed;
  }
  r.IntList("service_gpus", &c.service_gpus, 0, kMaxWorkers - 1);  // each once
  r.Bool("spare_workers", &c.spare_workers);
  r.Int("slurm_parts", &c.slurm_parts, 1, kMaxSlurmParts);
  r.StringList("slurm_options", &c.slurm_options);
  r.Double("slurm_poll_s", &c.slurm_poll_s, 0.1, 3600.0);
  r.Bool("allow_playlist_inputs", &c.allow_playlist_inputs);
  r.Int("decoder_restarts", &c.decoder_restarts, 0, 100);
  r.Int("crash_retries", &c.crash_retries, 0, 100);
  r.Double("no_space_wait_s", &c.no_space_wait_s, 0.0, 7 * 86400.0);
  r.Int("max_frame_pixels", &c.max_frame_pixels, 1, int64_t{1} << 40);
  r.Int("max_job_frames", &c.max_job_frames, 1, int64_t{1} << 40);
  r.StringList("on_job_end", &c.on_job_end);
  if (r.status().ok() && !c.on_job_end.empty() && c.on_job_end.front().rfind('/', 0) != 0) {
    r.Fail("on_job_end", "the program must be an absolute path (it runs without a shell), got \"" +
                             c.on_job_end.front() + "\"");
  }
  r.Double("on_job_end_timeout_s", &c.on_job_end_timeout_s, 0.1, 3600.0);
  r.Double("child_timeout_s", &c.child_timeout_s, 1.0, 7 * 86400.0);
  r.Double("job_stall_timeout_s", &c.job_stall_timeout_s, 1.0, 7 * 86400.0);
  r.String("metrics_textfile", &c.metrics_textfile, /*allow_empty=*/true);
  const std::string& metrics = c.metrics_textfile;
  const std::string kProm = ".prom";
  if (r.status().ok() && !metrics.empty() &&
      (metrics.size() <= kProm.size() ||
       metrics.compare(metrics.size() - kProm.size(), kProm.size(), kProm) != 0)) {
    r.Fail("metrics_textfile",
           "must name a file ending in .prom (the node exporter reads only those), got \"" +
               metrics + "\"");
  }
  static const std::regex kLevels("trace|debug|info|warn|error");
  if (r.status().ok() && !std::regex_match(c.log_level, kLevels)) {
    r.Fail("log_level", "must be trace, debug, info, warn or error");
  }
  Status s = r.Finish();
  if (!s.ok()) return s;
  return c;
}

Result<Config> LoadConfig(const std::string& explicit_path) {
  std::string path = explicit_path;
  if (path.empty()) {
    const std::optional<std::string>& env = Knob(EnvKnob::kConfig);
    if (env) path = *env;
  }
  if (path.empty() && ::access(kSystemConfigPath, R_OK) == 0) path = kSystemConfigPath;
  if (path.empty()) return Config{};
  // The administrator's file (or the caller's): a symlink to it is fine.
  Result<nlohmann::json> j =
      ReadJsonFile(path, kMaxJobFileBytes, StatusCode::kInvalidConfig, LinkPolicy::kFollow);
  if (!j.ok()) return j.status();
  Result<Config> c = ParseConfig(*j);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

}  // namespace framemill
