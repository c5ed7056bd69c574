// The supervisor's seam for tests: the points where a test build of `framemill` (tests/faults/,
// the program framemill-faults) may step into a job's life, as worker/worker_hooks.h is the
// worker's. The product's `framemill` installs SupervisorHooks itself, whose every hook does
// nothing: nothing in a job file, the config or the environment reaches a hook in the product.
//
// Installed once by the program's main (supervisor/cli/framemill_main.h) before any job starts;
// from then on the hooks are called from the stages' threads (the decoder's, the encoders', the
// service's jobs'), so an implementation is thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace framemill {

class SupervisorHooks {
 public:
  virtual ~SupervisorHooks() = default;

  // The decoder (job/decode_stage) is about to read source frame `frame`: the signal to send it
  // first (SIGKILL, SIGTERM), or 0 for none.
  virtual int DecoderSignalAt(int64_t frame) {
    (void)frame;
    return 0;
  }
  // The encoder of segment `segment` (job/encode_stage) has just been fed a chunk: true kills it.
  virtual bool KillEncoderAt(int64_t segment) {
    (void)segment;
    return false;
  }
  // The service's job `job_id` reports its progress (the service's JobProgressSink), on the
  // job's thread.
  virtual void OnJobProgress(const std::string& job_id) { (void)job_id; }
  // A job with model_optimization compile that finds no engine cached (engine_beside.h) is
  // offered this model file as its engine, at once and on any device, instead of a build: a
  // stand-in, so the workers' move to an engine runs where no engine can be built. "": none.
  virtual std::string EngineStandIn() { return ""; }
};

// The hooks installed (the product's, which do nothing, until InstallSupervisorHooks).
SupervisorHooks& InstalledSupervisorHooks();
// Installs `hooks` (not owned; it outlives every job), or the product's with nullptr. Called on
// the main thread before any other thread starts.
void InstallSupervisorHooks(SupervisorHooks* hooks);

}  // namespace framemill
