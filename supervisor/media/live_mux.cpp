#include "supervisor/media/live_mux.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process/child.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/args.hpp>
#include <boost/process/io.hpp>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/mutex.h"
#include "supervisor/process/child_fds.h"

namespace framemill {
namespace {

namespace bp = boost::process;


// The joining ffmpeg dies with the supervisor: a supervisor killed mid-job would otherwise leave it
// waiting for its next pipe forever. (PR_SET_PDEATHSIG follows the thread that forked: the mux's
// own thread, which waits for ffmpeg before it ends.)
struct DieWithParent : bp::extend::handler {
  int parent = ::getpid();
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the supervisor died before the prctl
  }
};

std::string PipeName(size_t index) { return "feed-" + std::to_string(index) + ".nut"; }


}  // namespace

bool UsesLiveMux(bool asked, bool whole_job, bool constant_rate) {
  return asked && whole_job && constant_rate;
}

LiveMux::LiveMux(MuxRequest rq) : rq_(std::move(rq)), ready_(rq_.segments.size(), false) {}

std::unique_ptr<LiveMux> LiveMux::Start(MuxRequest rq) {
  std::unique_ptr<LiveMux> mux(new LiveMux(std::move(rq)));
  mux->thread_ = std::thread([m = mux.get()] { m->Run(); });
  return mux;
}

LiveMux::~LiveMux() {
  if (thread_.joinable()) {
    {
      MutexLock lock(&mu_);
      abandoned_ = true;
      KillChild();
    }
    cv_.NotifyAll();
    thread_.join();
  }
  if (partial_ && !placed_) RemovePartialOutput(rq_, *partial_);
  Cleanup();
}

void LiveMux::Cleanup() {
  for (const std::string& name : pipes_) ::unlinkat(rq_.scratch_fd, name.c_str(), 0);
  pipes_.clear();
  ::unlinkat(rq_.scratch_fd, "live.ffconcat", 0);
}

void LiveMux::SegmentReady(size_t index) {
  {
    MutexLock lock(&mu_);
    if (index < ready_.size()) ready_[index] = true;
  }
  cv_.NotifyAll();
}

bool LiveMux::WaitReady(size_t index) {
  MutexLock lock(&mu_);
  while (!abandoned_ && !ready_[index]) cv_.Wait(&mu_);
  return !abandoned_;
}

void LiveMux::KillChild() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

bool LiveMux::ChildExited() const {
  siginfo_t info{};
  // WNOWAIT: the exit stays to be reaped by the thread's wait.
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid != 0;
}

Status LiveMux::Prepare() {
  if (!rq_.source_carried.has_value()) {
    return Status(StatusCode::kInternal, "a live mux needs the source's streams");
  }
  {
    MutexLock lock(&mu_);
    if (abandoned_) return Status(StatusCode::kCancelled, "the mux was abandoned");
  }
  Result<JoinPlan> join = PlanJoin(rq_);
  if (!join.ok()) return join.status();
  join_ = std::move(*join);
  // The pipes, made afresh: a crashed run of this job may have left some.
  std::vector<std::string> paths;
  for (size_t i = 0; i < rq_.segments.size(); ++i) {
    const std::string name = PipeName(i);
    ::unlinkat(rq_.scratch_fd, name.c_str(), 0);
    if (::mkfifoat(rq_.scratch_fd, name.c_str(), 0600) != 0) {
      return Status(StatusCode::kIo, "mkfifo " + name + ": " + std::strerror(errno));
    }
    pipes_.push_back(name);
    paths.push_back(rq_.scratch_dir + "/" + name);
  }
  FM_RETURN_IF_ERROR(AtomicWriteFile(rq_.scratch_dir + "/live.ffconcat",
                                     ConcatList(paths, rq_.segment_frames, rq_.frame_rate)));
  Result<CreatedFile> partial = CreatePartialOutput(rq_);  // noted, an earlier run's removed
  if (!partial.ok()) return partial.status();
  partial_ = std::move(*partial);
  return Status::Ok();
}

Result<UniqueFd> LiveMux::OpenPipe(size_t index) {
  const std::string name = PipeName(index);
  // Non-blocking: ENXIO until ffmpeg opens the read end, which it does once it has read the
  // segment before to its end. Polled, so that an ffmpeg that has died, or an abandoned mux,
  // ends the wait.
  while (true) {
    UniqueFd fd(
        ::openat(rq_.scratch_fd, name.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (fd.valid()) {
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
        return Status(StatusCode::kIo, name + " is not the mux's pipe");
      }
      const int flags = ::fcntl(fd.get(), F_GETFL);
      if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
        return Status(StatusCode::kIo, "fcntl " + name + ": " + std::strerror(errno));
      }
      return fd;
    }
    if (errno != ENXIO && errno != EINTR) {
      return Status(StatusCode::kIo, "open " + name + ": " + std::strerror(errno));
    }
    {
      MutexLock lock(&mu_);
      if (abandoned_) return Status(StatusCode::kCancelled, "the mux was abandoned");
      if (ChildExited()) {
        return Status(StatusCode::kEncodeFailed,
                      "the joining ffmpeg ended before it read segment " + std::to_string(index));
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

Status LiveMux::Feed(size_t index) {
  Result<UniqueFd> pipe = OpenPipe(index);
  if (!pipe.ok()) return pipe.status();
  UniqueFd segment(::open(rq_.segments[index].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!segment.valid() || ::fstat(segment.get(), &st) != 0) {
    return Status(StatusCode::kIo,
                  "open segment " + std::to_string(index) + ": " + std::strerror(errno));
  }
  off_t offset = 0;
  while (offset < st.st_size) {
    const ssize_t n =
        ::sendfile(pipe->get(), segment.get(), &offset, static_cast<size_t>(st.st_size - offset));
    const int err = n < 0 ? errno : 0;
    if (err == EINTR) continue;
    if (err == EPIPE) {
      // ffmpeg closed the pipe. Alive, it has read what it wanted of the segment (a demuxer may
      // stop short of the file's index) and gone on to the next; the verification counts the
      // frames. Gone, it was killed (an abandoned mux) or failed.
      MutexLock lock(&mu_);
      if (!abandoned_ && !ChildExited()) {
        spdlog::debug("live mux: ffmpeg closed segment {}'s pipe with {} bytes unread", index,
                      st.st_size - offset);
        return Status::Ok();
      }
    }
    if (n <= 0) {
      return Status(err == EPIPE ? StatusCode::kEncodeFailed : StatusCode::kIo,
                    "feeding segment " + std::to_string(index) + " to the joining ffmpeg: " +
                        (n == 0 ? std::string("segment shorter than it was") : std::strerror(err)));
    }
  }
  return Status::Ok();  // closing the pipe ends the segment for ffmpeg
}

void LiveMux::Run() {
  try {
    outcome_ = Prepare();
    if (!outcome_.ok()) return;
    std::vector<int> inherit = {rq_.scratch_fd, rq_.source.fd, partial_->fd.get()};
    const std::vector<std::string> argv = JoinArguments(
        rq_, *join_, ConcatInput(rq_.scratch_dir + "/live.ffconcat"), partial_->fd.get());
    // Confined: it reads the segments' pipes and the source, and writes the partial output.
    Result<Launch> launch = MediaLaunch(argv, inherit);
    if (!launch.ok()) {
      outcome_ = launch.status();
      return;
    }
    const std::string log = rq_.scratch_dir + "/mux.log";
    bp::child child(launch->exe, bp::args(launch->args), bp::std_in.close(), bp::std_out > bp::null,
                    bp::std_err > log, ChildFds(inherit, launch->nicer), DieWithParent());
    ReapOnExit reap(child);  // for an exception below
    {
      MutexLock lock(&mu_);
      pid_ = child.id();
      if (abandoned_) KillChild();
    }
    Status fed = Status::Ok();
    const uint64_t t0 = MonotonicUs();
    for (size_t i = 0; i < rq_.segments.size() && fed.ok(); ++i) {
      fed = WaitReady(i) ? Feed(i) : Status(StatusCode::kCancelled, "the mux was abandoned");
    }
    {
      MutexLock lock(&mu_);
      if (!fed.ok()) KillChild();  // it would wait for its next pipe forever
      pid_ = -1;                   // reaped below: no signal after this
    }
    std::error_code ec;
    child.wait(ec);
    CommandOutput exit;
    SetExitStatus(child.native_exit_code(), &exit);
    exit.err = LastLinesOfFile(log, 4);
    if (!fed.ok()) {
      outcome_ = fed;
    } else if (exit.exit_code != 0) {
      outcome_ = JoinFailed(rq_, Result<CommandOutput>(exit));
    } else {
      spdlog::debug("live mux: {} segments joined by an ffmpeg that ran {} ms", rq_.segments.size(),
                    (MonotonicUs() - t0) / 1000);
    }
  } catch (const std::exception& e) {
    {
      MutexLock lock(&mu_);
      pid_ = -1;  // reaped by ReapOnExit on the way out
    }
    outcome_ = Status(StatusCode::kInternal, std::string("live mux: ") + e.what());
  }
}

Status LiveMux::Finish() {
  {
    MutexLock lock(&mu_);
    for (bool r : ready_) {
      if (!r) return Status(StatusCode::kInternal, "live mux finished before its last segment");
    }
  }
  const uint64_t t0 = MonotonicUs();
  thread_.join();
  spdlog::info("live mux: the join ended {} ms after the render", (MonotonicUs() - t0) / 1000);
  Status done = outcome_;
  if (done.ok()) {
    done = PlaceOutput(rq_, *join_, *partial_);
    placed_ = done.ok();
  }
  if (!done.ok() && partial_) RemovePartialOutput(rq_, *partial_);
  partial_.reset();
  Cleanup();
  return done;
}

}  // namespace framemill
