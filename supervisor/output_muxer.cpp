#include "supervisor/output_muxer.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/subprocess.h"

namespace framemill {
namespace {

std::string Extension(const std::string& path) {
  std::string base = BaseName(path);
  size_t dot = base.rfind('.');
  return dot == std::string::npos ? "" : base.substr(dot + 1);
}

// Containers that carry subtitle codecs by stream copy without conversion. MP4 carries only
// mov_text; Matroska carries the common text and bitmap formats.
bool CanCopySubtitle(const std::string& ext, const std::string& codec) {
  if (ext == "mkv" || ext == "mka") return true;
  if (ext == "mp4" || ext == "mov" || ext == "m4v") return codec == "mov_text";
  if (ext == "webm") return codec == "webvtt";
  return false;
}

// Each segment's duration is given exactly (frames / rate). Without it the concat demuxer takes
// it from the file, and a segment whose first frame is presented after its first decode (B-frames
// shift the first timestamp by the reorder delay) would open a gap of that delay at every join.
std::string ConcatList(const std::vector<std::string>& segments, const std::vector<int64_t>& frames,
                       const Rational& rate) {
  std::string list = "ffconcat version 1.0\n";
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string escaped;
    for (char c : segments[i]) {
      if (c == '\'')
        escaped += "'\\''";
      else
        escaped += c;
    }
    char duration[64];
    std::snprintf(duration, sizeof(duration), "%.9f",
                  static_cast<double>(frames[i]) * rate.den / rate.num);
    list += "file '" + escaped + "'\nduration " + duration + "\n";
  }
  return list;
}

Status Verify(const MuxRequest& rq, const std::string& path) {
  Result<MediaInfo> out = ProbeMedia(rq.ffprobe, path, /*frame_times=*/true);
  if (!out.ok())
    return Status(StatusCode::kVerifyFailed,
                  "output cannot be read back: " + out.status().message());
  const VideoStreamInfo& src = rq.source_info->video;
  const VideoStreamInfo& got = out->video;
  if (got.frame_count != src.frame_count) {
    return Status(StatusCode::kVerifyFailed, "output has " + std::to_string(got.frame_count) +
                                                 " frames, input has " +
                                                 std::to_string(src.frame_count));
  }
  if (got.width != rq.expected_width || got.height != rq.expected_height) {
    return Status(StatusCode::kVerifyFailed, "output is " + std::to_string(got.width) + "x" +
                                                 std::to_string(got.height) + ", expected " +
                                                 std::to_string(rq.expected_width) + "x" +
                                                 std::to_string(rq.expected_height));
  }
  // Duration of the video: from the first frame to the end of the last, within one frame.
  double frame = 1.0 / src.frame_rate.value();
  double src_span = src.last_time - src.start_time + frame;
  double out_span = got.last_time - got.start_time + frame;
  if (std::fabs(src_span - out_span) > frame + 1e-3) {
    return Status(StatusCode::kVerifyFailed, "output video lasts " + std::to_string(out_span) +
                                                 " s, input " + std::to_string(src_span) + " s");
  }
  if (out->audio.size() != rq.source_info->audio.size()) {
    return Status(StatusCode::kVerifyFailed, "output has " + std::to_string(out->audio.size()) +
                                                 " audio streams, input " +
                                                 std::to_string(rq.source_info->audio.size()));
  }
  return Status::Ok();
}

// A variable-frame-rate source: the segments were encoded at the nominal rate (raw frames carry
// no timestamps). Join them into one Matroska file and give every frame back its source
// timestamp with mkvmerge's timestamp file (format v2: one presentation time in ms per frame).
// Matroska keeps milliseconds, which is what such sources mostly have anyway.
Result<std::string> Retime(const MuxRequest& rq, const std::string& list_path) {
  const VideoStreamInfo& v = rq.source_info->video;
  std::string joined = rq.scratch_dir + "/joined.mkv";
  std::string retimed = rq.scratch_dir + "/retimed.mkv";
  std::string stamps = rq.scratch_dir + "/timestamps.txt";
  Result<CommandOutput> r =
      RunAndCapture({rq.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y", "-f", "concat",
                     "-safe", "0", "-i", list_path, "-map", "0:v:0", "-c", "copy", joined});
  if (!r.ok() || r->exit_code != 0) {
    return Status(
        StatusCode::kEncodeFailed,
        "joining segments failed: " + (r.ok() ? LastLines(r->err, 4) : r.status().message()));
  }
  std::string text = "# timestamp format v2\n";
  char line[64];
  for (double t : v.frame_times) {
    std::snprintf(line, sizeof(line), "%.6f\n", (t - v.frame_times.front()) * 1000.0);
    text += line;
  }
  FM_RETURN_IF_ERROR(AtomicWriteFile(stamps, text));
  r = RunAndCapture({rq.mkvmerge, "-q", "-o", retimed, "--timestamps", "0:" + stamps, joined});
  // mkvmerge exits 1 for warnings only.
  if (!r.ok() || r->exit_code > 1) {
    return Status(StatusCode::kEncodeFailed,
                  "mkvmerge could not give the frames their source timestamps (is mkvtoolnix "
                  "installed?): " +
                      (r.ok() ? LastLines(r->out + r->err, 4) : r.status().message()));
  }
  spdlog::info("variable frame rate: {} frames given their source timestamps",
               v.frame_times.size());
  return retimed;
}

}  // namespace

std::string PartialOutputPath(const std::string& output) {
  return DirName(output) + "/.framemill-partial." + std::to_string(::getpid()) + "." +
         BaseName(output);
}

Status MuxAndVerify(const MuxRequest& rq) {
  const MediaInfo& src = *rq.source_info;
  std::string list_path = rq.scratch_dir + "/segments.ffconcat";
  FM_RETURN_IF_ERROR(
      AtomicWriteFile(list_path, ConcatList(rq.segments, rq.segment_frames, rq.frame_rate)));

  std::string partial = PartialOutputPath(rq.output);
  std::vector<std::string> video_input = {"-f", "concat", "-safe", "0", "-i", list_path};
  if (!src.video.constant_rate) {
    Result<std::string> retimed = Retime(rq, list_path);
    if (!retimed.ok()) return retimed.status();
    video_input = {"-i", *retimed};
  }
  std::vector<std::string> argv = {rq.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y"};
  // Keep the video where it was relative to the other streams (a source whose video starts
  // after its audio keeps that offset).
  double offset = src.video.start_time - src.start_time;
  if (offset > 1e-6) argv.insert(argv.end(), {"-itsoffset", std::to_string(offset)});
  argv.insert(argv.end(), video_input.begin(), video_input.end());
  argv.insert(argv.end(), {"-i", rq.source, "-map", "0:v:0"});
  for (const OtherStreamInfo& a : src.audio) {
    argv.insert(argv.end(), {"-map", "1:" + std::to_string(a.index)});
  }
  std::string ext = Extension(rq.output);
  for (const OtherStreamInfo& s : src.subtitles) {
    if (CanCopySubtitle(ext, s.codec)) {
      argv.insert(argv.end(), {"-map", "1:" + std::to_string(s.index)});
    } else {
      spdlog::warn("subtitle stream {} ({}) cannot be copied into .{}; it is left out", s.index,
                   s.codec, ext);
    }
  }
  argv.insert(argv.end(), {"-c", "copy", "-map_metadata", "1"});
  if (ext == "mp4" || ext == "mov" || ext == "m4v")
    argv.insert(argv.end(), {"-movflags", "+faststart"});
  argv.push_back(partial);

  Result<CommandOutput> r = RunAndCapture(argv);
  if (!r.ok() || r->exit_code != 0) {
    ::unlink(partial.c_str());
    std::string why = r.ok() ? LastLines(r->err, 4) : r.status().message();
    StatusCode code = why.find("No space left") != std::string::npos ? StatusCode::kNoSpace
                                                                     : StatusCode::kEncodeFailed;
    return Status(code, "joining segments into " + rq.output + " failed: " + why);
  }
  Status verified = Verify(rq, partial);
  if (!verified.ok()) {
    ::unlink(partial.c_str());
    return verified;
  }
  Status synced = SyncFile(partial);
  if (synced.ok()) synced = DurableRename(partial, rq.output);
  if (!synced.ok()) ::unlink(partial.c_str());
  return synced;
}

}  // namespace framemill
