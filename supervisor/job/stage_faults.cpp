#include "supervisor/job/stage_faults.h"

#include <atomic>
#include <csignal>
#include <cstdlib>

#include "common/env_knobs.h"

namespace framemill {
namespace {

// The number N in the environment variable `knob`, or -1 when unset.
int64_t FaultNumber(EnvKnob knob) {
  const std::optional<std::string>& s = Knob(knob);
  if (!s || s->empty()) return -1;
  const char* v = s->c_str();
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && n >= 0 ? n : -1;
}

std::atomic<bool> g_decoder_fired{false};
std::atomic<bool> g_encoder_fired{false};

}  // namespace

int DecoderFaultAt(int64_t frame) {
  static const int64_t kill_at = FaultNumber(EnvKnob::kFaultKillDecoderAtFrame);
  static const int64_t term_at = FaultNumber(EnvKnob::kFaultTermDecoderAtFrame);
  if (frame != kill_at && frame != term_at) return 0;
  if (g_decoder_fired.exchange(true)) return 0;
  return frame == kill_at ? SIGKILL : SIGTERM;
}

bool EncoderFaultAt(int64_t segment) {
  static const int64_t kill_segment = FaultNumber(EnvKnob::kFaultKillEncoderAtSegment);
  return segment == kill_segment && !g_encoder_fired.exchange(true);
}

}  // namespace framemill
