// Test-only fault injection, switched on by the environment variable FRAMEMILL_TEST_FAULT in the
// worker's environment (never by anything in a job file):
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
//   FRAMEMILL_TEST_FAULT=oom_over:MB      every model call whose input tensor is larger than MB MiB
//                                         raises the error CUDA's allocator raises when it runs
//                                         out (c10::OutOfMemoryError, "CUDA out of memory. ..."),
//                                         on any device: the worker's out-of-memory fallbacks
//                                         (worker/tiled_model.h) then run for real on the CPU.
//                                         No frame: "@N" may be left out (worker/oom_fault_model.h)
//   ...,once=PATH                         only if PATH does not exist; it is created first, so
//                                         the fault fires once across all workers of a job
//
// Sandbox escapes: at the chunk that holds frame N the worker tries something its sandbox
// (worker/sandbox.h) forbids. Refused, the chunk fails with a message naming the refusal
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
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

struct Fault {
  enum class Kind {
    kNone,
    kCrash,
    kHang,
    kExit,
    kScribble,  // overwrites the worker's shared memory (see MaybeScribble)
    kSlowLoad,  // sleeps before reporting ready (see MaybeDelayReady)
    kOomOver,   // model calls over oom_over_mb MiB of input run out of memory (OomFaultModel)
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
  int delay_ms = 0;         // kSlowLoad
  int64_t oom_over_mb = 0;  // kOomOver
  std::string marker;       // kFork, kExec: the file the new process writes
  std::string once_path;

  bool IsEscape() const { return kind >= Kind::kConnect; }
};

inline constexpr const char* kFaultEnvVar = "FRAMEMILL_TEST_FAULT";

// Parses a spec as above; "" gives kNone.
Result<Fault> ParseFault(const std::string& spec);

// Fires the fault if frame `fault.frame` is in [first, first + count). (kScribble: see below.)
void MaybeInjectFault(const Fault& fault, int64_t first, int64_t count);

// For a kSlowLoad fault (with once=PATH: in the one worker that creates PATH): sleeps its delay.
// Called after the model is loaded, before the worker reports ready.
void MaybeDelayReady(const Fault& fault);

// A span of shared memory a kScribble fault overwrites.
struct ScribbleRegion {
  void* data = nullptr;
  size_t bytes = 0;
};
// For a kScribble fault whose frame is in [first, first + count): overwrites every region with
// garbage and returns true. Otherwise does nothing and returns false.
bool MaybeScribble(const Fault& fault, int64_t first, int64_t count,
                   const std::vector<ScribbleRegion>& regions);
// Tries an escape fault if frame `fault.frame` is in [first, first + count): an error when the
// sandbox refused it, ok when it was let through (or no escape is due).
Status TryEscapeFault(const Fault& fault, int64_t first, int64_t count);

}  // namespace framemill
