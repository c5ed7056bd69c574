#include "supervisor/workers/worker_pool.h"

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>

#include "common/file_util.h"
#include "common/load_request.h"
#include "common/log.h"
#include "supervisor/process/child_fds.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/workers/worker_memory.h"

namespace framemill {
namespace bp = boost::process;

// A worker's exit status when the supervisor died before the worker's program started (the
// worker's own kWorkerExitOrphaned, worker/worker_loop.h, which the supervisor does not include).
constexpr int kChildExitOrphaned = 5;

struct WorkerPool::Process {
  bp::child child;
  int pid = 0;
  uint64_t generation = 0;
  std::string log_path;
  WorkerMemory memory;        // what it shares with the supervisor (worker_memory.h)
  int sock = -1;              // our end of the socket pair; -1 once the worker closed its end
  std::string spare_key;      // a spare's SpareKey; "" for a worker started with its model
  bool adopted = false;       // a spare taken by this pool (Adopt)
  uint32_t probe_width = 0, probe_height = 0;  // the probe's input it was started with
  uint64_t model = 0;                          // the pool's model it was started with (SwitchModel)

  ~Process() {
    if (sock >= 0) ::close(sock);
  }
};

std::string WorkerExit::Describe() const {
  std::string what =
      signaled ? "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")"
               : "exit code " + std::to_string(exit_code);
  if (!error.empty()) what += ": " + error;
  return what;
}

std::string WorkerExit::StderrLine() const {
  std::string line = stderr_tail;
  std::replace(line.begin(), line.end(), '\n', '|');
  return line;
}

namespace {

// The pool's own descriptor of the model: a duplicate of the caller's, or the file opened here.
// Close-on-exec (nothing but a worker, where it is bound to kWorkerModelFd, gets it) and above
// kWorkerModelFd, so that binding it in the child is a real dup2 that clears close-on-exec.
Result<int> PoolModelFd(const WorkerOptions& options) {
  int fd = -1;
  if (options.model_fd >= 0) {
    fd = ::fcntl(options.model_fd, F_DUPFD_CLOEXEC, kWorkerModelFd + 1);
    if (fd < 0) {
      return Status(StatusCode::kIo, std::string("cannot duplicate the model's descriptor: ") +
                                         std::strerror(errno));
    }
  } else {
    int opened = ::open(options.model.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (opened < 0) {
      return Status(StatusCode::kModelInvalid, options.model + ": " + std::strerror(errno));
    }
    fd = ::fcntl(opened, F_DUPFD_CLOEXEC, kWorkerModelFd + 1);
    ::close(opened);
    if (fd < 0) {
      return Status(StatusCode::kIo, std::string("cannot duplicate the model's descriptor: ") +
                                         std::strerror(errno));
    }
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(StatusCode::kModelInvalid, options.model + ": not a regular file");
  }
  return fd;
}

}  // namespace

bool WorkerSandboxDegraded(const std::string& summary) {
  // A worker without Landlock's file rules (CUDA) is confined by its private root alone.
  const bool files_open = summary.find("no file rules") != std::string::npos &&
                          summary.find(", mntns") == std::string::npos;
  return summary.rfind("partial", 0) == 0 || summary.rfind("none", 0) == 0 || files_open;
}

// What every pool needs: a channel count in range, and a worker binary that can run.
static Status CheckPool(const WorkerOptions& options, int channels) {
  if (channels < 1 || channels > static_cast<int>(kMaxWorkerChannels)) {
    return Status(StatusCode::kInternal, "worker channel count out of range");
  }
  if (FindExecutable(options.worker_binary).empty() ||
      ::access(FindExecutable(options.worker_binary).c_str(), X_OK) != 0) {
    return Status(StatusCode::kIo,
                  "worker binary not found or not executable: " + options.worker_binary);
  }
  return Status::Ok();
}

Result<std::unique_ptr<WorkerPool>> WorkerPool::Create(const WorkerOptions& options, int channels) {
  FM_RETURN_IF_ERROR(CheckPool(options, channels));
  Result<int> model_fd = PoolModelFd(options);
  if (!model_fd.ok()) return model_fd.status();
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    ::close(*model_fd);
    return Status(StatusCode::kIo, std::string("eventfd: ") + std::strerror(errno));
  }
  return std::unique_ptr<WorkerPool>(new WorkerPool(options, wake_fd, channels, *model_fd));
}

Result<std::unique_ptr<WorkerPool>> WorkerPool::CreateSpares(const WorkerOptions& options,
                                                              int channels,
                                                              uint64_t generations_before) {
  FM_RETURN_IF_ERROR(CheckPool(options, channels));
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return Status(StatusCode::kIo, std::string("eventfd: ") + std::strerror(errno));
  std::unique_ptr<WorkerPool> pool(new WorkerPool(options, wake_fd, channels, -1));
  pool->spares_ = true;
  pool->generations_ = generations_before;
  return pool;
}

WorkerPool::WorkerPool(const WorkerOptions& options, int wake_fd, int channels, int model_fd)
    : options_(options),
      wake_fd_(wake_fd),
      channel_count_(channels),
      processes_(static_cast<size_t>(channels)),
      model_fd_(model_fd) {
  options_.model_fd = -1;  // the caller's; this pool uses its own
}

WorkerPool::~WorkerPool() {
  for (auto& p : processes_) {
    if (p == nullptr) continue;
    ::kill(p->pid, SIGKILL);
    std::error_code ec;
    p->child.wait(ec);
  }
  processes_.clear();  // removes the control blocks
  ::close(wake_fd_);
  if (model_fd_ >= 0) ::close(model_fd_);
  if (first_ != nullptr) ::close(first_->fd);
}

std::string WorkerPool::ControlPath(int k) const {
  return processes_[k] ? processes_[k]->memory.ControlPath() : std::string();
}

std::string WorkerPool::Sandbox(int k) const {
  return processes_[k] ? processes_[k]->memory.Sandbox() : std::string();
}

Status WorkerPool::Spawn(int k, int gpu) {
  if (processes_[k] != nullptr) {
    return Status(StatusCode::kInternal, "channel " + std::to_string(k) + " still has a worker");
  }
  auto p = std::make_unique<Process>();
  Result<WorkerMemory> memory = WorkerMemory::Create(k, ::getpid());
  if (!memory.ok()) return memory.status();
  p->memory = std::move(*memory);
  // Our end stays close-on-exec; the worker's end is inherited by this one child only (the
  // flag is cleared between fork and exec), so other children (ffmpeg) never hold it. Nothing
  // else is inherited: a pipe another thread opened without O_CLOEXEC (Boost's, to an ffprobe of
  // another job) held open by a long-lived worker would keep that job from seeing its end.
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    return Status(StatusCode::kIo, std::string("socketpair: ") + std::strerror(errno));
  }
  p->sock = pair[0];
  const int worker_end = pair[1];
  p->generation = ++generations_;
  p->probe_width = static_cast<uint32_t>(options_.launch.probe_width);
  p->probe_height = static_cast<uint32_t>(options_.launch.probe_height);
  p->model = model_;  // with the probe's input: what it is started with (SwitchModel)
  p->log_path = options_.log_dir + (spares_ ? "/spare-" : "/worker-") + std::to_string(k) + "-" +
                std::to_string(p->generation) + ".log";
  if (spares_) p->spare_key = SpareKey(options_, gpu);
  std::vector<std::string> arguments =
      spares_ ? WorkerSpawnArguments(options_, k, gpu, p->memory.ControlPath(), worker_end, true)
              : WorkerArguments(options_, k, gpu, p->memory.ControlPath(), worker_end);
  // A spare has no model yet: the bind below gets the wake end as a stand-in, and the child
  // closes it again before exec (only the wake end is kept).
  const int model_fd = spares_ ? worker_end : model_fd_;
  const bool spare = spares_;
  const pid_t supervisor = ::getpid();
  try {
    bp::environment env = boost::this_process::environment();
    if (!options_.pytorch_alloc_conf.empty()) {
      env["PYTORCH_CUDA_ALLOC_CONF"] = options_.pytorch_alloc_conf;
      env["PYTORCH_ALLOC_CONF"] = options_.pytorch_alloc_conf;
    }
    if (gpu >= 0) env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
    // stdout too goes to the log: a model's print() must not reach the supervisor's output.
    p->child = bp::child(
        options_.worker_binary, bp::args(arguments),
        env, bp::posix::fd.bind(kWorkerModelFd, model_fd), bp::std_in.close(),
        (bp::std_out & bp::std_err) > p->log_path,
        bp::extend::on_exec_setup = [worker_end, spare, supervisor](auto&) {
          // Dies with the supervisor from here on, not only once its main() runs (LibTorch's
          // loading comes first): a supervisor killed in between would leave it to a subreaper
          // (a container's init, a user systemd) waiting forever. And the supervisor may be gone
          // already. (The worker sets the signal again; async-signal-safe calls only here.)
          ::prctl(PR_SET_PDEATHSIG, SIGKILL);
          if (::getppid() != supervisor) ::_exit(kChildExitOrphaned);
          const int keep[] = {worker_end, kWorkerModelFd};
          KeepOnlyDescriptors(keep, spare ? 1 : 2);
        });
  } catch (const std::exception& e) {
    ::close(worker_end);
    return Status(StatusCode::kIo,
                  "cannot start worker " + options_.worker_binary + ": " + e.what());
  }
  ::close(worker_end);
  p->pid = p->child.id();
  spdlog::debug("{} {} generation {} started, pid {}{}, log {}", spares_ ? "spare" : "worker", k,
                p->generation, p->pid, gpu >= 0 ? ", GPU " + std::to_string(gpu) : std::string(),
                p->log_path);
  processes_[k] = std::move(p);
  return Status::Ok();
}

Result<int> WorkerPool::OpenLog(const std::string& path) const {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) {
    return Status(StatusCode::kIo, "cannot open the worker log " + path + ": " +
                                       std::strerror(errno));
  }
  return fd;
}

Status WorkerPool::Adopt(int k, int gpu, WorkerPool* spares) {
  if (spares_ || processes_[k] != nullptr) {
    return Status(StatusCode::kInternal, "channel " + std::to_string(k) + " cannot take a spare");
  }
  for (const WorkerExit& e : spares->ReapExited()) {
    spdlog::warn("spare worker {} (pid {}) had exited: {}{}", e.channel, e.pid, e.Describe(),
                 e.stderr_tail.empty() ? std::string() : "; its log ends: " + e.StderrLine());
  }
  const std::string key = SpareKey(options_, gpu);
  int from = -1;
  for (int s = 0; s < spares->channel_count_ && from < 0; ++s) {
    const Process* p = spares->processes_[s].get();
    if (p != nullptr && p->sock >= 0 && p->spare_key == key) from = s;
  }
  if (from < 0) return Status(StatusCode::kWorkerFailed, "no spare worker fits");
  std::unique_ptr<Process> p = std::move(spares->processes_[from]);
  const uint64_t generation = generations_ + 1;
  const std::string log_path = options_.log_dir + "/worker-" + std::to_string(k) + "-" +
                               std::to_string(generation) + ".log";
  Result<int> log_fd = OpenLog(log_path);
  // The job's own device too: a spare told "auto" is told "cuda" when the job says so, and then
  // fails as a worker started for the job would if CUDA does not work.
  WorkerLaunch launch = WorkerLaunchFor(options_, k, gpu, "", -1, /*spare=*/true);
  Status sent = log_fd.ok() ? SendLaunchRequest(p->sock, launch,
                                              {model_fd_, *log_fd})
                            : log_fd.status();
  if (log_fd.ok()) ::close(*log_fd);
  if (!sent.ok()) {
    // Half a request may be on its way: this spare is no use to anyone.
    ::kill(p->pid, SIGKILL);
    std::error_code ec;
    p->child.wait(ec);
    return sent;
  }
  generations_ = generation;
  p->generation = generation;
  p->probe_width = static_cast<uint32_t>(options_.launch.probe_width);
  p->probe_height = static_cast<uint32_t>(options_.launch.probe_height);
  p->model = model_;
  p->log_path = log_path;
  p->adopted = true;
  p->memory.SetChannel(k);
  spdlog::debug("worker {} generation {} is spare {} (pid {}){}, log {}", k, generation, from,
                p->pid, gpu >= 0 ? ", GPU " + std::to_string(gpu) : std::string(), log_path);
  processes_[k] = std::move(p);
  return Status::Ok();
}

bool WorkerPool::Adopted(int k) const { return processes_[k] != nullptr && processes_[k]->adopted; }

bool WorkerPool::Alive(int k) const { return processes_[k] != nullptr; }

Status WorkerPool::SwitchModel(int model_fd, const std::string& label, uint32_t probe_width,
                               uint32_t probe_height, uint32_t probe_batch) {
  if (spares_) return Status(StatusCode::kInternal, "a spare pool has no model");
  WorkerOptions next = options_;
  next.model_fd = model_fd;
  Result<int> fd = PoolModelFd(next);
  if (!fd.ok()) return fd.status();
  if (first_ == nullptr) {
    first_ = std::make_unique<FirstModel>(FirstModel{model_fd_, options_.model, options_.launch});
  } else {
    ::close(model_fd_);
  }
  model_fd_ = *fd;
  options_.model = label;
  options_.launch.probe_width = static_cast<int>(probe_width);
  options_.launch.probe_height = static_cast<int>(probe_height);
  options_.launch.probe_batch = static_cast<int>(probe_batch);
  model_ = ++models_switched_;
  return Status::Ok();
}

void WorkerPool::RevertModel() {
  if (first_ == nullptr) return;
  ::close(model_fd_);
  model_fd_ = first_->fd;
  options_.model = first_->model;
  options_.launch = first_->launch;
  first_.reset();
  model_ = 0;
}

uint64_t WorkerPool::ModelOf(int k) const { return processes_[k] ? processes_[k]->model : 0; }

std::pair<uint32_t, uint32_t> WorkerPool::ProbeInput(int k) const {
  if (processes_[k] == nullptr) return {0, 0};
  return {processes_[k]->probe_width, processes_[k]->probe_height};
}

uint64_t WorkerPool::Generation(int k) const {
  return processes_[k] ? processes_[k]->generation : 0;
}

void WorkerPool::Signal(int k, int signal) {
  if (processes_[k] != nullptr) ::kill(processes_[k]->pid, signal);
}

int WorkerPool::Pid(int k) const { return processes_[k] ? processes_[k]->pid : 0; }

std::vector<WorkerExit> WorkerPool::ReapExited() {
  std::vector<WorkerExit> exits;
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] == nullptr) continue;
    int status = 0;
    pid_t r = ::waitpid(processes_[k]->pid, &status, WNOHANG);
    if (r != processes_[k]->pid) continue;
    // Reaped here, so boost must not wait for it again.
    processes_[k]->child.detach();
    const WorkerMemory& memory = processes_[k]->memory;
    WorkerExit e;
    e.channel = k;
    e.pid = processes_[k]->pid;
    e.signaled = WIFSIGNALED(status);
    e.signal = e.signaled ? WTERMSIG(status) : 0;
    e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    e.generation = processes_[k]->generation;
    e.stderr_tail = LastLinesOfFile(processes_[k]->log_path, 5);
    SettleLog(processes_[k]->log_path);
    e.last_state = memory.LastState();
    if (e.last_state == WorkerState::kFailed) e.error = memory.LastError();
    processes_[k].reset();
    exits.push_back(std::move(e));
  }
  return exits;
}

void WorkerPool::SettleLog(const std::string& path) {
  if (path.empty()) return;
  kept_logs_.push_back(path);
  while (kept_logs_.size() > kKeptWorkerLogs) {
    ::unlink(kept_logs_.front().c_str());
    kept_logs_.pop_front();
  }
}

PushResult WorkerPool::Send(int k, const ChunkRequest& request) {
  Process* p = processes_[k].get();
  if (p == nullptr) return PushResult::kFull;
  PushResult r = p->memory.Send(request, p->pid);
  if (r == PushResult::kPushed && p->sock >= 0) PostWakeUp(p->sock);
  return r;
}

bool WorkerPool::RequestsIntact(int k) {
  Process* p = processes_[k].get();
  return p == nullptr || p->memory.RequestsIntact();
}

PopResult WorkerPool::Receive(int k, ChunkResult* out) {
  Process* p = processes_[k].get();
  return p == nullptr ? PopResult::kEmpty : p->memory.Receive(out);
}

Result<WorkerState> WorkerPool::State(int k) {
  Process* p = processes_[k].get();
  if (p == nullptr) return WorkerState::kEmpty;
  return p->memory.State();
}

Result<ProbeReport> WorkerPool::Probe(int k) {
  Process* p = processes_[k].get();
  if (p == nullptr) return Status(StatusCode::kInternal, "no worker on this channel");
  return p->memory.Probe(p->probe_width, p->probe_height);
}

Result<TelemetrySnapshot> WorkerPool::ReadTelemetry(int k) {
  Process* p = processes_[k].get();
  if (p == nullptr) return TelemetrySnapshot{};
  return p->memory.ReadTelemetry();
}

TelemetrySnapshot WorkerPool::LastTelemetry(int k) const {
  return processes_[k] ? processes_[k]->memory.LastTelemetry() : TelemetrySnapshot{};
}

void WorkerPool::WaitForWake(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<int> owners;  // channel of each entry; -1 for our own eventfd
  fds.push_back({wake_fd_, POLLIN, 0});
  owners.push_back(-1);
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] != nullptr && processes_[k]->sock >= 0) {
      fds.push_back({processes_[k]->sock, POLLIN, 0});
      owners.push_back(k);
    }
  }
  // A signal does not end the wait early: the caller's stop flag is looked at when it ends.
  Result<int> ready = WaitForWakeUp(fds.data(), fds.size(), timeout_ms);
  if (!ready.ok() || *ready == 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    // Coalesce: many wake-ups may have piled up; one look at everything serves them all.
    if (owners[i] < 0) {
      uint64_t count;
      (void)!::read(wake_fd_, &count, sizeof(count));
      continue;
    }
    Process* p = processes_[owners[i]].get();
    const bool open = DrainWakeUps(p->sock);
    if (!open || (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
      // The worker closed its end (it exited, or chose to): stop polling it, or poll would
      // return at once for ever. Its exit is seen by ReapExited; its results by the next pass.
      ::close(p->sock);
      p->sock = -1;
    }
  }
}

void WorkerPool::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void WorkerPool::AskAllToStop() {
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] != nullptr) Send(k, stop);
  }
}

void WorkerPool::StopAll(int grace_ms) {
  AskAllToStop();  // again for those asked before: a worker reads one kStop and exits
  uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(grace_ms);
  while (MonotonicMs() < deadline) {
    ReapExited();
    bool any = false;
    for (auto& p : processes_) any = any || p != nullptr;
    if (!any) return;
    ::usleep(10 * 1000);
  }
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] == nullptr) continue;
    spdlog::warn("worker {} (pid {}) did not stop within {} ms; killing it", k, processes_[k]->pid,
                 grace_ms);
    ::kill(processes_[k]->pid, SIGKILL);
  }
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] == nullptr) continue;
    int status = 0;
    ::waitpid(processes_[k]->pid, &status, 0);
    processes_[k]->child.detach();
    processes_[k].reset();
  }
}

}  // namespace framemill
