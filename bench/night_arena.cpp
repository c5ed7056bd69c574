#include "bench/night_arena.h"

#include <algorithm>

#include "common/shm_protocol.h"

namespace framemill::night {

int64_t NightArenaMiB(const std::vector<std::pair<int, int>>& sizes, int chunk_frames) {
  int64_t mib = 32;
  for (const auto& [w, h] : sizes) {
    ArenaGeometry shape;
    shape.chunk_frames = static_cast<uint32_t>(chunk_frames);
    shape.in_width = static_cast<uint32_t>(w);
    shape.in_height = static_cast<uint32_t>(h);
    shape.out_width = static_cast<uint32_t>(w * kNightMaxScale);
    shape.out_height = static_cast<uint32_t>(h * kNightMaxScale);
    shape.in_format = FrameFormat::kRgb24;
    shape.out_format = FrameFormat::kRgb24;
    const uint64_t slot = AlignUp(shape.FacesOffset() + shape.FacesBytes(), kSlotAlignment);
    const uint64_t need = (slot * kNightArenaSlots + (uint64_t{1} << 20) - 1) >> 20;
    mib = std::max<int64_t>(mib, static_cast<int64_t>(need));
  }
  return mib;
}

int NightShmMiB(int64_t arena_mb) { return static_cast<int>(std::max<int64_t>(96, 3 * arena_mb)); }

}  // namespace framemill::night
