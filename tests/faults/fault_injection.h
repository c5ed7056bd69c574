// The tests' faults, in framemill-worker-faults only (tests/faults/fault_worker.cpp): the product's
// worker through its seam (worker/worker_hooks.h), switched on by the environment variable
// FRAMEMILL_TEST_FAULT in the worker's environment. The product's framemill-worker reads no such
// variable; a test runs this program instead through the config key worker_binary.
//
//   FRAMEMILL_TEST_FAULT=crash@N          abort() when the worker reaches source frame N
//   FRAMEMILL_TEST_FAULT=hang@N           stop (no heartbeat, SIGTERM ignored) at frame N
//   FRAMEMILL_TEST_FAULT=exit:K@N         _exit(K) at frame N
//   FRAMEMILL_TEST_FAULT=scribble@N       at frame N, overwrite every byte of the worker's control
//                                         block and the arena's header page with garbage (random
//                                         bytes and 0xff), then carry on as if nothing happened:
//                                         a hostile worker, for the supervisor's checks
//   FRAMEMILL_TEST_FAULT=slowload:MS@0    sleep MS milliseconds after loading the model, before
//                                         reporting ready (the frame is not used: write 0): a
//                                         worker that is still loading when a short job ends
//   FRAMEMILL_TEST_FAULT=slowbatch:MS     sleep MS milliseconds before every batch, in every worker
//                                         (no frame: "@N" may be left out): a job that lasts
//                                         while workers come and go beside it
//   FRAMEMILL_TEST_FAULT=oom_over:MB      every model call whose input tensor is larger than MB MiB
//                                         raises the error CUDA's allocator raises when it runs
//                                         out (c10::OutOfMemoryError, "CUDA out of memory. ..."),
//                                         on any device: the worker's out-of-memory fallbacks
//                                         (worker/model/tiled_model.h) then run for real on the
//                                         CPU.
//                                         No frame: "@N" may be left out
//                                         (tests/faults/oom_fault_model.h)
//   ...,once=PATH                         only in the first worker to get there, of all the workers
//                                         started with it: each worker creates PATH (empty) before
//                                         its sandbox goes on and keeps it open; the first to reach
//                                         the fault appends a byte to it and fires. A non-empty
//                                         PATH says the fault fired (FaultFired,
//                                         tests/integration/fault_harness.h)
//
// Sandbox escapes: at the chunk that holds frame N the worker tries something its sandbox
// (worker/sandbox/sandbox.h) forbids. Refused, the chunk fails with a message naming the refusal
// ("... refused: Operation not permitted"); allowed (no sandbox), the worker logs that it escaped
// and goes on, so a job without a sandbox succeeds.
//
//   connect:PORT@N     a TCP connection to 127.0.0.1:PORT
//   socket@N           an AF_INET (UDP) socket
//   fork:MARKER@N      fork; the child writes MARKER and exits
//   exec:MARKER@N      execve /bin/sh, which writes MARKER (the worker is gone if it works)
//   memory@N           process_vm_readv on the supervisor
//   signal@N           kill(supervisor, 0): may the worker signal it at all?
//
// "Reaches frame N" means: the batch (for escapes: the chunk) about to run holds frame N.
//
// The sandbox's test switches, each "1" in the worker's environment (FaultHooks::AdjustSandbox):
//   FRAMEMILL_TEST_NO_LANDLOCK   Landlock is taken as absent, as on a kernel without it (ENOSYS)
//   FRAMEMILL_TEST_NO_MOUNT_NS   no private root is made ("FRAMEMILL_TEST_NO_MOUNT_NS is set")
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "worker/worker_hooks.h"

namespace framemill {

struct Fault {
  enum class Kind {
    kNone,
    kCrash,
    kHang,
    kExit,
    kScribble,   // overwrites the worker's shared memory (see BeforeBatch)
    kSlowLoad,   // sleeps before reporting ready (see BeforeReady)
    kSlowBatch,  // sleeps before every batch (see BeforeBatch)
    kOomOver,    // model calls over oom_over_mb MiB of input run out of memory (OomFaultModel)
    // Sandbox escapes.
    kConnect,
    kSocket,
    kFork,
    kExec,
    kMemory,
    kSignal,
  };
  Kind kind = Kind::kNone;
  int64_t frame = -1;
  int exit_code = 0;
  int port = 0;             // kConnect
  int delay_ms = 0;         // kSlowLoad, kSlowBatch
  int64_t oom_over_mb = 0;  // kOomOver
  std::string marker;       // kFork, kExec: the file the new process writes
  std::string once_path;

  bool IsEscape() const { return kind >= Kind::kConnect; }
};

inline constexpr const char* kFaultEnvVar = "FRAMEMILL_TEST_FAULT";

// Parses a spec as above; "" gives kNone.
Result<Fault> ParseFault(const std::string& spec);

// The worker's hooks (worker/worker_hooks.h) that inject `fault`. One per worker process; its
// hooks run on the worker's main thread (worker/worker_hooks.h).
class FaultHooks : public WorkerHooks {
 public:
  explicit FaultHooks(Fault fault) : fault_(std::move(fault)) {}
  ~FaultHooks() override;
  FaultHooks(const FaultHooks&) = delete;
  FaultHooks& operator=(const FaultHooks&) = delete;

  // With once=PATH: creates and opens PATH, kept through the sandbox.
  Result<std::vector<int>> BeforeSandbox() override;
  // FRAMEMILL_TEST_NO_LANDLOCK=1: Landlock is taken as absent (as on a kernel without it,
  // ENOSYS); FRAMEMILL_TEST_NO_MOUNT_NS=1: no private root is made.
  void AdjustSandbox(SandboxOptions& options) override;
  // kOomOver: the model wrapped in an OomFaultModel (tests/faults/oom_fault_model.h).
  std::unique_ptr<FrameModel> WrapModel(std::unique_ptr<FrameModel> model) override;
  // kSlowLoad: sleeps its delay.
  void BeforeReady() override;
  // Escapes: tries the escape when the chunk holds the fault's frame; an error when the sandbox
  // refused it, ok when it was let through.
  Status BeforeChunk(int64_t first, int64_t count) override;
  // kCrash, kHang, kExit: fires when the batch holds the fault's frame. kScribble: overwrites
  // every span of `shared` with garbage (random bytes and 0xff), then carries on.
  void BeforeBatch(int64_t first, int64_t count, const std::vector<SharedSpan>& shared) override;

 private:
  // Is frame fault_.frame in [first, first + count), and (with once=PATH) the first time?
  bool Fires(int64_t first, int64_t count);
  // With once=PATH: is this the first time of all workers? Without: always.
  bool FirstTime();

  Fault fault_;
  int once_fd_ = -1;  // PATH of once=PATH, open for appending
};

}  // namespace framemill
