#include "supervisor/faces/detector_process.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/io.hpp>
#include <boost/process/pipe.hpp>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/process/child_fds.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

namespace bp = boost::process;

constexpr int kPollMs = 200;  // how often `stop` is read while the child works

// Moves all `n` bytes to (`write`) or from the child's pipe `fd` (non-blocking) by `deadline_ms`.
// Errors: kIo when the pipe ends (the child died or closed it), kTimedOut, kCancelled.
Status Transfer(int fd, bool write, void* data, size_t n, uint64_t deadline_ms,
                const std::atomic<bool>& stop) {
  auto* p = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    if (stop.load()) return Status(StatusCode::kCancelled, "face detection stopped");
    const uint64_t now = MonotonicMs();
    if (now >= deadline_ms) {
      return Status(StatusCode::kTimedOut, "the face detector did not answer in time");
    }
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int wait = static_cast<int>(std::min<uint64_t>(kPollMs, deadline_ms - now));
    const int ready = ::poll(&pfd, 1, wait);
    if (ready < 0 && errno != EINTR) {
      return Status(StatusCode::kIo, std::string("poll: ") + std::strerror(errno));
    }
    if (ready <= 0) continue;
    const ssize_t r = write ? ::write(fd, p + done, n - done) : ::read(fd, p + done, n - done);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return Status(StatusCode::kIo, r == 0 ? std::string("the pipe ended")
                                          : std::string(std::strerror(errno)));
  }
  return Status::Ok();
}

Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status(StatusCode::kIo, std::string("fcntl: ") + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

struct DetectorProcess::Child {
  bp::child proc;
  UniqueFd to;            // its stdin
  UniqueFd from;          // its stdout
  std::string owned_log;  // a log made for it, removed with it
  ~Child() {
    if (!owned_log.empty()) ::unlink(owned_log.c_str());
  }
};

std::string FaceDetectorBinaryPath(const std::string& configured) {
  if (!configured.empty()) return configured;
  const std::string worker = WorkerBinaryPath("");
  return worker.substr(0, worker.rfind('/') + 1) + "framemill-face-detector";
}

DetectorProcess::DetectorProcess(std::unique_ptr<Child> child) : child_(std::move(child)) {}

DetectorProcess::~DetectorProcess() {
  if (!child_) return;
  child_->to = UniqueFd();  // end of the pictures: a healthy child exits by itself
  KillAndReap(child_->proc);
}

Status DetectorProcess::Died(const std::string& while_doing) {
  child_->to = UniqueFd();
  std::error_code ec;
  // A child that closed its end without dying is killed, then its end is read.
  if (child_->proc.running(ec)) ::kill(child_->proc.id(), SIGKILL);
  child_->proc.wait(ec);
  CommandOutput exit;
  SetExitStatus(child_->proc.native_exit_code(), &exit);
  const std::string tail = LastLinesOfFile(log_path_, 3);
  return Status(StatusCode::kModelInvalid, "the face detector " + DescribeExit(exit) + " " +
                                               while_doing + (tail.empty() ? "" : ": " + tail));
}

Result<std::unique_ptr<DetectorProcess>> DetectorProcess::Start(const DetectorSetup& setup,
                                                                const std::atomic<bool>& stop) {
  // O_NONBLOCK: a FIFO at the path does not hang the open; fstat then refuses it.
  UniqueFd detector(::open(setup.detector.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!detector.valid()) {
    const int err = errno;
    return Status(err == ENOENT ? StatusCode::kInputMissing : StatusCode::kModelInvalid,
                  "face detector " + setup.detector + ": " +
                      (err == ENOENT ? std::string("no such file") : std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(detector.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(StatusCode::kModelInvalid,
                  "face detector " + setup.detector + ": not a regular file");
  }
  const std::string exe = FindExecutable(FaceDetectorBinaryPath(setup.binary));
  if (exe.empty()) {
    return Status(StatusCode::kInternal,
                  "this framemill was built without OpenCV's dnn module, which face detection "
                  "needs: no framemill-face-detector beside it (Debian: libopencv-dev; then "
                  "configure again)");
  }
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    return Status(StatusCode::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  bp::pipe to_child(in[0], in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return Status(StatusCode::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  bp::pipe from_child(out[0], out[1]);
  const std::vector<std::string> args = {
      "--detector-fd", std::to_string(detector.get()),
      "--name",        setup.detector,
      "--threads",     std::to_string(std::clamp(setup.threads, 1, kMaxDetectorThreads)),
      "--min-score",   std::to_string(setup.detection.min_score),
      "--nms-iou",     std::to_string(setup.detection.nms_iou),
      "--max-faces",   std::to_string(setup.detection.max_faces),
      "--sandbox",     Name(setup.sandbox)};
  // Without a log named, one of its own in the temporary directory, removed with the process:
  // a child that fails says why there.
  std::string log = setup.log_path, owned_log;
  if (log.empty()) {
    std::string name = TemporaryDirectory() + "/framemill-face-detector-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) return Status(StatusCode::kIo, "a log for the face detector: " + name);
    ::close(fd);
    log = owned_log = name;
  }
  auto child = std::make_unique<Child>();
  child->owned_log = owned_log;
  try {
    child->proc = bp::child(exe, bp::args(args), bp::std_in < to_child, bp::std_out > from_child,
                            bp::std_err > log, ChildFds({detector.get()}));
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string("starting framemill-face-detector: ") +
                                             e.what());
  }
  child->to = UniqueFd(to_child.native_sink());
  to_child.assign_sink(-1);
  child->from = UniqueFd(from_child.native_source());
  from_child.assign_source(-1);
  to_child.close();
  from_child.close();
  detector = UniqueFd();
  FM_RETURN_IF_ERROR(SetNonBlocking(child->to.get()));
  FM_RETURN_IF_ERROR(SetNonBlocking(child->from.get()));
  std::unique_ptr<DetectorProcess> p(new DetectorProcess(std::move(child)));
  p->log_path_ = log;

  const uint64_t deadline = MonotonicMs() + uint64_t{kDetectorStartSeconds} * 1000;
  DetectorHello hello;
  Status got = Transfer(p->child_->from.get(), false, &hello, sizeof hello, deadline, stop);
  if (got.code() == StatusCode::kIo) return p->Died("before it loaded " + setup.detector);
  FM_RETURN_IF_ERROR(got);
  if (hello.magic != kHelloMagic || (hello.input_size != 128 && hello.input_size != 256) ||
      hello.sandbox_bytes > kMaxSandboxSummary) {
    return Status(StatusCode::kModelInvalid, "the face detector's hello is not one");
  }
  p->input_size_ = hello.input_size;
  p->sandbox_.resize(hello.sandbox_bytes);
  got = Transfer(p->child_->from.get(), false, p->sandbox_.data(), p->sandbox_.size(), deadline,
                 stop);
  if (got.code() == StatusCode::kIo) return p->Died("after its hello");
  FM_RETURN_IF_ERROR(got);
  spdlog::debug("face detector {}: input {} px, sandbox: {}", setup.detector, p->input_size_,
                p->sandbox_);
  return p;
}

Result<std::vector<DetectedPicture>> DetectorProcess::Detect(const uint8_t* pixels,
                                                             uint32_t count, uint32_t width,
                                                             uint32_t height,
                                                             const std::atomic<bool>& stop) {
  BatchHeader h;
  h.count = count;
  h.width = width;
  h.height = height;
  FM_RETURN_IF_ERROR(CheckBatch(h));
  const uint64_t deadline = MonotonicMs() + uint64_t{kDetectorBatchSeconds} * 1000;
  const size_t bytes = size_t{count} * width * height * 3;
  Status sent = Transfer(child_->to.get(), true, &h, sizeof h, deadline, stop);
  if (sent.ok()) {
    sent = Transfer(child_->to.get(), true, const_cast<uint8_t*>(pixels), bytes, deadline, stop);
  }
  if (sent.code() == StatusCode::kIo) return Died("while it was sent pictures");
  FM_RETURN_IF_ERROR(sent);
  std::vector<DetectedPicture> answers(count);
  for (DetectedPicture& a : answers) {
    FacesHeader fh;
    Status got = Transfer(child_->from.get(), false, &fh, sizeof fh, deadline, stop);
    if (got.code() == StatusCode::kIo) return Died("before it answered");
    FM_RETURN_IF_ERROR(got);
    if (fh.magic != kFacesMagic || fh.faces > kMaxFacesPerPicture) {
      return Status(StatusCode::kModelInvalid, "the face detector's answer is not one");
    }
    std::vector<FaceRecord> records(fh.faces);
    got = Transfer(child_->from.get(), false, records.data(), records.size() * sizeof(FaceRecord),
                   deadline, stop);
    if (got.code() == StatusCode::kIo) return Died("in the middle of an answer");
    FM_RETURN_IF_ERROR(got);
    for (const FaceRecord& r : records) {
      Result<Face> f = FromRecord(r, width, height);
      if (!f.ok()) return f.status();
      a.faces.push_back(*f);
    }
    a.ms = fh.detect_us / 1000.0;
  }
  return answers;
}

}  // namespace framemill
