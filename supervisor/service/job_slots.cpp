#include "supervisor/service/job_slots.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/mutex.h"

namespace framemill {

JobThread::JobThread() : thread_([this] { Loop(); }) {}

JobThread::~JobThread() {
  {
    MutexLock lock(&mu_);
    quit_ = true;
  }
  cv_.NotifyOne();
  thread_.join();
}

bool JobThread::busy() {
  MutexLock lock(&mu_);
  return task_ != nullptr;
}

void JobThread::Run(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    task_ = std::move(task);
  }
  cv_.NotifyOne();
}

void JobThread::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      while (!quit_ && task_ == nullptr) cv_.Wait(&mu_);
      if (task_ == nullptr) return;  // quit with nothing to do
      task = task_;
    }
    task();
    MutexLock lock(&mu_);
    task_ = nullptr;
  }
}

JobSlots::~JobSlots() {
  threads_.clear();
  for (int fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
  }
}

Status JobSlots::Open() {
  if (::pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status(StatusCode::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  return Status::Ok();
}

JobThread* JobSlots::FreeThread() {
  for (JobThread& t : threads_) {
    if (!t.busy()) return &t;
  }
  return &threads_.emplace_back();
}

RunningJob* JobSlots::Start(JobThread* thread, std::unique_ptr<RunningJob> job,
                            std::function<void(RunningJob*)> body) {
  RunningJob* raw = job.get();
  running_.push_back(std::move(job));
  thread->Run([this, raw, body = std::move(body)] {
    body(raw);
    raw->ended.store(true);
    Wake();
  });
  return raw;
}

std::vector<std::unique_ptr<RunningJob>> JobSlots::TakeEnded() {
  std::vector<std::unique_ptr<RunningJob>> ended;
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->ended.load()) {
      ended.push_back(std::move(*it));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

void JobSlots::Wake() {
  const char byte = 1;
  (void)!::write(wake_fds_[1], &byte, 1);
}

void JobSlots::DrainWake() {
  char buf[4096];
  while (::read(wake_fds_[0], buf, sizeof(buf)) > 0) {
  }
}

bool JobSlots::AnyAlone() const {
  return std::any_of(running_.begin(), running_.end(), [](const auto& j) { return j->alone; });
}

bool JobSlots::AnyCpu() const {
  return std::any_of(running_.begin(), running_.end(), [](const auto& j) { return j->cpu; });
}

std::set<std::string> JobSlots::Ids() const {
  std::set<std::string> ids;
  for (const auto& job : running_) ids.insert(job->id);
  return ids;
}

bool JobStalled(uint64_t now_ms, uint64_t alive_ms, uint64_t stall_ms) {
  return alive_ms <= now_ms && now_ms - alive_ms >= stall_ms;
}

std::vector<std::string> JobSlots::StopStalled(uint64_t stall_ms) {
  std::vector<std::string> stopped;
  for (const auto& job : running_) {
    const uint64_t alive = job->alive_ms.load();
    if (job->ended.load() || job->stalled.load() || !JobStalled(MonotonicMs(), alive, stall_ms)) {
      continue;
    }
    job->stalled.store(true);
    job->stop.store(true);
    stopped.push_back(job->id);
  }
  return stopped;
}

std::vector<uint64_t> JobSlots::AliveTimes() const {
  std::vector<uint64_t> times;
  for (const auto& job : running_) {
    if (!job->ended.load()) times.push_back(job->alive_ms.load());
  }
  return times;
}

}  // namespace framemill
