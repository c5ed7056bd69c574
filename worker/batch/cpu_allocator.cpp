#include "worker/batch/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <vector>

#include "common/mutex.h"

namespace framemill {
namespace {

// Every block starts with a header of one alignment unit, which says how large the block is
// (0: not kept on free). The data follows it, 64-byte aligned as LibTorch's own allocator
// gives it. A header instead of a table keeps the deleter a plain function of the data
// pointer, so the allocator's raw interface works too.
constexpr std::size_t kAlignment = 64;
constexpr std::size_t kPage = 4096;
// Kept blocks add up to at most the peak in use, or this much where that is less.
constexpr std::size_t kKeptBytesFloor = std::size_t{256} << 20;

struct BlockHeader {
  std::size_t cached_size;
};
static_assert(sizeof(BlockHeader) <= kAlignment);

BlockHeader* HeaderOf(void* data) {
  return reinterpret_cast<BlockHeader*>(static_cast<char*>(data) - kAlignment);
}

// The kept blocks by size. A request is served by a kept block that fits it (below) or by the C
// library. Nothing is given back while a chunk runs: a batch asks for its
// tensors in the same order every time, and giving back within it would only move the faults.
// After each chunk the worker gives back the blocks that chunk did not use (ReleaseIdleCpuBlocks):
// they belong to a geometry or batch size of before. glibc keeps that memory (the worker turns
// its trimming off) and serves later requests of other sizes from it, so the RSS stays at the
// largest a chunk has needed: a flat figure for the RSS recycle limit.
class BlockCache {
 public:
  void* Allocate(std::size_t n) {
    if (n == 0) return nullptr;
    const bool cached = n >= kCachedCpuBlockMin;
    const std::size_t size = cached ? (n + kPage - 1) / kPage * kPage : n;
    if (cached) {
      MutexLock lock(&mutex_);
      ++stats_.allocations;
      // The smallest kept block that holds the request, if it is at most a quarter larger (a
      // chunk's short last batch takes the full batch's blocks); of those of its size, the most
      // recently freed, whose pages are the likeliest to be in the CPU's cache.
      auto fit = free_.lower_bound(size);
      if (fit != free_.end() && fit->first <= size + size / 4) {
        const std::size_t block = fit->first;
        auto it = std::prev(free_.upper_bound(block));
        void* data = it->second.data;
        free_.erase(it);
        stats_.cached_bytes -= block;
        ++stats_.reused;
        NoteLive(block);
        return data;
      }
    }
    void* base = nullptr;
    // Out of memory says so as LibTorch's own allocator does, so that the worker takes it for
    // what it is (a smaller batch or tiles, worker/model/tiled_model.h) and not for a broken model.
    TORCH_CHECK_WITH(OutOfMemoryError, ::posix_memalign(&base, kAlignment, size + kAlignment) == 0,
                     "framemill's CPU allocator: can't allocate memory: you tried to allocate ", n,
                     " bytes");
    void* data = static_cast<char*>(base) + kAlignment;
    HeaderOf(data)->cached_size = cached ? size : 0;
    if (cached) {
      MutexLock lock(&mutex_);
      NoteLive(size);
    }
    return data;
  }

  void Free(void* data) {
    if (data == nullptr) return;
    const std::size_t size = HeaderOf(data)->cached_size;
    if (size == 0) {
      std::free(HeaderOf(data));
      return;
    }
    {
      MutexLock lock(&mutex_);
      stats_.live_bytes -= size;
      // Sizes that vary from frame to frame (face crops) could otherwise pile up within a chunk.
      if (stats_.cached_bytes + size <= std::max(stats_.peak_live_bytes, kKeptBytesFloor)) {
        free_.emplace(size, Block{data, generation_});
        stats_.cached_bytes += size;
        return;
      }
    }
    std::free(HeaderOf(data));
  }

  // Gives back the kept blocks freed before the current generation (all of them with
  // `everything`, which also starts the peak in use again from what is in use now), and starts
  // the next generation.
  void Release(bool everything) {
    std::vector<void*> blocks;
    {
      MutexLock lock(&mutex_);
      if (everything) stats_.peak_live_bytes = stats_.live_bytes;
      for (auto it = free_.begin(); it != free_.end();) {
        if (everything || it->second.generation < generation_) {
          blocks.push_back(it->second.data);
          stats_.cached_bytes -= it->first;
          it = free_.erase(it);
        } else {
          ++it;
        }
      }
      ++generation_;
    }
    for (void* data : blocks) std::free(HeaderOf(data));
  }

  CpuAllocatorStats Stats() {
    MutexLock lock(&mutex_);
    return stats_;
  }

 private:
  struct Block {
    void* data;
    std::uint64_t generation;  // when it was freed
  };

  void NoteLive(std::size_t size) REQUIRES(mutex_) {
    stats_.live_bytes += size;
    if (stats_.live_bytes > stats_.peak_live_bytes) stats_.peak_live_bytes = stats_.live_bytes;
  }

  Mutex mutex_;
  std::multimap<std::size_t, Block> free_ GUARDED_BY(mutex_);
  std::uint64_t generation_ GUARDED_BY(mutex_) = 0;
  CpuAllocatorStats stats_ GUARDED_BY(mutex_);
};

BlockCache& Cache() {
  // Never destroyed: tensors may be freed by static destructors after main() returns.
  static BlockCache* cache = new BlockCache();
  return *cache;
}

void DeleteBlock(void* data) { Cache().Free(data); }

// LibTorch changed this interface between the versions framemill builds with: Debian's 1.13 has
// a const allocate() and no copy_data(); 2.x has a non-const allocate() and a pure copy_data(),
// in later versions with a `sync` flag. Each form below overrides the one its LibTorch declares
// and is an unused overload in the others. `override` is left off for that reason.
struct CachingCpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(std::size_t n) const { return Make(n); }
  c10::DataPtr allocate(std::size_t n) { return Make(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    std::memcpy(dest, src, count);
  }
  void copy_data(void* dest, const void* src, std::size_t count, bool /*sync*/) const {
    std::memcpy(dest, src, count);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &DeleteBlock; }

  static c10::DataPtr Make(std::size_t n) {
    void* data = Cache().Allocate(n);
    return {data, data, &DeleteBlock, c10::Device(c10::DeviceType::CPU)};
  }
};

bool g_installed = false;

}  // namespace

void InstallCachingCpuAllocator() {
  if (g_installed) return;
  static CachingCpuAllocator* allocator = new CachingCpuAllocator();
  // Priority above the default allocator's registration, so that nothing set later at the
  // default priority takes its place.
  c10::SetCPUAllocator(allocator, /*priority=*/1);
  g_installed = c10::GetCPUAllocator() == allocator;
}

bool CachingCpuAllocatorInstalled() { return g_installed; }

void ReleaseCachedCpuMemory() { Cache().Release(/*everything=*/true); }

void ReleaseIdleCpuBlocks() { Cache().Release(/*everything=*/false); }

CpuAllocatorStats GetCpuAllocatorStats() { return Cache().Stats(); }

}  // namespace framemill
