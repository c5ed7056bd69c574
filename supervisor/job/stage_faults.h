// The supervisor's test faults in the job's stages, in one place (the worker's are in tests/faults/,
// behind worker/worker_hooks.h): read from the environment once, each firing once per process so
// that a retry succeeds. Never set in production.
//   FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME=N  the decoder is killed (SIGKILL) before frame N
//   FRAMEMILL_FAULT_TERM_DECODER_AT_FRAME=N  the decoder exits with an error (SIGTERM) there
//   FRAMEMILL_FAULT_KILL_ENCODER_AT_SEGMENT=N  the encoder of segment N is killed
#pragma once

#include <cstdint>

namespace framemill {

// The signal to send the decoder before frame `frame` (SIGKILL or SIGTERM), once; 0 for none.
int DecoderFaultAt(int64_t frame);
// Whether to kill the encoder of segment `segment` now (once).
bool EncoderFaultAt(int64_t segment);

}  // namespace framemill
