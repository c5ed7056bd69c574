// Memory figures a worker reports after every batch.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "common/shm_protocol.h"

namespace framemill {

// Current resident memory of this process in bytes, not the peak, and without the shared
// frame arena (RssAnon + RssFile).
uint64_t CurrentRssBytes();

// Publishes heartbeat, RSS and (on CUDA builds, for a CUDA device) the caching allocator's
// figures into `t`.
void PublishTelemetry(WorkerTelemetry& t, const torch::Device& device);

}  // namespace framemill
