#include "supervisor/workers/spawn_backoff.h"

namespace framemill {

std::optional<uint64_t> SpawnBackoff::Failed(uint64_t now_ms) {
  if (++failures_ >= kSpawnTries) return std::nullopt;
  const uint64_t wait_ms = 1000ull << (failures_ - 1);
  retry_ms_ = now_ms + wait_ms;
  return wait_ms;
}

}  // namespace framemill
