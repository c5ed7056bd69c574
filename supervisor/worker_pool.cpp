#include "supervisor/worker_pool.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/date_time/posix_time/posix_time_types.hpp>
#include <boost/process.hpp>
#include <boost/process/posix.hpp>

#include "common/log.h"
#include "supervisor/subprocess.h"

namespace framemill {
namespace bp = boost::process;

struct WorkerPool::Process {
  bp::child child;
  int pid = 0;
  uint64_t generation = 0;
  std::string log_path;
};

std::string WorkerExit::Describe() const {
  std::string what =
      signaled ? "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")"
               : "exit code " + std::to_string(exit_code);
  if (!error.empty()) what += ": " + error;
  return what;
}

namespace {

// Where a worker finds its model: the pool's descriptor, duplicated to this number in the child.
constexpr int kWorkerModelFd = 3;

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
  return summary.rfind("partial", 0) == 0 || summary.rfind("none", 0) == 0;
}

Result<std::unique_ptr<WorkerPool>> WorkerPool::Create(const WorkerOptions& options, int channels) {
  if (channels < 1 || channels > static_cast<int>(kMaxWorkerChannels)) {
    return Status(StatusCode::kInternal, "worker channel count out of range");
  }
  if (FindExecutable(options.worker_binary).empty() ||
      ::access(FindExecutable(options.worker_binary).c_str(), X_OK) != 0) {
    return Status(StatusCode::kIo,
                  "worker binary not found or not executable: " + options.worker_binary);
  }
  Result<int> model_fd = PoolModelFd(options);
  if (!model_fd.ok()) return model_fd.status();
  Result<SharedMemory> shm =
      SharedMemory::Create(NewSharedMemoryName("ctl"), sizeof(ControlHeader));
  if (!shm.ok()) {
    ::close(*model_fd);
    return shm.status();
  }
  auto* control = new (shm->data()) ControlHeader();
  control->magic = kControlMagic;
  control->version = kProtocolVersion;
  control->header_bytes = sizeof(ControlHeader);
  control->channel_bytes = sizeof(WorkerChannel);
  control->channel_count = static_cast<uint32_t>(channels);
  control->supervisor_pid = ::getpid();
  return std::unique_ptr<WorkerPool>(new WorkerPool(options, std::move(*shm), channels, *model_fd));
}

WorkerPool::WorkerPool(const WorkerOptions& options, SharedMemory shm, int channels, int model_fd)
    : options_(options),
      shm_(std::move(shm)),
      control_(static_cast<ControlHeader*>(shm_.data())),
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
  // The control block is destroyed in place (semaphores) before the shm is unlinked.
  control_->~ControlHeader();
  ::close(model_fd_);
}

std::vector<std::string> WorkerPool::WorkerArguments(int k, int gpu) const {
  return {"--control",     shm_.name(),
          "--channel",     std::to_string(k),
          "--model-fd",    std::to_string(kWorkerModelFd),
          "--model-label", options_.model,  // for messages; the worker never opens it
          "--device",      gpu >= 0 ? std::string("cuda") : options_.device,
          "--precision",   options_.precision,
          "--log-level",   options_.log_level,
          "--sandbox",     Name(options_.sandbox)};
}

std::string WorkerPool::Sandbox(int k) const {
  // Worker-written: bounded, and printable ASCII only.
  const char* text = control_->channels[k].sandbox;
  std::string s(text, strnlen(text, sizeof(control_->channels[k].sandbox)));
  for (char& c : s) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return s;
}

Status WorkerPool::Spawn(int k, int gpu) {
  if (processes_[k] != nullptr) {
    return Status(StatusCode::kInternal, "channel " + std::to_string(k) + " still has a worker");
  }
  WorkerChannel& ch = control_->channels[k];
  // Nobody else uses this channel now: its last worker (if any) was reaped. Rebuild it, which
  // also resets the request semaphore's count.
  ch.~WorkerChannel();
  new (&ch) WorkerChannel();
  ch.state.store(WorkerState::kStarting, std::memory_order_release);
  auto p = std::make_unique<Process>();
  p->generation = ++generations_;
  p->log_path = options_.log_dir + "/worker-" + std::to_string(k) + "-" +
                std::to_string(p->generation) + ".log";
  try {
    bp::environment env = boost::this_process::environment();
    if (!options_.pytorch_alloc_conf.empty()) {
      env["PYTORCH_CUDA_ALLOC_CONF"] = options_.pytorch_alloc_conf;
      env["PYTORCH_ALLOC_CONF"] = options_.pytorch_alloc_conf;
    }
    if (gpu >= 0) env["CUDA_VISIBLE_DEVICES"] = std::to_string(gpu);
    // stdout too goes to the log: a model's print() must not reach the supervisor's output.
    p->child = bp::child(options_.worker_binary, bp::args(WorkerArguments(k, gpu)), env,
                         bp::posix::fd.bind(kWorkerModelFd, model_fd_), bp::std_in.close(),
                         (bp::std_out & bp::std_err) > p->log_path);
  } catch (const std::exception& e) {
    ch.state.store(WorkerState::kEmpty);
    return Status(StatusCode::kIo,
                  "cannot start worker " + options_.worker_binary + ": " + e.what());
  }
  p->pid = p->child.id();
  ch.pid.store(p->pid, std::memory_order_release);
  spdlog::debug("worker {} generation {} started, pid {}{}, log {}", k, p->generation, p->pid,
                gpu >= 0 ? ", GPU " + std::to_string(gpu) : std::string(), p->log_path);
  processes_[k] = std::move(p);
  return Status::Ok();
}

bool WorkerPool::Alive(int k) const { return processes_[k] != nullptr; }

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
    WorkerChannel& ch = control_->channels[k];
    WorkerExit e;
    e.channel = k;
    e.pid = processes_[k]->pid;
    e.signaled = WIFSIGNALED(status);
    e.signal = e.signaled ? WTERMSIG(status) : 0;
    e.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    e.generation = processes_[k]->generation;
    e.stderr_tail = LastLinesOfFile(processes_[k]->log_path, 5);
    e.last_state = ch.state.load(std::memory_order_acquire);
    if (e.last_state == WorkerState::kFailed) {
      e.error.assign(ch.error, strnlen(ch.error, sizeof(ch.error)));
    }
    ch.state.store(WorkerState::kEmpty, std::memory_order_release);
    ch.pid.store(0);
    processes_[k].reset();
    exits.push_back(std::move(e));
  }
  return exits;
}

bool WorkerPool::Send(int k, const ChunkRequest& request) {
  WorkerChannel& ch = control_->channels[k];
  if (!ch.requests.TryPush(request)) return false;
  ch.request_posted.post();
  return true;
}

void WorkerPool::WaitForWake(int timeout_ms) {
  auto deadline = boost::posix_time::microsec_clock::universal_time() +
                  boost::posix_time::milliseconds(timeout_ms);
  try {
    if (control_->wake.timed_wait(deadline)) {
      // Coalesce: many posts may have piled up; one look at everything serves them all.
      while (control_->wake.try_wait()) {
      }
    }
  } catch (const boost::interprocess::interprocess_exception&) {
    // EINTR: a signal (SIGTERM, SIGINT) arrived while waiting. Boost reports it as an exception;
    // for the caller it is just an early wake-up, and it looks at the stop flag next.
  }
}

void WorkerPool::Wake() { control_->wake.post(); }

void WorkerPool::StopAll(int grace_ms) {
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  for (int k = 0; k < channel_count_; ++k) {
    if (processes_[k] != nullptr) Send(k, stop);
  }
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
