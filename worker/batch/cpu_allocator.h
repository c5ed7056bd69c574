// The worker's allocator for LibTorch's CPU tensors: freed blocks are kept by size and handed
// out again, so that a batch reuses the pages of the batch before it.
//
// Why: LibTorch allocates CPU tensors with posix_memalign(64, n). glibc's memalign asks its heap
// for n plus the alignment, so it cannot place a request in a freed chunk of exactly n bytes. A
// tensor freed and allocated again at the same size (every batch allocates the same ones) lands
// on fresh pages: a CPU worker page-faulted about 700 times a frame, and its RSS grew to ten
// times its live tensors (BENCHMARKS.md, "The test suite on 2 cores").
#pragma once

#include <cstddef>
#include <cstdint>

namespace framemill {

struct CpuAllocatorStats {
  std::uint64_t allocations = 0;  // requests of at least the cached size
  std::uint64_t reused = 0;       // of those, served from a kept block
  std::size_t cached_bytes = 0;   // kept now, free for reuse
  std::size_t live_bytes = 0;     // handed out now (cached sizes only)
  std::size_t peak_live_bytes = 0;
};

// Makes the caching allocator LibTorch's CPU allocator for this process. Call it once, before
// the first tensor; later calls do nothing.
void InstallCachingCpuAllocator();

// Whether InstallCachingCpuAllocator took effect.
bool CachingCpuAllocatorInstalled();

// Gives every kept block back to the C library (after the model's load, whose CPU copies of the
// weights will not be asked for again), and starts the peak in use again from what is in use now
// (the load's peak would otherwise set the limit on kept blocks for the worker's life).
void ReleaseCachedCpuMemory();

// Gives back the kept blocks that were not asked for since the previous call. The worker calls it
// after each chunk: a block no batch of that chunk took belongs to a geometry or a batch size of
// before.
void ReleaseIdleCpuBlocks();

CpuAllocatorStats GetCpuAllocatorStats();

// Blocks smaller than this go straight to the C library, whose bins serve them well.
inline constexpr std::size_t kCachedCpuBlockMin = 256 * 1024;

}  // namespace framemill
