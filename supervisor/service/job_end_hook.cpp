#include "supervisor/service/job_end_hook.h"

#include <chrono>
#include <thread>

#include <boost/process.hpp>

#include "common/clock.h"
#include "common/log.h"
#include "supervisor/process/child_fds.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace bp = boost::process;

Status RunJobEndHook(const JobEndHook& hook, const JobEnd& end) {
  if (hook.argv.empty()) return Status::Ok();
  const std::string& program = hook.argv.front();
  std::vector<std::string> args(hook.argv.begin() + 1, hook.argv.end());
  args.push_back(end.job_dir + "/result.json");
  bp::environment env = boost::this_process::environment();
  env["FRAMEMILL_JOB_ID"] = end.id;
  env["FRAMEMILL_JOB_STATE"] = Name(end.state);
  const std::string log = end.job_dir + "/on_job_end.log";
  bp::child child;
  try {
    child = bp::child(bp::exe = program, bp::args = args, env, bp::std_in.close(),
                      (bp::std_out & bp::std_err) > log, ChildFds({}));
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "on_job_end: cannot start " + program + ": " + e.what());
  }
  ReapOnExit reap(child);
  const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(hook.timeout_s * 1000.0);
  std::error_code ec;
  while (child.running(ec) && !ec) {
    if (MonotonicMs() >= deadline) {
      KillAndReap(child);
      return Status(StatusCode::kIo, "on_job_end: " + program + " still ran after " +
                                         std::to_string(hook.timeout_s) + " s: killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  child.wait(ec);
  CommandOutput exit;
  SetExitStatus(child.native_exit_code(), &exit);
  if (exit.exit_code == 0) return Status::Ok();
  return Status(StatusCode::kIo, "on_job_end: " + program + " ended with " + DescribeExit(exit) +
                                     ": " + LastLinesOfFile(log, 3));
}

JobEndHooks::JobEndHooks(JobEndHook hook, size_t max_waiting)
    : hook_(std::move(hook)), max_waiting_(max_waiting) {
  if (!hook_.argv.empty()) thread_ = std::thread([this] { Loop(); });
}

JobEndHooks::~JobEndHooks() {
  size_t left = 0;
  {
    MutexLock lock(&mu_);
    quit_ = true;
    left = waiting_.size();
    waiting_.clear();
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  if (left > 0) spdlog::warn("on_job_end: {} hooks not run: the service stopped first", left);
}

void JobEndHooks::Post(JobEnd end) {
  if (hook_.argv.empty()) return;
  {
    MutexLock lock(&mu_);
    if (waiting_.size() >= max_waiting_) {
      ++dropped_;
      spdlog::warn("job {}: on_job_end not run: {} hooks wait already", end.id, waiting_.size());
      return;
    }
    waiting_.push_back(std::move(end));
  }
  cv_.NotifyAll();
}

void JobEndHooks::WaitIdle() {
  MutexLock lock(&mu_);
  while (!waiting_.empty() || running_) cv_.Wait(&mu_);
}

int64_t JobEndHooks::dropped() const {
  MutexLock lock(&mu_);
  return dropped_;
}

void JobEndHooks::Loop() {
  for (;;) {
    JobEnd end;
    {
      MutexLock lock(&mu_);
      running_ = false;
      cv_.NotifyAll();  // WaitIdle
      while (waiting_.empty() && !quit_) cv_.Wait(&mu_);
      if (quit_) return;
      end = std::move(waiting_.front());
      waiting_.pop_front();
      running_ = true;
    }
    Status s = RunJobEndHook(hook_, end);
    if (!s.ok()) spdlog::warn("job {}: {}", end.id, s.message());
  }
}

}  // namespace framemill
