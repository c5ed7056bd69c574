// The worker's life: attach to the supervisor's control block, load the model once, report its
// output size, then take chunk requests until told to stop or the supervisor is gone.
// It holds no job state that matters: killed at any instant, it loses only its chunk in flight,
// which the supervisor sends again.
#pragma once

#include <string>

namespace framemill {

struct WorkerArgs {
  std::string control;  // full path of this worker's control block (shared memory)
  int channel = -1;     // the supervisor's channel number, for log lines
  int wake_fd = -1;     // inherited socket: write a byte to wake the supervisor; readable when
                        // the supervisor has posted a request
  std::string model;
  std::string device;
  std::string precision = "fp32";  // fp32 | fp16 | bf16
};

// Exit codes of framemill-worker.
inline constexpr int kWorkerExitOk = 0;
inline constexpr int kWorkerExitUsage = 2;
inline constexpr int kWorkerExitAttach = 3;    // cannot attach (version mismatch, no such object)
inline constexpr int kWorkerExitModel = 4;     // model failed to load or broke its contract
inline constexpr int kWorkerExitOrphaned = 5;  // the supervisor is gone

int RunWorker(const WorkerArgs& args);

}  // namespace framemill
