#include "supervisor/job/preview.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/media/preview_frames.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/media/source_intake.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

// The private directory of one preview, removed (with everything in it) when this goes.
struct PrivateDir {
  int parent_fd = -1;  // not owned
  std::string name;
  UniqueFd fd;
  std::string real;  // its real path, for the pipeline run, which takes names
  ~PrivateDir() {
    if (!name.empty() && parent_fd >= 0) {
      fd.Reset();
      (void)RemoveTreeAt(parent_fd, name);
    }
  }
};

// The output's extension (".mp4"), so that the sampled run writes the job's container; ".mkv"
// for a name without one.
std::string Extension(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? ".mkv" : name.substr(dot);
}

// Bit rates of the source's audio streams from ffprobe, summed (bits per second). A stream
// without one (common in Matroska/WebM) sets *unknown.
Result<double> AudioBitsPerSecond(const std::string& ffprobe, const SourceFile& source,
                                  bool* unknown) {
  std::vector<std::string> argv = {ffprobe, "-v", "error"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(),
              {"-show_entries", "stream=codec_type,bit_rate", "-of", "json", FdPath(source.fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kInputInvalid, source.name + ": " + LastLines(r->err, 3));
  }
  double bits = 0;
  try {
    nlohmann::json j = nlohmann::json::parse(r->out);
    for (const nlohmann::json& s : j.value("streams", nlohmann::json::array())) {
      if (s.value("codec_type", "") != "audio") continue;
      const std::string rate = s.contains("bit_rate") && s["bit_rate"].is_string()
                                   ? s["bit_rate"].get<std::string>()
                                   : "";
      char* end = nullptr;
      double v = rate.empty() ? 0 : std::strtod(rate.c_str(), &end);
      if (rate.empty() || end == rate.c_str() || !(v > 0)) {
        *unknown = true;
      } else {
        bits += v;
      }
    }
  } catch (const std::exception&) {
    return Status(StatusCode::kInputInvalid, source.name + ": ffprobe gave unreadable output");
  }
  return bits;
}

// The filter that makes a frame of a sheet's cell: the frame scaled to the cell; or, where the
// model changed the frame's size to `out_w` x `out_h` (an upscaler), a 1:1 crop of the cell's
// size from the middle of the output, and for the source (`source` true) the same region of it
// scaled to the output's size with bicubic, so that the two show the model's own pixels beside
// what a plain scale gives. `out_w` 0: no change of size.
std::string CellFilter(const SheetLayout& layout, int out_w, int out_h, bool source) {
  if (out_w <= 0) {
    return fmt::format("scale={}:{}:flags=area,setsar=1", layout.cell_width, layout.cell_height);
  }
  const int x = (out_w - layout.cell_width) / 2 / 2 * 2, y = (out_h - layout.cell_height) / 2 / 2 * 2;
  return fmt::format("{}crop={}:{}:{}:{},setsar=1",
                     source ? fmt::format("scale={}:{}:flags=bicubic,", out_w, out_h) : "",
                     layout.cell_width, layout.cell_height, x, y);
}

// Every `every`-th frame of the video file `name` in `dir_fd` (the first of each stretch), made
// a cell of the sheet by `cell_filter` (CellFilter), rgb24, one string per frame; exactly
// `frames` of them or an error.
Result<std::vector<std::string>> CellFrames(const std::string& ffmpeg, int dir_fd,
                                            const std::string& name, const SheetLayout& layout,
                                            int frames, int every,
                                            const std::string& cell_filter) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    return Status(StatusCode::kIo, "preview: open " + name + ": " + std::strerror(errno));
  }
  Result<CommandOutput> r =
      RunAndCapture({ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i",
                     FdPath(fd.get()), "-map", "0:v:0", "-fps_mode", "passthrough", "-vf",
                     fmt::format("select=not(mod(n\\,{})),{}", every, cell_filter),
                     "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"},
                    {fd.get()});
  if (!r.ok()) return r.status();
  const size_t cell = static_cast<size_t>(layout.cell_width) * layout.cell_height * 3;
  if (r->exit_code != 0 || r->out.size() != cell * static_cast<size_t>(frames)) {
    return Status(
        StatusCode::kInternal,
        fmt::format("preview: {} gave {} bytes of frames for {} frames of {} ({}): {}", name,
                    r->out.size(), frames, cell, DescribeExit(*r), LastLines(r->err, 3)));
  }
  std::vector<std::string> out;
  for (int i = 0; i < frames; ++i) out.push_back(r->out.substr(i * cell, cell));
  return out;
}

struct EncoderFigures {
  double seconds_per_frame = 0;  // 0 when the difference is not positive (noise)
  int64_t frames = 0;
  int64_t bytes = 0;
};

// One encoder's time per frame and bytes with the job's encoder settings (`pix_fmt` resolved):
// the `frames` frames of the video `name` in `dir_fd` encoded again, less an encode of its first
// frame alone (the encoder's start and flush, which in the sampled run weigh more than its
// frames). The long encode is written to a file in `dir_fd` for its size.
Result<EncoderFigures> MeasureEncoder(const std::string& ffmpeg, int dir_fd,
                                      const std::string& name, const EncoderSettings& encoder,
                                      const std::string& pix_fmt, int frames) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    return Status(StatusCode::kIo, "preview: open " + name + ": " + std::strerror(errno));
  }
  Result<CreatedFile> out = CreateExclusiveAt(dir_fd, "encoded.", ".nut", 0600);
  if (!out.ok()) return out.status();
  auto timed = [&](int n, const std::string& target) -> Result<double> {
    std::vector<std::string> argv = {ffmpeg,
                                     "-nostdin",
                                     "-hide_banner",
                                     "-v",
                                     "error",
                                     "-i",
                                     FdPath(fd.get()),
                                     "-map",
                                     "0:v:0",
                                     "-fps_mode",
                                     "passthrough",
                                     "-frames:v",
                                     std::to_string(n),
                                     "-c:v",
                                     encoder.codec,
                                     "-pix_fmt",
                                     pix_fmt};
    if (encoder.crf >= 0) argv.insert(argv.end(), {"-crf", std::to_string(encoder.crf)});
    if (!encoder.preset.empty()) argv.insert(argv.end(), {"-preset", encoder.preset});
    if (target.empty()) {
      argv.insert(argv.end(), {"-f", "null", "-"});
    } else {
      argv.insert(argv.end(), {"-y", "-f", "nut", target});
    }
    const uint64_t t0 = MonotonicUs();
    Result<CommandOutput> r = RunAndCapture(argv, {fd.get(), out->fd.get()});
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      return Status(StatusCode::kEncodeFailed,
                    "preview: timing the encoder: " + LastLines(r->err, 3));
    }
    return static_cast<double>(MonotonicUs() - t0) / 1e6;
  };
  EncoderFigures f;
  f.frames = std::max(2, frames);
  Result<double> one = timed(1, "");
  if (!one.ok()) return one.status();
  Result<double> many = timed(static_cast<int>(f.frames), FdPath(out->fd.get()));
  if (!many.ok()) return many.status();
  f.seconds_per_frame = std::max(0.0, (*many - *one) / static_cast<double>(f.frames - 1));
  struct stat st {};
  if (::fstat(out->fd.get(), &st) != 0) {
    return Status(StatusCode::kIo, std::string("preview: stat: ") + std::strerror(errno));
  }
  f.bytes = static_cast<int64_t>(st.st_size);
  return f;
}

// Writes `bytes` to `name` in `dir_fd`: created under a random name, fsynced, renamed over it.
Status WriteSheet(int dir_fd, const std::string& name, const std::string& bytes) {
  Result<CreatedFile> f = CreateExclusiveAt(dir_fd, ".framemill-partial.", ".png", 0644);
  if (!f.ok()) return f.status();
  Status written = WriteAllToFd(f->fd.get(), bytes, "the contact sheet");
  if (!written.ok()) {
    (void)::unlinkat(dir_fd, f->name.c_str(), 0);
    return written;
  }
  if (::fsync(f->fd.get()) != 0) {
    Status s(StatusCode::kIo,
             "preview: fsync of the contact sheet: " + std::string(std::strerror(errno)));
    (void)::unlinkat(dir_fd, f->name.c_str(), 0);
    return s;
  }
  Status s = RenameCheckedAt(dir_fd, f->name, f->fd.get(), name, RenameMode::kReplace);
  if (!s.ok()) (void)::unlinkat(dir_fd, f->name.c_str(), 0);
  return s;
}

// The sampled run takes a short continuous stretch of frames from each sample: at least this
// many of the job's batches in all, and three a worker (so workers run batches of the job's
// size, and chunks after each one's first, warm-up chunk are measured) and at least
// kMinSampledFrames frames (so the encoder sees motion to predict, not only cuts).
constexpr int kSampledRunBatches = 3;
constexpr int kMinSampledFrames = 48;

// Workers of the sampled run: as many as the job puts on one device (all of them, or those of
// its first GPU), so that they share it as the job's do.
int RunWorkers(const JobSettings& s) {
  const int devices = std::max<int>(1, static_cast<int>(s.gpus.size()));
  return std::max(1, (s.workers + devices - 1) / devices);
}

// Frames in each of `k` stretches: enough for two chunks a worker after each one's first.
int StretchFor(int k, const JobSettings& s) {
  const int batches = std::max(kSampledRunBatches, 3 * RunWorkers(s));
  const int frames = std::max({k, batches * std::max(1, s.batch), kMinSampledFrames});
  return (frames + k - 1) / k;
}

// The job the sampled clip runs as: the same model, device, precision, batch and encoder
// settings, the workers of one device (RunWorkers; on the first of the job's GPUs), the frames
// already upright and progressive, one batch a chunk.
JobSpec SampledJob(const JobSpec& job, const std::string& dir, const std::string& clip) {
  JobSpec p = job;
  p.input = dir + "/" + clip;
  p.output = dir + "/preview" + Extension(BaseName(job.output));
  p.overwrite = false;
  JobSettings& s = p.settings;
  s.workers = RunWorkers(job.settings);
  if (!s.gpus.empty()) s.gpus.resize(1);
  s.workers_per_gpu = 0;
  s.encoders = 1;
  s.deinterlace = Deinterlace::kOff;  // the sampled frames went through the source filters
  s.chunk_frames = s.batch;
  return p;
}

// The source as the preview reads it: the input and the output's directory, each opened and
// checked once, and what a probe without a pass over the file tells (the preview must not cost
// one).
struct PreviewSource {
  UniqueFd input, out_dir;
  std::string out_name;  // the output's name in out_dir
  SourceFile source;
  MediaInfo media;
  double audio_bits_per_s = 0;
  bool audio_unknown = false;  // a stream without a bit rate
};

// Opens the input and the output's directory, probes the source and fills the report's source
// figures (its seconds and frames).
Status OpenPreviewSource(const JobSpec& job, const Config& config, PreviewSource* in,
                         PreviewReport* report) {
  const SourceRules rules = JobSourceRules(config, nullptr);
  Result<UniqueFd> input = OpenInput(job.input, rules, "input");
  if (!input.ok()) return input.status();
  in->input = std::move(*input);
  in->out_name = BaseName(job.output);
  if (in->out_name.empty() || in->out_name == "." || in->out_name == "..") {
    return Status(StatusCode::kOutputInvalid, job.output + ": not a file name");
  }
  Result<UniqueFd> out_dir = OpenCheckedDirectory(DirName(job.output), config.allowed_output_roots);
  if (!out_dir.ok()) return out_dir.status();
  in->out_dir = std::move(*out_dir);
  Result<SourceFile> source = BindSource(in->input.get(), job.input, rules.ffprobe, rules.playlists);
  if (!source.ok()) return source.status();
  in->source = std::move(*source);
  Result<MediaInfo> media = ProbeMedia(config.ffprobe, in->source, /*frame_times=*/false);
  if (!media.ok()) return media.status();
  in->media = std::move(*media);
  VideoStreamInfo& v = in->media.video;
  FM_RETURN_IF_ERROR(ReadFrameFieldOrder(config.ffprobe, in->source, &v));
  report->source_seconds = in->media.duration;
  if (!(report->source_seconds > 0)) {
    return Status(StatusCode::kInputInvalid, job.input + ": the container gives no duration");
  }
  report->source_frames = v.header_frames > 0
                              ? v.header_frames
                              : std::llround(report->source_seconds * v.frame_rate.value());
  Result<double> audio_bits = AudioBitsPerSecond(config.ffprobe, in->source, &in->audio_unknown);
  if (!audio_bits.ok()) return audio_bits.status();
  in->audio_bits_per_s = *audio_bits;
  return Status::Ok();
}

// The sampled clip: `k` stretches of the source's frames, upright and progressive, in a private
// directory in the output's directory (removed with everything in it when this goes).
struct SampledClip {
  PrivateDir dir;
  CreatedFile clip;
  int stretch = 0;  // frames a stretch
  SampledFrames frames;
};

// Makes the private directory and samples the clip into it; fills the report's sample figures.
Status SampleSource(const JobSpec& job, const Config& config, const PreviewSource& in, int k,
                    SampledClip* out, PreviewReport* report) {
  const VideoStreamInfo& v = in.media.video;
  PrivateDir& dir = out->dir;
  Result<CreatedFile> made = MakePrivateDirectoryAt(in.out_dir.get(), ".framemill-preview.");
  if (!made.ok()) return made.status();
  dir.parent_fd = in.out_dir.get();
  dir.name = made->name;
  dir.fd = std::move(made->fd);
  dir.real = FdRealPath(dir.fd.get());
  if (dir.real.empty()) return Status(StatusCode::kIo, "preview: its directory has no path");
  Result<CreatedFile> clip = CreateExclusiveAt(dir.fd.get(), "sampled.", ".nut", 0600);
  if (!clip.ok()) return clip.status();
  out->clip = std::move(*clip);
  // Samples span the video stream where its frame count says it ends before the container
  // (audio that runs on): a time past the last frame gives no frame.
  const int stretch = StretchFor(k, job.settings);
  double span = report->source_seconds;
  if (v.header_frames > 0) span = std::min(span, v.header_frames / v.frame_rate.value());
  // The last stretch must end before the video does.
  span = std::max(0.0, span - stretch / v.frame_rate.value());
  Result<SampledFrames> sampled =
      ExtractSampledFrames(config.ffmpeg, in.source, v, job.settings.deinterlace,
                           SampleTimes(span, k), stretch, dir.fd.get(), out->clip.fd.get());
  if (!sampled.ok()) return sampled.status();
  out->clip.fd.Reset();
  out->stretch = stretch;
  out->frames = std::move(*sampled);
  report->times = out->frames.times;
  report->frames_per_sample = stretch;
  report->frames_decoded = out->frames.frames_decoded;
  spdlog::info("preview: {} stretches of {} frames sampled from {} ({} frames decoded to get them)",
               k, stretch, job.input, out->frames.frames_decoded);
  return Status::Ok();
}

// The contact sheet of the source's and the sampled run's frames, written beside the output as
// <output>.preview.png; fills the report's layout, crops and contact_sheet.
Status DrawSheet(const JobSpec& job, const Config& config, const PreviewSource& in, int k,
                 const SampledClip& sampled, const std::string& run_output, const JobReport& run,
                 PreviewReport* report) {
  const VideoStreamInfo& v = in.media.video;
  const int stretch = sampled.stretch;
  const int dir_fd = sampled.dir.fd.get();
  report->layout = LayoutFor(v.display_width, v.display_height, UprightSampleAspect(v), k);
  // A model that enlarges the frame: 1:1 crops of its output (scaled into the source's cell, an
  // upscale would look like its input).
  const bool crops = run.out_width >= report->layout.cell_width &&
                     run.out_height >= report->layout.cell_height &&
                     (run.out_width > run.in_width || run.out_height > run.in_height);
  const int crop_w = crops ? run.out_width : 0, crop_h = crops ? run.out_height : 0;
  if (crops) {
    spdlog::info("preview: the model gives {}x{} frames: each row shows a {}x{} crop of the "
                 "output's middle, 1:1, beside the source scaled to {}x{} (bicubic) there",
                 run.out_width, run.out_height, report->layout.cell_width,
                 report->layout.cell_height, run.out_width, run.out_height);
  }
  report->crops = crops;
  Result<std::vector<std::string>> before =
      CellFrames(config.ffmpeg, dir_fd, sampled.clip.name, report->layout, k, stretch,
                 CellFilter(report->layout, crop_w, crop_h, /*source=*/true));
  if (!before.ok()) return before.status();
  Result<std::vector<std::string>> after =
      CellFrames(config.ffmpeg, dir_fd, run_output, report->layout, k, stretch,
                 CellFilter(report->layout, crop_w, crop_h, /*source=*/false));
  if (!after.ok()) return after.status();
  std::vector<std::string> labels;
  for (double t : report->times) {
    const int minutes = static_cast<int>(t / 60);
    labels.push_back(
        fmt::format("{:d}:{:02d}:{:05.2f}", minutes / 60, minutes % 60, t - 60.0 * minutes));
  }
  Result<std::string> png = EncodeContactSheet(report->layout, *before, *after, labels);
  if (!png.ok()) return png.status();
  const std::string sheet_name = in.out_name + ".preview.png";
  FM_RETURN_IF_ERROR(WriteSheet(in.out_dir.get(), sheet_name, *png));
  report->contact_sheet = DirName(job.output) + "/" + sheet_name;
  return Status::Ok();
}

}  // namespace

Result<PreviewReport> RunPreview(const JobSpec& job, const Config& config,
                                 const std::atomic<bool>& stop, const PreviewOptions& options) {
  if (!ContactSheetSupported()) {
    return Status(StatusCode::kInternal,
                  "preview needs OpenCV to draw its contact sheet, and this framemill was built "
                  "without it (install libopencv-dev and build again)");
  }
  const int k = options.frames;
  if (k < 1 || k > kMaxPreviewFrames) {
    return Status(StatusCode::kInvalidJob,
                  fmt::format("preview: --frames must be 1..{}, not {}", kMaxPreviewFrames, k));
  }
  PreviewReport report;
  PreviewSource in;
  FM_RETURN_IF_ERROR(OpenPreviewSource(job, config, &in, &report));
  SampledClip sampled;
  FM_RETURN_IF_ERROR(SampleSource(job, config, in, k, &sampled, &report));
  const PrivateDir& dir = sampled.dir;
  const int stretch = sampled.stretch;

  // The real pipeline on the sampled clip. Roots, where the config has any, admit the private
  // directory (the preview checked the job's own paths above; the model is checked by RunJob).
  const JobSpec sampled_job = SampledJob(job, dir.real, sampled.clip.name);
  Config run_config = config;
  if (!run_config.allowed_input_roots.empty()) run_config.allowed_input_roots.push_back(dir.real);
  if (!run_config.allowed_output_roots.empty()) run_config.allowed_output_roots.push_back(dir.real);
  JobOptions run_options;
  run_options.timeline = dir.real + "/timeline.jsonl";
  Result<JobReport> run = RunJob(sampled_job, run_config, stop, run_options);
  if (!run.ok()) return run.status().WithContext("preview");
  const std::string run_output = BaseName(sampled_job.output);

  FM_RETURN_IF_ERROR(DrawSheet(job, config, in, k, sampled, run_output, *run, &report));

  EstimateInputs est;
  est.source_frames = report.source_frames;
  est.source_seconds = report.source_seconds;
  est.sampled_frames = static_cast<int64_t>(k) * stretch;
  est.preview_chunk_frames = sampled_job.settings.chunk_frames;
  est.run = std::move(*run);
  est.source_decode_s = sampled.frames.decode_s;
  est.source_frames_decoded = sampled.frames.frames_decoded;
  Result<EncoderFigures> encode =
      MeasureEncoder(config.ffmpeg, dir.fd.get(), run_output, job.settings.encoder,
                     est.run.output_pix_fmt, k * stretch);
  if (!encode.ok()) return encode.status();
  est.encoder_s_per_frame = encode->seconds_per_frame;
  est.encoder_frames = encode->frames;
  est.encoded_bytes = encode->bytes;
  est.audio_bits_per_s = in.audio_bits_per_s;
  est.audio_rate_unknown = in.audio_unknown;
  est.workers = job.settings.workers;
  est.run_workers = sampled_job.settings.workers;
  est.encoders = job.settings.encoders;
  report.estimate = EstimateJob(est);
  return report;
}

nlohmann::json PreviewReport::ToJson() const {
  return {{"contact_sheet", contact_sheet},
          {"width", layout.width()},
          {"height", layout.height()},
          {"frames", times.size()},
          {"times", times},
          {"frames_per_sample", frames_per_sample},
          {"frames_decoded", frames_decoded},
          {"source_frames", source_frames},
          {"source_seconds", source_seconds},
          {"crops", crops},
          {"estimate", estimate.ToJson()}};
}

std::string PreviewReport::ToText() const {
  std::string text = fmt::format(
      "preview: wrote {} ({}x{}: {} frames, source | output{})\n"
      "preview: {} frames decoded to take {} stretches of {} of the source's {} frames "
      "({:.1f} s)\n",
      contact_sheet, layout.width(), layout.height(), times.size(),
      crops ? "; 1:1 crops at the output's size, the source scaled there with bicubic" : "",
      frames_decoded, times.size(),
      frames_per_sample, source_frames, source_seconds);
  return text + estimate.ToText();
}

}  // namespace framemill
