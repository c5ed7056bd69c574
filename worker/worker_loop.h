// The worker's life: attach to the supervisor's control block, load the model once, report its
// output size, then take chunk requests until told to stop or the supervisor is gone.
// It holds no job state that matters: killed at any instant, it loses only its chunk in flight,
// which the supervisor sends again.
#pragma once

#include <string>

#include "common/config.h"
#include "common/shm_protocol.h"
#include "common/tile_setting.h"

namespace framemill {

struct WorkerArgs {
  std::string control;      // full path of this worker's control block (shared memory)
  int channel = -1;         // the supervisor's channel number, for log lines
  int wake_fd = -1;         // inherited socket: write a byte to wake the supervisor; readable when
                            // the supervisor has posted a request
  int model_fd = -1;        // the model file, open read-only (read with pread; stays open)
  std::string model_label;  // the model's name, for messages only (never opened)
  DeviceSetting device;     // common/config.h
  Precision precision = Precision::kFp32;                     // common/config.h
  ModelOptimization optimization = ModelOptimization::kAuto;  // common/config.h
  TileSetting tile;           // common/tile_setting.h: tiles and out-of-memory fallbacks
  // The input the model is run on once at load to learn its output size: a kProbeSize square; in
  // face mode the job's face_size (a face model may take no other size); for a package made for
  // one shape that shape. A probe batch above 1 is such a package's fixed batch: every batch is
  // then padded up to the job's batch (worker/batch/batch_runner.h).
  int probe_width = static_cast<int>(kProbeSize), probe_height = static_cast<int>(kProbeSize);
  int probe_batch = 1;
  bool cudnn_autotune = false;  // CUDA: cuDNN's algorithm search per input shape (job key)
  std::string sandbox;        // the sandbox in place (worker/sandbox/sandbox.h), for the supervisor
  std::string sandbox_error;  // a required sandbox that failed: reported, then exit
  uint64_t main_ms = 0;       // MonotonicMs() as main() began: the start's log splits its time
};

// Exit codes of framemill-worker.
inline constexpr int kWorkerExitOk = 0;
inline constexpr int kWorkerExitUsage = 2;
inline constexpr int kWorkerExitAttach = 3;    // cannot attach (version mismatch, no such object)
inline constexpr int kWorkerExitModel = 4;     // model failed to load or broke its contract
inline constexpr int kWorkerExitOrphaned = 5;  // the supervisor is gone
inline constexpr int kWorkerExitSandbox = 6;   // worker_sandbox required, and not possible here

class WorkerHooks;  // worker/worker_hooks.h

// The worker's life as above; `hooks`: the tests' seam (WorkerHooks itself in the product).
int RunWorker(const WorkerArgs& args, WorkerHooks& hooks);

}  // namespace framemill
