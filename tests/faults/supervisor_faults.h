// The tests' faults in the supervisor: the product's `framemill` through its seam
// (supervisor/job/supervisor_hooks.h), in framemill-faults (tests/faults/fault_supervisor.cpp,
// which reads them from its environment) and in the integration tests' own process. The
// product's `framemill` reads none of these variables; a test runs framemill-faults instead
// (tests/integration/harness.h picks it when a run's environment names one).
//
//   FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME=N    the decoder is killed (SIGKILL) before frame N
//   FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME=N    the decoder exits with an error (SIGTERM) there
//   FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT=N  the encoder of segment N is killed
//   FRAMEMILL_FAULT_SUPERVISOR_ABORT=TEXT      the supervisor abort()s at the progress report of
//                                              a service job whose id contains TEXT, as a crash
//                                              in the job's handling would
//   FRAMEMILL_FAULT_ENGINE_STAND_IN=PATH       a job with model_optimization compile and no
//                                              engine cached is offered the model file PATH as
//                                              its compiled engine, at once, on any device
//
// The decoder's and the encoder's fire once per process, so that a retry succeeds.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "supervisor/job/supervisor_hooks.h"

namespace framemill {

struct SupervisorFaults {
  int64_t kill_decoder_at_frame = -1;  // -1: none
  int64_t term_decoder_at_frame = -1;
  int64_t kill_encoder_at_segment = -1;
  std::string abort_on_job;  // "": none
  std::string engine_stand_in;  // "": none

  // The faults the environment names (the variables above); a malformed number is none.
  static SupervisorFaults FromEnvironment();
};

// The hooks that inject `faults`; thread-safe, as the seam asks.
class SupervisorFaultHooks : public SupervisorHooks {
 public:
  explicit SupervisorFaultHooks(SupervisorFaults faults) : faults_(std::move(faults)) {}

  int DecoderSignalAt(int64_t frame) override;
  bool KillEncoderAt(int64_t segment) override;
  void OnJobProgress(const std::string& job_id) override;
  std::string EngineStandIn() override { return faults_.engine_stand_in; }

 private:
  const SupervisorFaults faults_;
  std::atomic<bool> decoder_fired_{false};
  std::atomic<bool> encoder_fired_{false};
};

}  // namespace framemill
