// Memory figures a worker reports after every batch.
#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "common/shm_protocol.h"

namespace framemill {

// Current resident memory of this process in bytes, not the peak, and without the shared
// frame arena (RssAnon + RssFile).
uint64_t CurrentRssBytes();

class NvmlMemory;

// Publishes heartbeat, RSS and (on CUDA builds, for a CUDA device) the caching allocator's
// figures and, when `nvml` is available, the driver's count of this process's GPU memory.
void PublishTelemetry(WorkerTelemetry& t, const torch::Device& device,
                      const NvmlMemory* nvml = nullptr);

// The PCI bus id of a CUDA device, as NVML wants it; "" for the CPU or a build without CUDA.
std::string PciBusId(const torch::Device& device);

}  // namespace framemill
