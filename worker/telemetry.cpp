#include "worker/telemetry.h"

#include <cstdio>
#include <unistd.h>

#include "common/clock.h"
#include "common/proc_status.h"

#include "worker/nvml_memory.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace framemill {

uint64_t CurrentRssBytes() { return ReadProcMemory().private_bytes; }

std::string PciBusId(const torch::Device& device) {
#ifdef FRAMEMILL_WITH_CUDA
  if (device.is_cuda()) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device.index());
    char id[32];
    std::snprintf(id, sizeof(id), "%08x:%02x:%02x.0", p->pciDomainID, p->pciBusID, p->pciDeviceID);
    return id;
  }
#else
  (void)device;
#endif
  return "";
}

void PublishTelemetry(WorkerTelemetry& t, const torch::Device& device, const NvmlMemory* nvml) {
  t.rss_bytes.store(CurrentRssBytes(), std::memory_order_relaxed);
#ifdef FRAMEMILL_WITH_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    t.gpu_allocated_bytes.store(stats.allocated_bytes[0].current, std::memory_order_relaxed);
    t.gpu_reserved_bytes.store(stats.reserved_bytes[0].current, std::memory_order_relaxed);
    t.gpu_peak_allocated_bytes.store(stats.allocated_bytes[0].peak, std::memory_order_relaxed);
    t.gpu_peak_reserved_bytes.store(stats.reserved_bytes[0].peak, std::memory_order_relaxed);
  }
#else
  (void)device;
#endif
  if (nvml != nullptr && nvml->available()) {
    t.gpu_process_bytes.store(nvml->ProcessBytes(), std::memory_order_relaxed);
  }
  t.heartbeat_ms.store(MonotonicMs(), std::memory_order_release);
}

}  // namespace framemill
