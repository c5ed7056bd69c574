#include "supervisor/media/preview_frames.h"

#include <regex>
#include <tuple>
#include <unistd.h>

#include <fmt/format.h>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "supervisor/media/color_path.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/process/subprocess.h"

namespace framemill {

std::vector<double> SampleTimes(double duration, int k) {
  std::vector<double> times;
  if (k < 1) return times;
  for (int i = 0; i < k; ++i) times.push_back(duration * (i + 0.5) / k);
  return times;
}

int64_t FramesDecodedInLog(const std::string& log) {
  static const std::regex kLine(R"(\(video\):[^\n]*?(\d+) frames decoded)");
  int64_t total = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kLine); it != std::sregex_iterator();
       ++it) {
    total = std::max<int64_t>(total, 0) + std::stoll((*it)[1].str());
  }
  return total;
}

namespace {

// A colour tag worth passing on: known to ffprobe and not "unknown"/"reserved".
bool KnownTag(const std::string& tag) {
  return !tag.empty() && tag != "unknown" && tag != "unspecified" && tag != "reserved";
}

// `frames` consecutive frames from `t` seconds on, raw, in the source's pixel format, after
// `filters`.
Result<std::string> OneStretch(const std::string& ffmpeg, const SourceFile& source,
                               const VideoStreamInfo& v, const std::string& filters, double t,
                               int frames, int64_t* decoded) {
  std::vector<std::string> argv = {ffmpeg,     "-nostdin",  "-hide_banner",
                                   "-nostats", "-loglevel", "verbose"};
  argv.insert(argv.end(), source.restrictions.begin(), source.restrictions.end());
  argv.insert(argv.end(),
              {"-autorotate", "0", "-ss", fmt::format("{:.6f}", t), "-i", FdPath(source.fd), "-map",
               fmt::format("0:{}", v.index), "-frames:v", std::to_string(frames)});
  if (!filters.empty()) argv.insert(argv.end(), {"-vf", filters});
  argv.insert(argv.end(), {"-f", "rawvideo", "-pix_fmt", v.pix_fmt, "pipe:1"});
  Result<CommandOutput> r = RunAndCapture(argv, {source.fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kInputInvalid,
                  fmt::format("{}: taking the frames at {:.3f} s failed ({}): {}", source.name, t,
                              DescribeExit(*r), LastLines(r->err, 3)));
  }
  if (r->out.empty()) {
    return Status(StatusCode::kInputInvalid,
                  fmt::format("{}: no frame at {:.3f} s (the video ends before the file does?)",
                              source.name, t));
  }
  int64_t n = FramesDecodedInLog(r->err);
  if (n < 0) {
    return Status(StatusCode::kInternal,
                  "preview: ffmpeg's log gives no count of decoded frames (ffmpeg version?)");
  }
  *decoded += n;
  return std::move(r->out);
}

}  // namespace

Result<SampledFrames> ExtractSampledFrames(const std::string& ffmpeg, const SourceFile& source,
                                           const VideoStreamInfo& v, Deinterlace mode,
                                           const std::vector<double>& times, int stretch,
                                           int scratch_dir_fd, int clip_fd) {
  if (v.pix_fmt.empty()) {
    return Status(StatusCode::kInputInvalid, source.name + ": the video's pixel format is unknown");
  }
  Result<std::vector<std::string>> filters = GeometryFilters(v, mode);
  if (!filters.ok()) return filters.status().WithContext(source.name);
  std::string chain;
  for (const std::string& f : *filters) chain += (chain.empty() ? "" : ",") + f;
  Result<CreatedFile> raw = CreateExclusiveAt(scratch_dir_fd, "frames.", ".raw", 0600);
  if (!raw.ok()) return raw.status();

  SampledFrames out;
  out.times = times;
  const uint64_t t0 = MonotonicUs();
  size_t stretch_bytes = 0;
  for (double t : times) {
    Result<std::string> frames =
        OneStretch(ffmpeg, source, v, chain, t, stretch, &out.frames_decoded);
    if (!frames.ok()) return frames.status();
    if (stretch_bytes == 0) stretch_bytes = frames->size();
    // Every stretch has as many bytes as the first, a whole number of frames: one cut short by
    // the end of the video does not.
    if (frames->size() != stretch_bytes || stretch_bytes % static_cast<size_t>(stretch) != 0) {
      return Status(StatusCode::kInputInvalid,
                    fmt::format("{}: the {} frames from {:.3f} s came out as {} bytes (the "
                                "first stretch: {})",
                                source.name, stretch, t, frames->size(), stretch_bytes));
    }
    FM_RETURN_IF_ERROR(WriteAllToFd(raw->fd.get(), *frames, "preview: sampled frames"));
  }
  out.decode_s = static_cast<double>(MonotonicUs() - t0) / 1e6;

  const Rational sar = UprightSampleAspect(v);
  std::vector<std::string> argv = {ffmpeg,
                                   "-nostdin",
                                   "-hide_banner",
                                   "-loglevel",
                                   "error",
                                   "-f",
                                   "rawvideo",
                                   "-pix_fmt",
                                   v.pix_fmt,
                                   "-video_size",
                                   fmt::format("{}x{}", v.display_width, v.display_height),
                                   "-framerate",
                                   v.frame_rate.ToString(),
                                   "-i",
                                   FdPath(raw->fd.get()),
                                   "-c:v",
                                   "ffv1",
                                   "-sar",
                                   fmt::format("{}:{}", sar.num, sar.den)};
  // As code points: some of ffprobe's names are not the options' (color_path.h).
  const std::tuple<const char*, ColorTagKind, const std::string*> tags[] = {
      {"-color_primaries", ColorTagKind::kPrimaries, &v.color_primaries},
      {"-color_trc", ColorTagKind::kTransfer, &v.color_transfer},
      {"-colorspace", ColorTagKind::kMatrix, &v.color_space}};
  for (const auto& [option, kind, value] : tags) {
    const int code = ColorTagCode(kind, *value);
    if (code >= 0) argv.insert(argv.end(), {option, std::to_string(code)});
  }
  if (KnownTag(v.color_range)) argv.insert(argv.end(), {"-color_range", v.color_range});
  argv.insert(argv.end(), {"-f", "nut", "-y", FdPath(clip_fd)});
  Result<CommandOutput> r = RunAndCapture(argv, {raw->fd.get(), clip_fd});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status(StatusCode::kIo, fmt::format("preview: writing the sampled clip failed ({}): {}",
                                               DescribeExit(*r), LastLines(r->err, 3)));
  }
  (void)::unlinkat(scratch_dir_fd, raw->name.c_str(), 0);
  return out;
}

}  // namespace framemill
