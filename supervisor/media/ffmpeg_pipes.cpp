#include "supervisor/media/ffmpeg_pipes.h"

#include <cstdint>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <boost/process.hpp>

#include "common/checked_file.h"
#include "common/env_knobs.h"
#include "common/frame_format.h"
#include "supervisor/process/child_fds.h"
#include "supervisor/media/output_geometry.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace bp = boost::process;

constexpr int kPipeBytes = 1 << 20;

// One child with one pipe: its stdout (we read) or its stdin (we write). stderr to a file.
class PipedChild {
 public:
  enum class Direction { kReadStdout, kWriteStdin };

  // The child keeps `inherit` (see child_fds.h) besides its stdin, stdout and stderr. It runs
  // confined (MediaLaunch: reading its inputs, writing its outputs among `inherit`).
  static Result<std::unique_ptr<PipedChild>> Spawn(const std::vector<std::string>& argv,
                                                   Direction dir, const std::string& stderr_path,
                                                   const std::vector<int>& inherit) {
    Result<Launch> launch = MediaLaunch(argv, inherit);
    if (!launch.ok()) return launch.status();
    const std::string& exe = launch->exe;
    const std::vector<std::string>& args = launch->args;
    auto pc = std::unique_ptr<PipedChild>(new PipedChild());
    pc->stderr_path_ = stderr_path;
    pc->name_ = argv[0];
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      return Status(StatusCode::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    // 1 MiB instead of 64 KiB (the most an unprivileged process may ask by default): ffmpeg and
    // the supervisor then hand each other a good part of a frame per wake-up.
    (void)::fcntl(fds[0], F_SETPIPE_SZ, kPipeBytes);
    bp::pipe pipe(fds[0], fds[1]);
    try {
      if (dir == Direction::kReadStdout) {
        pc->child_ = bp::child(exe, bp::args(args), bp::std_in.close(), bp::std_out > pipe,
                               bp::std_err > stderr_path, ChildFds(inherit, launch->nicer));
        pc->fd_ = pipe.native_source();
        pipe.assign_source(-1);
      } else {
        pc->child_ = bp::child(exe, bp::args(args),
                               bp::std_in<pipe, bp::std_out.close(), bp::std_err> stderr_path,
                               ChildFds(inherit, launch->nicer));
        pc->fd_ = pipe.native_sink();
        pipe.assign_sink(-1);
      }
    } catch (const std::exception& e) {
      return Status(StatusCode::kIo, "cannot start " + exe + ": " + e.what());
    }
    return pc;
  }

  // Never leaves a zombie: a child still running is killed (SIGKILL) and reaped, one that has
  // exited is reaped.
  ~PipedChild() {
    CloseFd();
    if (!waited_) KillAndReap(child_);
  }

  int pid() const { return child_.valid() ? child_.id() : -1; }

  // Reads exactly `n` bytes unless end of file comes first; returns bytes read or -1 on error.
  ssize_t ReadFull(uint8_t* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, dst + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return -1;
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return static_cast<ssize_t>(got);
  }

  bool WriteFull(const uint8_t* src, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, src, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      src += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  void CloseFd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Closes the pipe and waits for exit (once; later calls return the same).
  CommandOutput Wait() {
    CloseFd();
    if (!waited_) {
      std::error_code ec;
      child_.wait(ec);
      waited_ = true;
      if (ec) {
        exit_.exit_code = -1;
      } else {
        SetExitStatus(child_.native_exit_code(), &exit_);
      }
    }
    return exit_;
  }

  std::string ErrorTail() const {
    std::string tail = LastLinesOfFile(stderr_path_, 4);
    return tail.empty() ? "(no message)" : tail;
  }

 private:
  PipedChild() = default;
  bp::child child_;
  bool waited_ = false;
  CommandOutput exit_;
  int fd_ = -1;
  std::string stderr_path_;
  std::string name_;
};

namespace {

// ffmpeg says "No space left on device" when a write fails for a full disk; an encoder killed by
// a signal crashed (the frames it was given are fine: encoding them again may well succeed).
StatusCode EncodeFailureCode(const std::string& message, const CommandOutput& exit) {
  if (exit.signal != 0) return StatusCode::kEncoderCrashed;
  return message.find("No space left") != std::string::npos ? StatusCode::kNoSpace
                                                            : StatusCode::kEncodeFailed;
}

// The geometry filters (setsar, setfield) after `filters`, all as one -vf into `args`.
void AppendGeometryArguments(const SegmentFormat& f, std::vector<std::string>* filters,
                             std::vector<std::string>* args) {
  for (const std::string& g :
       GeometryEncoderFilters(OutputGeometry{f.width, f.height, f.sample_aspect, f.field_order})) {
    filters->push_back(g);
  }
  std::string chain;
  for (const std::string& x : *filters) chain += (chain.empty() ? "" : ",") + x;
  args->insert(args->end(), {"-vf", chain});
}

}  // namespace

Result<std::unique_ptr<FrameReader>> FrameReader::Start(
    const std::string& ffmpeg, const SourceFile& input, const VideoStreamInfo& video,
    const std::string& stderr_path, FrameFormat format, const std::vector<std::string>& filters,
    bool accurate_color, const DecodeSeek& seek) {
  const bool yuv = format == FrameFormat::kYuv420p;
  // A yuvj420p source is asked for as yuvj420p: as yuv420p, ffmpeg would squeeze its range.
  const std::string pix_fmt = yuv ? video.pix_fmt : FrameFormatName(format);
  if (yuv && !IsPlanarYuv420(pix_fmt)) {
    return Status(StatusCode::kInternal, "YUV frames asked of a " + pix_fmt + " source");
  }
  std::string chain;
  for (const std::string& f : filters) chain += (chain.empty() ? "" : ",") + f;
  // Last: the frames it drops have gone through the deinterlacer as their neighbours' fields.
  const std::string trim = SeekFilter(seek);
  if (!trim.empty()) chain += (chain.empty() ? "" : ",") + trim;
  // Test hook: ffmpeg's own count of the frames it decoded, at its end, in the log.
  const std::optional<std::string>& verbose = Knob(EnvKnob::kTestDecoderVerbose);
  std::vector<std::string> argv = {ffmpeg, "-nostdin", "-hide_banner", "-v",
                                   verbose && (*verbose)[0] == '1' ? "verbose" : "error"};
  argv.insert(argv.end(), input.restrictions.begin(), input.restrictions.end());
  const std::vector<std::string> seek_in = SeekInputArguments(seek);
  argv.insert(argv.end(), seek_in.begin(), seek_in.end());
  argv.insert(argv.end(),
              {"-autorotate", "0", "-i", FdPath(input.fd), "-map",
               "0:" + std::to_string(video.index), "-fps_mode", "passthrough", "-an", "-sn", "-dn",
               "-sws_flags", DecoderSwsFlags(accurate_color)});
  if (!chain.empty()) argv.insert(argv.end(), {"-vf", chain});
  const std::vector<std::string> seek_out = SeekOutputArguments(seek);
  argv.insert(argv.end(), seek_out.begin(), seek_out.end());
  argv.insert(argv.end(), {"-f", "rawvideo", "-pix_fmt", pix_fmt, "pipe:1"});
  Result<std::unique_ptr<PipedChild>> child =
      PipedChild::Spawn(argv, PipedChild::Direction::kReadStdout, stderr_path, {input.fd});
  if (!child.ok()) return child.status();
  size_t bytes = FrameBytes(format, static_cast<uint32_t>(video.display_width),
                            static_cast<uint32_t>(video.display_height));
  return std::unique_ptr<FrameReader>(new FrameReader(std::move(*child), bytes));
}

FrameReader::FrameReader(std::unique_ptr<PipedChild> child, size_t frame_bytes)
    : child_(std::move(child)), frame_bytes_(frame_bytes) {}

FrameReader::~FrameReader() = default;

Result<bool> FrameReader::Read(uint8_t* dst) {
  if (killed_for_test_ != 0) {
    // Drained to its end (into dst, whose frame is not delivered), so that ffmpeg, which a
    // SIGTERM lets finish its write, can exit.
    while (child_->ReadFull(dst, frame_bytes_) > 0) {
    }
    return false;
  }
  ssize_t n = child_->ReadFull(dst, frame_bytes_);
  if (n < 0)
    return Status(StatusCode::kIo, std::string("read from decoder: ") + std::strerror(errno));
  if (n == 0) return false;
  if (static_cast<size_t>(n) != frame_bytes_) {
    CommandOutput exit = child_->Wait();
    if (exit.signal != 0) return Crashed(exit);
    return Status(StatusCode::kInputInvalid,
                  "decoder stopped in the middle of a frame: " + child_->ErrorTail());
  }
  return true;
}

Status FrameReader::Crashed(const CommandOutput& exit) const {
  return Status(StatusCode::kDecoderCrashed,
                "ffmpeg decoder crashed (" + DescribeExit(exit) + "): " + child_->ErrorTail());
}

Status FrameReader::Finish() {
  CommandOutput exit = child_->Wait();
  if (killed_for_test_ != 0 && exit.signal == 0 && exit.exit_code == 0) {
    // ffmpeg had finished before the signal came: it ends as the signal would have ended it.
    if (killed_for_test_ == SIGTERM) {
      exit.exit_code = 255;
    } else {
      exit.exit_code = -1;
      exit.signal = killed_for_test_;
    }
  }
  if (exit.signal != 0) return Crashed(exit);
  if (exit.exit_code != 0) {
    return Status(StatusCode::kInputInvalid,
                  "ffmpeg decoder ended with " + DescribeExit(exit) + ": " + child_->ErrorTail());
  }
  return Status::Ok();
}

void FrameReader::KillForTest(int sig) {
  if (child_->pid() > 0) ::kill(child_->pid(), sig);
  killed_for_test_ = sig;
}

namespace {

// depth: the colour path's conversion and tags, and the HDR metadata.
void AddDepthArguments(const SegmentFormat& f, std::vector<std::string>* a,
                       std::vector<std::string>* tail) {
  EncoderColor c = EncoderColorArguments(f.color, f.encoder.pix_fmt, f.accurate_color);
  std::vector<std::string> filters;
  // yuv420p frames are the output's planes already (the workers converted back in float).
  if (!c.filter.empty() && f.in_format != FrameFormat::kYuv420p) filters.push_back(c.filter);
  AppendGeometryArguments(f, &filters, a);  // the colour conversion, then setsar/setfield
  a->insert(a->end(), c.flags.begin(), c.flags.end());
  std::vector<std::string> hdr = HdrEncoderArguments(f.encoder.codec, f.hdr);
  tail->insert(tail->end(), hdr.begin(), hdr.end());
  tail->insert(tail->end(), c.tags.begin(), c.tags.end());
}

}  // namespace

std::vector<std::string> EncoderArguments(const SegmentFormat& f) {
  std::vector<std::string> a = {
      "-f",         "rawvideo",
      "-pix_fmt",   FrameFormatName(f.in_format),
      "-s",         std::to_string(f.width) + "x" + std::to_string(f.height),
      "-framerate", f.frame_rate.ToString(),
      "-i",         "pipe:0"};
  std::vector<std::string> tail;
  AddDepthArguments(f, &a, &tail);
  a.insert(a.end(), {"-c:v", f.encoder.codec, "-pix_fmt", f.encoder.pix_fmt});
  const std::vector<std::string> geometry_options =
      GeometryEncoderOptions(OutputGeometry{f.width, f.height, f.sample_aspect, f.field_order});
  a.insert(a.end(), geometry_options.begin(), geometry_options.end());
  if (f.encoder.crf >= 0) {
    a.insert(a.end(), {"-crf", std::to_string(f.encoder.crf)});
    // libvpx needs a zero bitrate for pure constant-quality mode.
    if (f.encoder.codec.find("vpx") != std::string::npos) a.insert(a.end(), {"-b:v", "0"});
  }
  if (!f.encoder.preset.empty()) a.insert(a.end(), {"-preset", f.encoder.preset});
  a.insert(a.end(), tail.begin(), tail.end());
  return a;
}

Result<std::unique_ptr<SegmentEncoder>> SegmentEncoder::Start(const std::string& ffmpeg,
                                                              int output_fd,
                                                              const SegmentFormat& format,
                                                              const std::string& stderr_path,
                                                              int64_t first_frame, int64_t frames) {
  std::vector<std::string> argv = {ffmpeg, "-nostdin", "-hide_banner", "-v", "error", "-y"};
  std::vector<std::string> enc = EncoderArguments(format);
  std::vector<int> inherit = {output_fd};
  if (format.alpha) {
    const AlphaTarget target{format.width, format.height, format.frame_rate, format.sample_aspect,
                             format.encoder.pix_fmt};
    enc = JoinAlphaArguments(enc, *format.alpha, target, first_frame, frames);
    inherit.push_back(format.alpha->source->fd);
  }
  argv.insert(argv.end(), enc.begin(), enc.end());
  // -y: the file exists (framemill created it exclusively); ffmpeg opens it again through the
  // descriptor's /proc link, so it writes that very file whatever its name now points to.
  argv.insert(argv.end(), {"-f", "nut", FdPath(output_fd)});
  Result<std::unique_ptr<PipedChild>> child =
      PipedChild::Spawn(argv, PipedChild::Direction::kWriteStdin, stderr_path, inherit);
  if (!child.ok()) return child.status();
  return std::unique_ptr<SegmentEncoder>(new SegmentEncoder(std::move(*child)));
}

SegmentEncoder::SegmentEncoder(std::unique_ptr<PipedChild> child) : child_(std::move(child)) {}

SegmentEncoder::~SegmentEncoder() = default;

Status SegmentEncoder::Write(const uint8_t* frames, size_t bytes) {
  if (!child_->WriteFull(frames, bytes)) {
    int err = errno;
    CommandOutput exit = child_->Wait();
    std::string tail = child_->ErrorTail();
    return Status(EncodeFailureCode(tail, exit),
                  std::string("ffmpeg encoder stopped taking frames (") + std::strerror(err) +
                      ", " + DescribeExit(exit) + "): " + tail);
  }
  return Status::Ok();
}

Status SegmentEncoder::Finish() {
  CommandOutput exit = child_->Wait();
  if (exit.exit_code != 0) {
    std::string tail = child_->ErrorTail();
    return Status(EncodeFailureCode(tail, exit),
                  "ffmpeg encoder ended with " + DescribeExit(exit) + ": " + tail);
  }
  return Status::Ok();
}

void SegmentEncoder::KillForTest() {
  if (child_->pid() > 0) ::kill(child_->pid(), SIGKILL);
}

}  // namespace framemill
