#include "worker/arena_pages.h"

#include <cstdint>
#include <string>

#ifdef FRAMEMILL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "common/clock.h"
#include "common/log_lines.h"

namespace framemill {

void ArenaPages::Lock(const SharedMemory& shm, bool wanted, bool cuda) {
#ifdef FRAMEMILL_WITH_CUDA
  if (!cuda || arena_registered_ || page_lock_failed_) return;
  if (!wanted) {
    if (!staged_logged_) {
      LogInfo("worker " + std::to_string(channel_) + ": arena of " +
              std::to_string(shm.size() >> 20) +
              " MiB not page-locked (the job's page_lock_arena): copies staged");
    }
    staged_logged_ = true;
    return;
  }
  const uint64_t t0 = MonotonicMs();
  cudaError_t e = cudaHostRegister(shm.data(), shm.size(), cudaHostRegisterDefault);
  if (e == cudaSuccess) {
    arena_registered_ = true;
    registered_ptr_ = shm.data();
    LogInfo("worker " + std::to_string(channel_) + ": arena of " +
            std::to_string(shm.size() >> 20) + " MiB page-locked in " +
            std::to_string(MonotonicMs() - t0) + " ms");
  } else {
    (void)cudaGetLastError();  // clear it: the copies still work, staged
    page_lock_failed_ = true;   // not tried again for this arena
    LogWarn("worker " + std::to_string(channel_) + ": cudaHostRegister of the arena failed (" +
            cudaGetErrorString(e) + "); copies staged");
  }
#else
  (void)shm;
  (void)wanted;
  (void)cuda;
#endif
}

void ArenaPages::Unregister() {
#ifdef FRAMEMILL_WITH_CUDA
  if (registered_ptr_ != nullptr) cudaHostUnregister(registered_ptr_);
#endif
  registered_ptr_ = nullptr;
  arena_registered_ = false;
}

}  // namespace framemill
