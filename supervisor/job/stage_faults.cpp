#include "supervisor/job/stage_faults.h"

#include <atomic>
#include <csignal>
#include <cstdlib>

namespace framemill {
namespace {

// The number N in the environment variable `name`, or -1 when unset.
int64_t FaultNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : -1;
}

std::atomic<bool> g_decoder_fired{false};
std::atomic<bool> g_encoder_fired{false};

}  // namespace

int DecoderFaultAt(int64_t frame) {
  static const int64_t kill_at = FaultNumber("FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME");
  static const int64_t term_at = FaultNumber("FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME");
  if (frame != kill_at && frame != term_at) return 0;
  if (g_decoder_fired.exchange(true)) return 0;
  return frame == kill_at ? SIGKILL : SIGTERM;
}

bool EncoderFaultAt(int64_t segment) {
  static const int64_t kill_segment = FaultNumber("FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT");
  return segment == kill_segment && !g_encoder_fired.exchange(true);
}

}  // namespace framemill
