// The worker's allocator for CPU tensors (worker/batch/cpu_allocator.h): installed as LibTorch's
// CPU allocator, it hands a freed block of the same size out again, so that a loop of the same
// tensors stops page-faulting, and it gives memory back when asked.
#include "doctest_with_torch.h"

#include <sys/resource.h>

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "worker/batch/cpu_allocator.h"

using namespace framemill;

namespace {

long MinorFaults() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

// A [8, 3, 480, 480] float batch: 22 MB, what a CPU worker converts each batch.
torch::Tensor Batch() { return torch::rand({8, 3, 480, 480}); }

}  // namespace

TEST_CASE("cpu allocator: LibTorch's CPU tensors come from the cache and reuse freed blocks") {
  InstallCachingCpuAllocator();
  REQUIRE(CachingCpuAllocatorInstalled());
  const bool has_raw_interface = c10::GetCPUAllocator()->raw_deleter() != nullptr;
  CHECK(has_raw_interface);
  ReleaseCachedCpuMemory();

  const CpuAllocatorStats before = GetCpuAllocatorStats();
  const void* first = nullptr;
  {
    torch::Tensor t = torch::empty({1024, 1024}, torch::kFloat32);  // 4 MiB
    first = t.data_ptr();
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    CHECK(GetCpuAllocatorStats().live_bytes >= before.live_bytes + 4 * 1024 * 1024);
  }
  CHECK(GetCpuAllocatorStats().cached_bytes == before.cached_bytes + 4 * 1024 * 1024);
  {
    // The same size again, and a size that rounds up to the same pages: the freed block.
    torch::Tensor t = torch::empty({1024, 1024}, torch::kFloat32);
    CHECK(t.data_ptr() == first);
  }
  {
    torch::Tensor t = torch::empty({1024 * 1024 - 3}, torch::kFloat32);
    CHECK(t.data_ptr() == first);
  }
  {
    // A request up to a quarter smaller (a chunk's short last batch) takes the kept block too.
    torch::Tensor t = torch::empty({900 * 1024}, torch::kFloat32);
    CHECK(t.data_ptr() == first);
  }
  {
    // A much smaller one does not: that block stays kept for its own size.
    torch::Tensor t = torch::empty({700 * 1024}, torch::kFloat32);
    CHECK(t.data_ptr() != first);
  }
  const CpuAllocatorStats after = GetCpuAllocatorStats();
  CHECK(after.allocations == before.allocations + 5);
  CHECK(after.reused == before.reused + 3);

  // Small tensors are the C library's, and not counted.
  { torch::Tensor small = torch::empty({16}, torch::kFloat32); }
  CHECK(GetCpuAllocatorStats().allocations == after.allocations);

  ReleaseCachedCpuMemory();
  CHECK(GetCpuAllocatorStats().cached_bytes == 0);
}

TEST_CASE("cpu allocator: after a chunk, blocks that chunk did not use go back") {
  InstallCachingCpuAllocator();
  ReleaseCachedCpuMemory();
  // Chunk 1 uses a 4 MiB and a 2 MiB block, one after the other: both are kept, and a request of
  // a third size does not take them away.
  { torch::Tensor a = torch::empty({4 * 1024 * 1024}, torch::kUInt8); }
  { torch::Tensor b = torch::empty({2 * 1024 * 1024}, torch::kUInt8); }
  { torch::Tensor c = torch::empty({3 * 1024 * 1024}, torch::kUInt8); }
  CHECK(GetCpuAllocatorStats().cached_bytes == 9 * 1024 * 1024);
  ReleaseIdleCpuBlocks();
  CHECK(GetCpuAllocatorStats().cached_bytes == 9 * 1024 * 1024);
  // Chunk 2 (another geometry) uses only the 2 MiB size: at its end the others go back.
  const std::uint64_t reused = GetCpuAllocatorStats().reused;
  { torch::Tensor b = torch::empty({2 * 1024 * 1024}, torch::kUInt8); }
  CHECK(GetCpuAllocatorStats().reused == reused + 1);
  ReleaseIdleCpuBlocks();
  CHECK(GetCpuAllocatorStats().cached_bytes == 2 * 1024 * 1024);
  // A chunk that uses nothing: the 2 MiB block goes too.
  ReleaseIdleCpuBlocks();
  CHECK(GetCpuAllocatorStats().cached_bytes == 0);
}

TEST_CASE("cpu allocator: the raw interface that LibTorch's kernels use for scratch space") {
  InstallCachingCpuAllocator();
  c10::Allocator* alloc = c10::GetCPUAllocator();
  void* p = alloc->raw_allocate(1 << 20);
  REQUIRE(p != nullptr);
  static_cast<char*>(p)[(1 << 20) - 1] = 1;
  alloc->raw_deallocate(p);
  void* q = alloc->raw_allocate(1 << 20);
  CHECK(q == p);
  alloc->raw_deallocate(q);
  ReleaseCachedCpuMemory();
}

TEST_CASE("cpu allocator: a worker's batch loop stops page-faulting once warm") {
  // What it fixes: without the cache, each batch's new tensors land on fresh heap pages (glibc's
  // memalign cannot reuse a freed chunk of the same size), about 5,000 faults per tensor at
  // first and hundreds per iteration for good.
  InstallCachingCpuAllocator();
  ReleaseCachedCpuMemory();
  torch::Tensor in = Batch();
  for (int i = 0; i < 3; ++i) {
    torch::Tensor out = torch::clamp(in * 2.0f, 0.0f, 1.0f).contiguous();
  }
  const long faults0 = MinorFaults();
  const int iterations = 40;
  for (int i = 0; i < iterations; ++i) {
    torch::Tensor out = torch::clamp(in * 2.0f, 0.0f, 1.0f).contiguous();
    CHECK(out.size(0) == 8);
  }
  const long faults = MinorFaults() - faults0;
  MESSAGE("minor faults over " << iterations << " warm iterations: " << faults);
  // Each iteration's two 22 MB tensors are 10,800 pages; a reused block faults none of them.
  CHECK(faults < iterations * 20);
  ReleaseCachedCpuMemory();
}

TEST_CASE("cpu allocator: kept blocks add up to no more than the peak in use") {
  InstallCachingCpuAllocator();
  ReleaseCachedCpuMemory();
  const std::size_t peak = GetCpuAllocatorStats().peak_live_bytes;
  const std::size_t floor_bytes = std::size_t{256} << 20;
  const std::size_t limit = std::max(peak, floor_bytes);
  // Sizes that never repeat, one after another, each freed at once (as face crops can be): the
  // cache keeps them until the limit, then hands the rest back.
  std::size_t asked = 0;
  for (int i = 0; asked < limit + (std::size_t{64} << 20); ++i) {
    const int64_t n = (int64_t{1} << 20) + i * 4096 * 64;
    { torch::Tensor t = torch::empty({n}, torch::kUInt8); }
    asked += static_cast<std::size_t>(n);
  }
  const CpuAllocatorStats st = GetCpuAllocatorStats();
  CHECK(st.cached_bytes <= std::max(st.peak_live_bytes, floor_bytes));
  CHECK(GetCpuAllocatorStats().cached_bytes > 0);
  ReleaseCachedCpuMemory();
}

TEST_CASE("cpu allocator: out of memory is LibTorch's out-of-memory error, and counts nothing") {
  // The worker answers it with a smaller batch or tiles (worker/model/frame_model.cpp's ModelRaised
  // reads the type, and the text through TorchScript's rethrow), not as a broken model.
  InstallCachingCpuAllocator();
  const CpuAllocatorStats before = GetCpuAllocatorStats();
  bool oom = false;
  std::string what;
  try {
    // 32 PiB: more than a process can address, so refused even where the kernel overcommits
    // (64 TiB was granted on a GPU machine).
    torch::Tensor t = torch::empty({int64_t{1} << 55}, torch::kUInt8);
  } catch (const c10::OutOfMemoryError& e) {
    oom = true;
    what = e.what();
  }
  CHECK(oom);
  CHECK(what.find("can't allocate memory") != std::string::npos);
  const CpuAllocatorStats after = GetCpuAllocatorStats();
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.peak_live_bytes == before.peak_live_bytes);
}
