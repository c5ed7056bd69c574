// The worker processes of one supervisor and the control block they share with it. This is the
// one place where workers are started, watched for exit, and stopped; what to do about an exit
// (retry, replace, give up) is the caller's policy.
//
// Thread safety: every method is called from the supervisor's dispatch thread only, except
// Wake(), which any thread may call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "common/status.h"

namespace framemill {

struct WorkerOptions {
  std::string worker_binary;  // framemill-worker
  std::string model;          // TorchScript file
  int model_fd = -1;  // open read-only descriptor of the checked model file (not owned); the pool keeps its own dup
  std::string device;         // auto | cpu | cuda | cuda:N
  std::string precision = "fp32";
  std::string log_level;
  std::string log_dir;             // each worker's stderr goes to log_dir/worker-<k>-<gen>.log
  std::string pytorch_alloc_conf;  // "" = inherit the environment as it is
};

// A worker process that has ended and been reaped.
struct WorkerExit {
  int channel = -1;
  int pid = 0;
  int exit_code = 0;  // valid when !signaled
  int signal = 0;     // valid when signaled
  bool signaled = false;
  uint64_t generation = 0;
  WorkerState last_state = WorkerState::kEmpty;
  std::string error;        // the worker's own account (channel error text), may be empty
  std::string stderr_tail;  // last lines the worker wrote to stderr

  std::string Describe() const;  // "exit code 3: <error>" / "killed by signal 9 (Killed)"
};

class WorkerPool {
 public:
  // Creates the control block with room for `channels` workers.
  static Result<std::unique_ptr<WorkerPool>> Create(const WorkerOptions& options, int channels);

  ~WorkerPool();  // kills and reaps every worker still running; removes the control block

  int channel_count() const { return channel_count_; }
  WorkerChannel& channel(int k) { return control_->channels[k]; }
  const std::string& control_name() const { return shm_.name(); }

  // Starts a worker on channel `k`, which must have no live process. The channel's rings and
  // state are reset first. The worker gets the next generation number (1, 2, ...). `gpu` >= 0
  // pins it to that GPU: it sees only that one (CUDA_VISIBLE_DEVICES) and runs on cuda:0.
  Status Spawn(int k, int gpu = -1);
  uint64_t Generation(int k) const;

  // Sends `signal` to the worker on channel k, if any.
  void Signal(int k, int signal);

  // Is a process running (not yet reaped) on channel k?
  bool Alive(int k) const;
  int Pid(int k) const;

  // Reaps every worker that has exited since the last call, without blocking.
  std::vector<WorkerExit> ReapExited();

  // Queues a request for worker k and wakes it. False when its ring is full.
  bool Send(int k, const ChunkRequest& request);

  // Blocks until something posts the supervisor's wake semaphore or `timeout_ms` passes.
  void WaitForWake(int timeout_ms);
  void Wake();

  // Asks every live worker to exit (kStop), waits up to `grace_ms`, then SIGKILLs the rest.
  void StopAll(int grace_ms);

 private:
  WorkerPool(const WorkerOptions& options, SharedMemory shm, int channels);
  struct Process;

  WorkerOptions options_;
  SharedMemory shm_;
  ControlHeader* control_;
  int channel_count_;
  std::vector<std::unique_ptr<Process>> processes_;  // by channel; null when none
  uint64_t generations_ = 0;
};

}  // namespace framemill
