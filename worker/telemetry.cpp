#include "worker/telemetry.h"

#include <cstdio>
#include <unistd.h>

#include "common/log.h"

#ifdef FRAMEMILL_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace framemill {

uint64_t CurrentRssBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void PublishTelemetry(WorkerTelemetry& t, const torch::Device& device) {
  t.rss_bytes.store(CurrentRssBytes(), std::memory_order_relaxed);
#ifdef FRAMEMILL_WITH_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    t.gpu_allocated_bytes.store(stats.allocated_bytes[0].current, std::memory_order_relaxed);
    t.gpu_reserved_bytes.store(stats.reserved_bytes[0].current, std::memory_order_relaxed);
    t.gpu_peak_reserved_bytes.store(stats.reserved_bytes[0].peak, std::memory_order_relaxed);
  }
#else
  (void)device;
#endif
  t.heartbeat_ms.store(MonotonicMs(), std::memory_order_release);
}

}  // namespace framemill
