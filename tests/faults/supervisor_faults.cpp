#include "tests/faults/supervisor_faults.h"

#include <csignal>
#include <cstdlib>

namespace framemill {
namespace {

// The number N in the environment variable `name`, or -1 when unset or not a number.
int64_t FaultNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : -1;
}

}  // namespace

SupervisorFaults SupervisorFaults::FromEnvironment() {
  SupervisorFaults f;
  f.kill_decoder_at_frame = FaultNumber("FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME");
  f.term_decoder_at_frame = FaultNumber("FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME");
  f.kill_encoder_at_segment = FaultNumber("FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT");
  const char* abort_on = std::getenv("FRAMEMILL_FAULT_SUPERVISOR_ABORT");
  if (abort_on != nullptr) f.abort_on_job = abort_on;
  const char* stand_in = std::getenv("FRAMEMILL_FAULT_ENGINE_STAND_IN");
  if (stand_in != nullptr) f.engine_stand_in = stand_in;
  return f;
}

int SupervisorFaultHooks::DecoderSignalAt(int64_t frame) {
  if (frame != faults_.kill_decoder_at_frame && frame != faults_.term_decoder_at_frame) return 0;
  if (decoder_fired_.exchange(true)) return 0;
  return frame == faults_.kill_decoder_at_frame ? SIGKILL : SIGTERM;
}

bool SupervisorFaultHooks::KillEncoderAt(int64_t segment) {
  return segment == faults_.kill_encoder_at_segment && !encoder_fired_.exchange(true);
}

void SupervisorFaultHooks::OnJobProgress(const std::string& job_id) {
  if (!faults_.abort_on_job.empty() && job_id.find(faults_.abort_on_job) != std::string::npos) {
    std::abort();
  }
}

}  // namespace framemill
