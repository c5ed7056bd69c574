#include "supervisor/process/subprocess.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <charconv>
#include <atomic>
#include <fstream>
#include <future>
#include <poll.h>
#include <sstream>
#include <thread>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/env_knobs.h"
#include "common/mutex.h"
#include "supervisor/process/child_fds.h"

namespace framemill {
namespace bp = boost::process;

namespace {
constexpr unsigned kCloseRangeCloexec = 1u << 2;  // CLOSE_RANGE_CLOEXEC (linux/close_range.h)

std::atomic<int64_t> g_child_timeout_ms{3600 * 1000};

// Kills a child that runs past ChildTimeout(): a thread of its own waits on the child's pidfd
// (readable once it exits) for that long, then signals it through the pidfd, which names this
// child even after it was reaped and its pid reused. Made right after the child starts; its
// destructor waits for the child's end or the kill (call it after the child's pipes closed, or
// after the kill that ends a read).
class ChildDeadline {
 public:
  // `stop` (may be null): the child is killed too once it is set (looked at every 200 ms).
  explicit ChildDeadline(pid_t pid, const std::atomic<bool>* stop = nullptr)
      : pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))),
        timeout_ms_(g_child_timeout_ms.load()),
        stop_(stop) {
    if (pidfd_ >= 0) thread_ = std::thread([this] { Watch(); });
  }
  ~ChildDeadline() {
    if (thread_.joinable()) thread_.join();
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  ChildDeadline(const ChildDeadline&) = delete;
  ChildDeadline& operator=(const ChildDeadline&) = delete;
  bool expired() const { return expired_.load(); }
  bool stopped() const { return stopped_.load(); }
  // Waits for the watch to end (the child exited or was killed).
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Watch() {
    const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(timeout_ms_);
    for (;;) {
      const uint64_t now = MonotonicMs();
      if (now >= deadline) break;
      pollfd p{pidfd_, POLLIN, 0};
      const uint64_t look_ms = stop_ != nullptr ? 200 : 60 * 1000;
      const int left = static_cast<int>(std::min<uint64_t>(deadline - now, look_ms));
      const int r = ::poll(&p, 1, left);
      if (r > 0) return;                  // it exited
      if (r < 0 && errno != EINTR) return;  // cannot watch: no deadline
      if (stop_ != nullptr && stop_->load()) {
        stopped_.store(true);
        break;
      }
    }
    if (!stopped_.load()) expired_.store(true);
    (void)::syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
  }

  const int pidfd_;
  const int64_t timeout_ms_;
  const std::atomic<bool>* stop_;
  std::atomic<bool> expired_{false};
  std::atomic<bool> stopped_{false};
  std::thread thread_;  // last: started once the rest is made
};

Status TimedOut(const std::string& exe) {
  return Status(StatusCode::kTimedOut,
                exe + " still ran after " + std::to_string(g_child_timeout_ms.load() / 1000) +
                    " s (child_timeout_s): killed");
}

struct Confinement {
  Mutex mu;
  std::string launcher GUARDED_BY(mu);
  std::string mode GUARDED_BY(mu);
  std::vector<std::string> programs GUARDED_BY(mu);
};
Confinement& Confined() {
  static Confinement* const c = new Confinement();
  return *c;
}

// The launcher's rule for an inherited descriptor, named as the program sees it
// (/proc/self/fd/N): a regular file open for writing is an output ("--write"), any other regular
// file or a directory an input ("--read": a directory with what is beneath it). Pipes and sockets
// need none (Landlock does not police them; named FIFOs are reached through their directory).
void AddDescriptorRule(int fd, std::vector<std::string>* args) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) return;
  const int flags = ::fcntl(fd, F_GETFL);
  const bool written = S_ISREG(st.st_mode) && flags >= 0 && (flags & O_ACCMODE) != O_RDONLY;
  args->insert(args->end(),
               {written ? "--write" : "--read", "/proc/self/fd/" + std::to_string(fd)});
}

// A hardware encoder (NVENC, VA-API, Quick Sync ...) drives a GPU through its driver's device
// nodes and files, which framemill-confine's rules do not open (nor does the CUDA driver work
// under Landlock's file rules: worker/sandbox/sandbox_policy.h). ffmpeg asked for one runs
// unconfined: it encodes frames the supervisor writes or framemill's own files.
bool SelectsHardwareEncoder(const std::vector<std::string>& argv) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    const std::string& option = argv[i];
    if (option != "-c:v" && option != "-codec:v" && option != "-vcodec" && option != "-c") continue;
    for (const char* api : {"nvenc", "vaapi", "qsv", "amf", "v4l2m2m", "vulkan", "omx"}) {
      if (argv[i + 1].find(api) != std::string::npos) return true;
    }
  }
  return false;
}

// What to start for argv: confined when `always`, or when argv[0] is one of the programs
// ConfineMediaPrograms named and it asks for no hardware encoder (and a launcher is set either
// way).
Result<Launch> LaunchAs(const std::vector<std::string>& argv, const std::vector<int>& inherit,
                        bool always) {
  Result<Launch> plain = PlainLaunch(argv);
  if (!plain.ok()) return plain.status();
  Launch l = std::move(*plain);
  Confinement& c = Confined();
  MutexLock lock(&c.mu);
  if (c.launcher.empty() ||
      (!always && (std::find(c.programs.begin(), c.programs.end(), l.name) == c.programs.end() ||
                   SelectsHardwareEncoder(argv)))) {
    return l;
  }
  std::vector<std::string> args = {"--mode", c.mode};
  for (int fd : inherit) AddDescriptorRule(fd, &args);
  args.push_back("--");
  args.push_back(l.name);
  args.insert(args.end(), l.args.begin(), l.args.end());
  l.exe = c.launcher;
  l.args = std::move(args);
  return l;
}

// Starts argv as LaunchAs says through `run(launch, &result)`, which starts, drives and waits
// for it and may fail with an error of its own. A program not on PATH, or an exception from
// starting or driving it, is kIo naming the program.
Result<CommandOutput> RunProgram(
    const std::vector<std::string>& argv, const std::vector<int>& inherit,
    const std::function<Status(const Launch& launch, CommandOutput* result)>& run) {
  Result<Launch> launch = LaunchAs(argv, inherit, /*always=*/false);
  if (!launch.ok()) return launch.status();
  CommandOutput result;
  try {
    FM_RETURN_IF_ERROR(run(*launch, &result));
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "cannot run " + launch->name + ": " + e.what());
  }
  return result;
}

}  // namespace

void ConfineMediaPrograms(const std::string& launcher, const std::string& mode,
                          const std::vector<std::string>& programs) {
  Confinement& c = Confined();
  MutexLock lock(&c.mu);
  c.launcher = launcher;
  c.mode = mode;
  c.programs.clear();
  for (const std::string& p : programs) {
    std::string found = FindExecutable(p);
    if (!found.empty()) c.programs.push_back(found);
  }
}

void ConfineMediaPrograms(const Config& config) {
  const WorkerSandbox mode = config.worker_sandbox.value_or(WorkerSandbox::kAuto);
  if (mode == WorkerSandbox::kOff) return;
  ConfineMediaPrograms(ConfineBinaryPath(), mode == WorkerSandbox::kRequired ? "required" : "auto",
                       {config.ffprobe, config.ffmpeg});
}

Result<Launch> PlainLaunch(const std::vector<std::string>& argv) {
  Launch l;
  l.name = FindExecutable(argv.at(0));
  if (l.name.empty()) return Status(StatusCode::kIo, argv[0] + ": program not found on PATH");
  l.exe = l.name;
  l.args.assign(argv.begin() + 1, argv.end());
  return l;
}

Result<Launch> ConfinedLaunch(const std::vector<std::string>& argv,
                              const std::vector<int>& inherit) {
  return LaunchAs(argv, inherit, /*always=*/true);
}

Result<Launch> MediaLaunch(const std::vector<std::string>& argv, const std::vector<int>& inherit) {
  Result<Launch> launch = LaunchAs(argv, inherit, /*always=*/false);
  if (launch.ok()) launch->nicer = MediaNiceness();
  return launch;
}

int MediaNiceness() {
  static const int nicer = [] {
    const std::optional<std::string>& v = Knob(EnvKnob::kMediaNice);
    if (!v) return 0;
    int n = 0;
    const char* end = v->data() + v->size();
    const auto [at, ec] = std::from_chars(v->data(), end, n);
    if (ec != std::errc() || at != end || n < 1 || n > 19) {
      spdlog::warn("{}={} is not a niceness from 1 to 19: ignored", Info(EnvKnob::kMediaNice).name,
                   *v);
      return 0;
    }
    return n;
  }();
  return nicer;
}

void SetChildTimeout(double seconds) {
  g_child_timeout_ms.store(static_cast<int64_t>(std::max(0.001, seconds) * 1000.0));
}

double ChildTimeout() { return static_cast<double>(g_child_timeout_ms.load()) / 1000.0; }

void KeepOnlyDescriptors(const int* keep, size_t count) {
  if (::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec) != 0) {
    // Kernels before 5.11: mark them one by one (fcntl is async-signal-safe).
    long max = ::sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > (1 << 20)) max = 1 << 20;
    for (int fd = 3; fd < max; ++fd) (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  for (size_t i = 0; i < count; ++i) (void)::fcntl(keep[i], F_SETFD, 0);
}

void SetExitStatus(int wait_status, CommandOutput* out) {
  if (WIFSIGNALED(wait_status)) {
    out->exit_code = -1;
    out->signal = WTERMSIG(wait_status);
  } else {
    out->exit_code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
    out->signal = 0;
  }
}

std::string DescribeExit(const CommandOutput& out) {
  if (out.signal != 0) {
    return "killed by signal " + std::to_string(out.signal) + " (" + strsignal(out.signal) + ")";
  }
  return "exit code " + std::to_string(out.exit_code);
}

std::string FindExecutable(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  return bp::search_path(program).string();
}

namespace {
// `program` in the running binary's directory (`program` alone when that is unknown).
std::string BesideSelf(const std::string& program) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return program;
  self[n] = '\0';
  std::string dir(self);
  return dir.substr(0, dir.rfind('/')) + "/" + program;
}
}  // namespace

std::string WorkerBinaryPath(const std::string& configured) {
  return configured.empty() ? BesideSelf("framemill-worker") : configured;
}

std::string ConfineBinaryPath() { return BesideSelf("framemill-confine"); }

Result<CommandOutput> RunAndCapture(const std::vector<std::string>& argv,
                                    const std::vector<int>& inherit,
                                    const std::atomic<bool>* stop) {
  return RunProgram(argv, inherit, [&](const Launch& l, CommandOutput* result) {
    boost::asio::io_context io;
    std::future<std::string> out, err;
    bp::child child(l.exe, bp::args(l.args), bp::std_in.close(), bp::std_out > out,
                    bp::std_err > err, io, ChildFds(inherit));
    ReapOnExit reap(child);
    ChildDeadline deadline(child.id(), stop);
    io.run();  // returns once both pipes reach end of file
    child.wait();
    deadline.Join();
    if (deadline.expired()) return TimedOut(l.name);
    if (deadline.stopped()) return Status(StatusCode::kCancelled, l.name + " stopped: killed");
    SetExitStatus(child.native_exit_code(), result);
    result->out = out.get();
    result->err = err.get();
    return Status::Ok();
  });
}

Result<CommandOutput> RunForEachLine(const std::vector<std::string>& argv,
                                     const std::function<void(const std::string&)>& on_line,
                                     const std::vector<int>& inherit,
                                     const std::atomic<bool>* stop) {
  return RunProgram(argv, inherit, [&](const Launch& l, CommandOutput* result) {
    // stderr is drained on its own thread, so that a chatty child cannot block on a full
    // stderr pipe while we read its stdout.
    boost::asio::io_context io;
    std::future<std::string> err;
    bp::ipstream out;
    bp::child child(l.exe, bp::args(l.args), bp::std_in.close(), bp::std_out > out,
                    bp::std_err > err, io, ChildFds(inherit));
    ReapOnExit reap(child);
    ChildDeadline deadline(child.id(), stop);
    std::thread drain([&io] {
      try {
        io.run();
      } catch (const std::exception&) {
        // The stderr text is lost; the exit status still says what happened.
      }
    });
    std::string failure;
    try {
      for (std::string line; std::getline(out, line);) on_line(line);
    } catch (const std::exception& e) {
      failure = e.what();  // stop the child: its pipes close and the drain thread ends
      KillAndReap(child);
    }
    child.wait();
    drain.join();
    deadline.Join();
    if (deadline.expired()) return TimedOut(l.name);
    if (deadline.stopped()) return Status(StatusCode::kCancelled, l.name + " stopped: killed");
    if (!failure.empty()) return Status(StatusCode::kInternal, l.name + " output: " + failure);
    SetExitStatus(child.native_exit_code(), result);
    result->err = err.get();
    return Status::Ok();
  });
}

std::string LastLines(const std::string& text, int max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  size_t first = lines.size() > static_cast<size_t>(max_lines) ? lines.size() - max_lines : 0;
  std::string tail;
  for (size_t i = first; i < lines.size(); ++i) tail += (i > first ? "\n" : "") + lines[i];
  return tail;
}

std::string LastLinesOfFile(const std::string& path, int max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream buf;
  buf << in.rdbuf();
  return LastLines(buf.str(), max_lines);
}

}  // namespace framemill
