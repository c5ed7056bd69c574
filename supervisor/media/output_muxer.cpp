#include "supervisor/media/output_muxer.h"

#include <cstdint>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <map>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/media/carried_metadata.h"
#include "supervisor/media/depth_check.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

std::string Extension(const std::string& path) {
  std::string base = BaseName(path);
  size_t dot = base.rfind('.');
  return dot == std::string::npos ? "" : base.substr(dot + 1);
}

Status Verify(const MuxRequest& rq, int fd, const CarriedMetadata& carried,
              const CarriedPlan& plan) {
  const SourceFile output{fd, "output " + rq.output, rq.source.restrictions};
  Result<MediaInfo> out =
      ProbeOwnOutput(rq.ffprobe, output, IsInterlaced(rq.geometry.field_order));
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
  FM_RETURN_IF_ERROR(CheckDisplayedGeometry(src, got, rq.geometry));
  // A variable-rate output keeps every frame's own time: two on one timestamp lose one.
  for (size_t i = 1; i < got.frame_times.size(); ++i) {
    if (got.frame_times[i] <= got.frame_times[i - 1]) {
      return Status(StatusCode::kVerifyFailed,
                    "output frames " + std::to_string(i - 1) + " and " + std::to_string(i) +
                        " share the timestamp " + std::to_string(got.frame_times[i]) + " s");
    }
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
  VideoStreamInfo depth = got;
  if (rq.codec == "libx264" && src.hdr.any()) {  // ffprobe cannot show H.264's HDR SEI
    Status read = ReadBitstreamHdr(rq.ffmpeg, fd, rq.source.restrictions, &depth.hdr);
    if (!read.ok()) return Status(StatusCode::kVerifyFailed, read.message());
  }
  FM_RETURN_IF_ERROR(CheckDepthAndColor(
      DepthExpectation{rq.expected_pix_fmt, rq.codec, rq.expected_color, src.hdr}, depth));
  // The output's tags, from the same ffprobe run that read its streams.
  Result<CarriedMetadata> tags = CarriedOf(*out, output.name);
  if (!tags.ok()) return Status(StatusCode::kVerifyFailed, tags.status().message());
  return CheckCarriedMetadata(carried, plan, *tags);
}

// Cover art for Matroska output: each picture extracted (stream copy) into the scratch directory,
// to be attached from there. ffmpeg (confined: subprocess.h) writes the file framemill created.
Status ExtractCovers(const MuxRequest& rq, CarriedPlan* plan) {
  int n = 0;
  for (CarriedEntry& e : plan->streams) {
    if (e.mode != CarryMode::kCoverAsFile) continue;
    const std::string name =
        "cover" + std::to_string(n++) + (e.source.codec == "png" ? ".png" : ".jpg");
    e.cover_file = rq.scratch_dir + "/" + name;
    UniqueFd cover(::openat(rq.scratch_fd, name.c_str(),
                            O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!cover.valid()) {
      return Status(StatusCode::kIo, "create " + e.cover_file + ": " + std::strerror(errno));
    }
    std::vector<std::string> argv = {rq.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y"};
    argv.insert(argv.end(), rq.source.restrictions.begin(), rq.source.restrictions.end());
    argv.insert(argv.end(), {"-i", FdPath(rq.source.fd), "-map",
                             "0:" + std::to_string(e.source.index), "-c", "copy", "-frames:v",
                             "1", "-update", "1", "-f", "image2", FdPath(cover.get())});
    Result<CommandOutput> r = RunAndCapture(argv, {cover.get(), rq.source.fd});
    if (!r.ok() || r->exit_code != 0) {
      return Status(StatusCode::kEncodeFailed,
                    "extracting the cover art of stream " + std::to_string(e.source.index) +
                        " failed: " + (r.ok() ? LastLines(r->err, 4) : r.status().message()));
    }
  }
  return Status::Ok();
}

// A variable-frame-rate source: the segments were encoded at the nominal rate (raw frames carry
// no timestamps). Join them into one MP4 file and give every frame back its source timestamp
// with mkvmerge's timestamp file (format v2: one presentation time in ms per frame).
//
// The joined file is MP4, not Matroska: ffmpeg writes Matroska in milliseconds, and the nominal
// rate ffprobe guesses for an irregular clip can be far above 1000 fps (10000/1 for frames
// 5.3 ms to 1.12 s apart), so several frames shared one millisecond before mkvmerge retimed them,
// and came out on one timestamp or out of place. MP4 keeps the encoder's time base. The retimed
// file is written at kRetimedScaleNs (10 us), so an MP4 or MOV output keeps the source's times
// to 10 us; a Matroska output, which ffmpeg writes in milliseconds, to the nearest millisecond.
constexpr int kRetimedScaleNs = 10000;
Result<UniqueFd> Retime(const MuxRequest& rq, const std::string& list_path) {
  const VideoStreamInfo& v = rq.source_info->video;
  Result<CreatedFile> joined = CreateExclusiveAt(rq.scratch_fd, "joined.", ".mp4", 0600);
  if (!joined.ok()) return joined.status();
  Result<CreatedFile> retimed = CreateExclusiveAt(rq.scratch_fd, "retimed.", ".mkv", 0600);
  if (!retimed.ok()) return retimed.status();
  std::string stamps = rq.scratch_dir + "/timestamps.txt";
  Result<CommandOutput> r = RunAndCapture({rq.ffmpeg,
                                           "-nostdin",
                                           "-hide_banner",
                                           "-v",
                                           "error",
                                           "-y",
                                           "-protocol_whitelist",
                                           "file,pipe",
                                           "-f",
                                           "concat",
                                           "-safe",
                                           "0",
                                           "-i",
                                           list_path,
                                           "-map",
                                           "0:v:0",
                                           "-c",
                                           "copy",
                                           "-f",
                                           "mp4",
                                           FdPath(joined->fd.get())},
                                          {rq.scratch_fd, joined->fd.get()});
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
  // Every name given to mkvmerge is an open descriptor or a name inside the private scratch
  // directory reached through its descriptor: all begin with "/proc/self/fd/", none with '-'
  // (mkvmerge has no "--" to end its options).
  r = RunAndCapture({rq.mkvmerge, "-q", "--timestamp-scale", std::to_string(kRetimedScaleNs), "-o",
                     FdPath(retimed->fd.get()), "--timestamps", "0:" + stamps,
                     FdPath(joined->fd.get())},
                    {rq.scratch_fd, joined->fd.get(), retimed->fd.get()});
  // mkvmerge exits 1 for warnings only.
  if (!r.ok() || r->exit_code > 1 || r->exit_code < 0) {
    return Status(StatusCode::kEncodeFailed,
                  "mkvmerge could not give the frames their source timestamps (is mkvtoolnix "
                  "installed?): " +
                      (r.ok() ? LastLines(r->out + r->err, 4) : r.status().message()));
  }
  spdlog::info("variable frame rate: {} frames given their source timestamps",
               v.frame_times.size());
  return std::move(retimed->fd);
}

}  // namespace

Result<std::string> MuxerForOutput(const std::string& output) {
  static const std::map<std::string, std::string> muxers = {
      {"mp4", "mp4"},   {"m4v", "mp4"}, {"mov", "mov"}, {"mkv", "matroska"}, {"mka", "matroska"},
      {"webm", "webm"}, {"avi", "avi"}, {"nut", "nut"}, {"ts", "mpegts"},    {"m2ts", "mpegts"},
      {"mxf", "mxf"},   {"flv", "flv"}, {"3gp", "3gp"}, {"ogv", "ogg"}};
  std::string ext = Extension(output);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = muxers.find(ext);
  if (it == muxers.end()) {
    std::string known;
    for (const auto& m : muxers) known += (known.empty() ? "." : ", .") + m.first;
    return Status(StatusCode::kOutputInvalid,
                  output + ": unknown output extension; use one of " + known);
  }
  return it->second;
}

std::string ConcatList(const std::vector<std::string>& segments,
                       const std::vector<int64_t>& frames, const Rational& rate) {
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

Result<JoinPlan> PlanJoin(const MuxRequest& rq) {
  Result<std::string> muxer = MuxerForOutput(rq.output);
  if (!muxer.ok()) return muxer.status();
  JoinPlan join;
  join.muxer = *muxer;
  Result<CarriedMetadata> carried = rq.source_carried.has_value()
                                        ? Result<CarriedMetadata>(*rq.source_carried)
                                        : ProbeCarried(rq.ffprobe, rq.source);
  if (!carried.ok()) return carried.status();
  join.carried = std::move(*carried);
  join.plan = PlanCarried(join.carried, rq.source_info->video.index, FamilyOfMuxer(*muxer));
  for (const std::string& why : join.plan.left_out)
    spdlog::warn("{}: {}; it is left out", rq.output, why);
  FM_RETURN_IF_ERROR(ExtractCovers(rq, &join.plan));
  return join;
}

std::vector<std::string> ConcatInput(const std::string& list_path) {
  // framemill's own list of its own segments: the concat demuxer reads only nut files.
  return {"-protocol_whitelist", "file,pipe", "-format_whitelist", "concat,nut", "-f", "concat",
          "-safe", "0", "-i", list_path};
}

namespace {

constexpr const char* kPartialNote = "partial-output.note";
constexpr const char* kPartialPrefix = ".framemill-partial.";

// A partial output named in the scratch directory's note by an earlier run of this job (one
// that died mid-join): removed, when the name is one framemill makes.
void RemoveStalePartial(const MuxRequest& rq) {
  std::ifstream in(rq.scratch_dir + "/" + kPartialNote);
  std::string name;
  if (!in || !std::getline(in, name)) return;
  if (name.rfind(kPartialPrefix, 0) != 0 || name.find('/') != std::string::npos) return;
  struct stat st {};
  if (::fstatat(rq.output_dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(st.st_mode) && ::unlinkat(rq.output_dir_fd, name.c_str(), 0) == 0) {
    spdlog::info("{}: removed {}, the partial output of an earlier run", rq.output, name);
  }
}

}  // namespace

bool IsPlacedOutput(const std::string& note_path, const struct stat& output) {
  std::ifstream in(note_path);
  unsigned long long dev = 0, ino = 0;
  if (!(in >> dev >> ino)) return false;
  return S_ISREG(output.st_mode) && output.st_dev == dev && output.st_ino == ino;
}

Result<CreatedFile> CreatePartialOutput(const MuxRequest& rq) {
  RemoveStalePartial(rq);
  Result<CreatedFile> partial = CreateExclusiveAt(rq.output_dir_fd, kPartialPrefix,
                                                  "." + Extension(rq.output), 0666);
  if (!partial.ok()) return partial.status();
  // Noted in the scratch directory, so that a run that dies mid-join has it removed by the next.
  Status noted = AtomicWriteFile(rq.scratch_dir + "/" + kPartialNote, partial->name + "\n", 0600);
  if (!noted.ok()) {
    ::unlinkat(rq.output_dir_fd, partial->name.c_str(), 0);
    return noted;
  }
  return partial;
}

std::vector<std::string> JoinArguments(const MuxRequest& rq, const JoinPlan& join,
                                       const std::vector<std::string>& video_input,
                                       int partial_fd) {
  const MediaInfo& src = *rq.source_info;
  std::vector<std::string> argv = {rq.ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y"};
  // Keep the video where it was relative to the other streams (a source whose video starts
  // after its audio keeps that offset).
  double offset = src.video.start_time - src.start_time;
  if (offset > 1e-6) argv.insert(argv.end(), {"-itsoffset", std::to_string(offset)});
  argv.insert(argv.end(), video_input.begin(), video_input.end());
  argv.insert(argv.end(), rq.source.restrictions.begin(), rq.source.restrictions.end());
  argv.insert(argv.end(), {"-i", FdPath(rq.source.fd), "-map", "0:v:0"});
  argv.insert(argv.end(), {"-c", "copy"});
  std::vector<std::string> carry = CarriedArguments(join.plan);
  argv.insert(argv.end(), carry.begin(), carry.end());
  const std::vector<std::string> geometry = GeometryMuxOptions(rq.geometry);
  argv.insert(argv.end(), geometry.begin(), geometry.end());
  const std::string ext = Extension(rq.output);
  if (ext == "mp4" || ext == "mov" || ext == "m4v")
    argv.insert(argv.end(), {"-movflags", "+faststart"});
  // The exclusively created file, through its descriptor: seekable (mp4 needs it), and never
  // whatever its name or the output's name may point to by now.
  argv.insert(argv.end(), {"-f", join.muxer, FdPath(partial_fd)});
  return argv;
}

Status JoinFailed(const MuxRequest& rq, const Result<CommandOutput>& r) {
  std::string why = r.ok() ? LastLines(r->err, 4) : r.status().message();
  StatusCode code = why.find("No space left") != std::string::npos ? StatusCode::kNoSpace
                    : r.ok() && r->signal != 0                     ? StatusCode::kEncoderCrashed
                                                                   : StatusCode::kEncodeFailed;
  return Status(code, "joining segments into " + rq.output + " failed (" +
                          (r.ok() ? DescribeExit(*r) : std::string("not started")) + "): " + why);
}

Status PlaceOutput(const MuxRequest& rq, const JoinPlan& join, const CreatedFile& partial) {
  const uint64_t t0 = MonotonicUs();
  Status done = Verify(rq, partial.fd.get(), join.carried, join.plan);
  const uint64_t t_verified = MonotonicUs();
  if (done.ok() && rq.output_reader_uid != UINT32_MAX) {
    Status acl = GrantReadAcl(partial.fd.get(), rq.output_reader_uid);
    if (!acl.ok()) spdlog::warn("{}: {}", rq.output, acl.message());
  }
  if (done.ok() && ::fsync(partial.fd.get()) != 0) {
    done = Status(errno == ENOSPC || errno == EDQUOT ? StatusCode::kNoSpace : StatusCode::kIo,
                  "fsync " + rq.output + ": " + std::strerror(errno));
  }
  if (done.ok()) {
    spdlog::info("{}: read back and checked in {} ms, on disk (fsync) {} ms later", rq.output,
                 (t_verified - t0) / 1000, (MonotonicUs() - t_verified) / 1000);
  }
  if (done.code() == StatusCode::kVerifyFailed) {
    // ffmpeg may end well although the disk filled under it (a write error at its last flush
    // is not its exit status): a cut-short file on a full disk is the disk's doing.
    struct statvfs vfs {};
    if (::fstatvfs(partial.fd.get(), &vfs) == 0 &&
        static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < kFullDiskBytes) {
      done = Status(StatusCode::kNoSpace, "the output's disk is full (" +
                                              std::to_string(vfs.f_bavail * vfs.f_frsize >> 10) +
                                              " KiB free): " + done.message());
    }
  }
  struct stat placed {};
  if (done.ok() && ::fstat(partial.fd.get(), &placed) == 0) {
    done = AtomicWriteFile(rq.scratch_dir + "/" + kPlacedOutputNote,
                           std::to_string(placed.st_dev) + " " + std::to_string(placed.st_ino) +
                               "\n",
                           0600);
  }
  if (done.ok()) {
    done = RenameCheckedAt(rq.output_dir_fd, partial.name, partial.fd.get(), rq.output_name,
                           rq.overwrite ? RenameMode::kReplace : RenameMode::kNoReplace);
  }
  if (!done.ok()) {
    RemovePartialOutput(rq, partial);
  } else {
    ::unlinkat(rq.scratch_fd, kPartialNote, 0);
  }
  return done;
}

// Removes the partial output if the name still is the file framemill created.
void RemovePartialOutput(const MuxRequest& rq, const CreatedFile& partial) {
  struct stat named {
  }, opened{};
  if (::fstatat(rq.output_dir_fd, partial.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
      ::fstat(partial.fd.get(), &opened) == 0 && named.st_ino == opened.st_ino &&
      named.st_dev == opened.st_dev) {
    ::unlinkat(rq.output_dir_fd, partial.name.c_str(), 0);
  }
  ::unlinkat(rq.scratch_fd, kPartialNote, 0);
}

Status MuxAndVerify(const MuxRequest& rq) {
  Result<JoinPlan> join = PlanJoin(rq);
  if (!join.ok()) return join.status();
  std::string list_path = rq.scratch_dir + "/segments.ffconcat";
  FM_RETURN_IF_ERROR(
      AtomicWriteFile(list_path, ConcatList(rq.segments, rq.segment_frames, rq.frame_rate)));
  std::vector<int> inherit = {rq.scratch_fd, rq.source.fd};
  std::vector<std::string> video_input = ConcatInput(list_path);
  UniqueFd retimed;
  if (!rq.source_info->video.constant_rate) {
    Result<UniqueFd> r = Retime(rq, list_path);
    if (!r.ok()) return r.status();
    retimed = std::move(*r);
    inherit.push_back(retimed.get());
    video_input = {"-protocol_whitelist", "file,pipe", "-f", "matroska", "-i",
                   FdPath(retimed.get())};
  }
  Result<CreatedFile> partial = CreatePartialOutput(rq);
  if (!partial.ok()) return partial.status();
  inherit.push_back(partial->fd.get());
  Result<CommandOutput> r =
      RunAndCapture(JoinArguments(rq, *join, video_input, partial->fd.get()), inherit);
  if (!r.ok() || r->exit_code != 0) {
    RemovePartialOutput(rq, *partial);
    return JoinFailed(rq, r);
  }
  return PlaceOutput(rq, *join, *partial);
}

}  // namespace framemill
