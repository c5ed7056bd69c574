// Memory figures a worker reports after every batch.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "common/shm_protocol.h"

namespace framemill {

// Current resident set size of this process in bytes (/proc/self/statm), not the peak.
uint64_t CurrentRssBytes();

// Publishes heartbeat, RSS and (on CUDA builds, for a CUDA device) the caching allocator's
// figures into `t`.
void PublishTelemetry(WorkerTelemetry& t, const torch::Device& device);

}  // namespace framemill
